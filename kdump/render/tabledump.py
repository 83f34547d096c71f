"""The Rich-table view of ``kdump dump`` (``kdump.render.dump`` has the text and NDJSON ones)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from kdump.check.gaps import PartitionGaps
from kdump.decoders.views import PayloadView
from kdump.model import TIMESTAMP_TYPE_NAMES, compression_name
from kdump.render.escape import printable
from kdump.render.gaps import GapReporter
from kdump.storage.logdir import LogFile
from kdump.storage.record_reader import Item

# (name, justify, drop): on a narrow terminal the columns a reader of batches needs least go first
# (magic is the same on almost every batch; the position is in --format text and --json), the
# producer and the flags (transactional, control) last.
BATCH_COLUMNS = (("position", "right", 8), ("offsets", "right", 0), ("count", "right", 6), ("size", "right", 7),
                 ("magic", "right", 9), ("codec", "left", 5), ("max time (UTC)", "left", 4),
                 ("producer", "right", 2), ("flags", "left", 3), ("crc", "center", 0))
TIME_WIDTH = len("2023-11-14 22:13:20.100")


class TableDump(GapReporter):
    """Rich tables for a terminal: one per file, drawn in chunks so memory stays flat. The
    columns and their widths are chosen once per file (kdump.tables.FitTable) from the first
    chunk and from widths the file bounds in advance (its size, its base offset), so the rows
    of every chunk stay aligned."""

    CHUNK = 500

    def __init__(self, console, view: PayloadView, records: bool, data: bool,
                 gaps: PartitionGaps | None = None) -> None:
        self.console = console
        self.gaps = gaps            # kdump's gap report, with --records
        self.view = view
        self.records = records
        self.data = data
        self.rows: list[tuple] = []
        self._fit = None
        self._title = ""
        self._floor: list[int] | None = None
        self._ok, self._bad_crc = _styled("✓", "green"), _styled("✗ crc", "bold red")

    def begin_file(self, f: LogFile, view: PayloadView) -> None:
        self.view = view
        self._title = printable(f.path)
        self._fit = None
        self._side_cols: list[str] | None = None
        self._floor = _floor(f, self.records, self.data)
        self._begin_gaps(f)

    def _columns(self):
        from kdump.tables import Col

        if self._side_cols is not None:
            return [Col(c) for c in self._side_cols]
        if self.records:
            # Without --data only sizes, as DumpLogSegments' --deep-iteration shows.
            payload = (Col("key", fold=True), Col("value", fold=True), Col("headers", fold=True, drop=3)) \
                if self.data else (Col("key size", "right"), Col("value size", "right"), Col("headers", "right", 3))
            return [Col("offset", "right"), Col("time (UTC)", drop=1), *payload, Col("batch", "right", 2),
                    Col("ok", "center")]
        return [Col(n, j, d, fold=n == "flags") for n, j, d in BATCH_COLUMNS]

    def _flush(self) -> None:
        if not self.rows:
            return
        if self._fit is None:
            from kdump.tables import FitTable, title

            title(self.console, self._title)
            floor = self._floor if self._side_cols is None else None
            self._fit = FitTable(self.console, self._columns(), floor, box=None, pad_edge=False)
        self._fit.draw(self.rows)
        self.rows = []

    def item(self, f: LogFile, it: Item) -> None:
        b = it.batch
        ok = self._ok if b.crc_valid else self._bad_crc
        if self.records:
            self._gap_records(it.records)
            if it.records is None:
                self.rows.append(("", "", "", _styled(it.error.message if it.error else "", "red"), "",
                                  str(b.position), ok))
            for r in it.records or ():
                if r.control is not None:
                    value = _styled(r.control.type_name, "magenta")
                    key = ""
                    headers = ""
                elif not self.data:
                    key, value, headers = _size(r.key), _size(r.value), str(len(r.headers))
                else:
                    key, value = self.view.cells(r, 24 if self.view.plain else 60, 60 if self.view.plain else 400)
                if self.data:
                    headers = ", ".join(f"{printable(k.decode('utf-8', 'replace'))}={self.view.short(v, 16)}"
                                        for k, v in r.headers)
                self.rows.append((str(r.offset), _ts(r.timestamp, r.timestamp_type), key, value, headers,
                                  str(b.position), ok))
        else:
            flags = " ".join(x for x, on in (("txn", b.is_transactional), ("control", b.is_control),
                                              ("LogAppendTime", b.timestamp_type == 1)) if on)
            producer = "" if b.producer_id < 0 else f"{b.producer_id}/{b.producer_epoch}"
            offsets = f"{b.base_offset}–{b.last_offset}" if b.base_offset != b.last_offset else str(b.last_offset)
            self.rows.append((str(b.position), offsets, "" if b.count is None else str(b.count), str(b.size),
                              str(b.magic), compression_name(b.compression), _ts(b.max_timestamp, b.timestamp_type),
                              producer, flags, ok))
        if len(self.rows) >= self.CHUNK:
            self._flush()

    def slice(self, f: LogFile, it: Item, first: bool) -> None:
        """Records of a batch streamed a slice at a time: rows as for a whole batch."""
        self.item(f, it)

    def end_batch(self, f: LogFile, it: Item) -> None:
        """A streamed batch has ended: the error that stopped its records, as a row."""
        if it.error is not None:
            self.item(f, it._replace(records=None))

    def side(self, f: LogFile, rows, lines) -> None:
        rows = iter(rows)               # an iterator for snapshots and checkpoints
        first = next(rows, None)
        if first is None:
            self.console.print(_styled(printable(f.path), "bold") + ": (empty)", soft_wrap=True)
            return
        self._side_cols = list(first.keys())
        self._fit = None
        for row in itertools.chain((first,), rows):
            self.rows.append(tuple(_cell(row.get(c)) for c in self._side_cols))
            if len(self.rows) >= self.CHUNK:
                self._flush()
        self._flush()
        self._side_cols = None
        self._fit = None

    def end_file(self, f: LogFile, trailing: int) -> None:
        self._flush()
        if trailing > 0:
            self.console.print(f"{trailing} invalid bytes at the end of {printable(f.name)}", style="yellow")
        self._end_gaps()

    def finish(self) -> None:
        self._flush()


def _floor(f: LogFile, records: bool, data: bool) -> list[int] | None:
    """Widths this file's cells cannot exceed (bar an offset past base + size, after compaction):
    positions and sizes below its size, offsets below its base offset + size."""
    import os

    if f.kind not in ("log", "kraft_snapshot"):
        return None
    try:
        size = os.stat(f.path).st_size
    except OSError:
        return None
    pos = len(str(size))
    off = len(str((f.base_offset or 0) + size))
    if records:
        return [off, TIME_WIDTH, 0, 0, 0, pos, 0]
    return [pos, 2 * off + 1, 0, pos, 0, 0, TIME_WIDTH, 0, 0, 0]


def _size(data: bytes | None) -> str:
    return "∅" if data is None else str(len(data))


def _cell(v: Any) -> str:
    if v is None:
        return "∅"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _styled(s: str, style: str):
    """Rich text in one style (the table console prints no markup: data is never read as styles)."""
    from rich.text import Text

    return Text(s, style=style)


def _ts(ms: int, ts_type: int) -> str:
    if ms is None or ms < 0:
        return TIMESTAMP_TYPE_NAMES.get(ts_type, "") if ts_type < 0 else str(ms)
    import datetime as _dt

    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return str(ms)
