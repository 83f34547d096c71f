"""Renderers of ``kdump dump``: the same events drawn as text, NDJSON or Rich tables.

A renderer gets ``begin_file``, ``item`` (one batch with its records), ``side`` (the
rows of an index, checkpoint or metadata file) and ``end_file``; it only draws.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, TextIO

from kdump import _accel
from kdump.check.gaps import PartitionGaps, follow
from kdump.decoders.payload import PayloadView
from kdump.export import ndjson
from kdump.storage.logdir import LogFile
from kdump.model import TIMESTAMP_TYPE_NAMES, compression_name
from kdump.storage.reader import Item
from kdump.render import jsonout, text
from kdump.render.escape import printable
from kdump.render.lines import FLUSH_CHARS, FLUSH_LINES, ByteLines, Lines
from kdump.render.gaps import gap_summary

class TextDump:
    """kafka-dump-log.sh lines.

    With ``dls`` (its own command line, --files) the closing report lists every gap as
    Kafka's does, ``-1 is followed by <first offset>`` included; else kdump's gap report
    (``gaps``), as in the other views.
    """

    def __init__(self, stream: TextIO, view: PayloadView, records: bool, data: bool,
                 skip_metadata: bool = False, gaps: PartitionGaps | None = None, dls: bool = True) -> None:
        self.out = ByteLines(stream)
        self.view = view
        self.records = records
        self.data = data
        self.skip_metadata = skip_metadata
        self.dls = dls
        self.gaps = None if dls else gaps
        self.blocks: list[tuple[int, list[str]]] = []      # stderr blocks, printed after all files
        self._gaps: list[tuple[int, int]] = []
        self._follow: list[tuple[int, int]] | None = None
        self._last_offset = -1
        self._c_item = None
        self._c_mode = 0

    def begin_file(self, f: LogFile, view: PayloadView) -> None:
        self.view = view
        self._gaps = []
        self._follow = self._gaps if self.dls else None     # where DumpLogSegments' gaps go
        self._last_offset = -1
        # The C renderer (text.c_mode says which views it draws), chosen once per file.
        c = _accel.native()
        mode = text.c_mode(view, self.data, not self.skip_metadata)
        self._c_item = c.text_item if c is not None and mode is not None else None
        self._c_mode = mode
        if self.gaps is not None:
            self.gaps.begin_file(f)
        self.out.add(text.dumping_line(f.path))
        if f.kind in ("log", "kraft_snapshot"):
            start = text.start_line(f.path)
            if start is not None:
                self.out.add(start)

    def item(self, f: LogFile, it: Item) -> None:
        batch, records, _ = it
        if records is not None and self.gaps is not None:
            self.gaps.records(records)
        if self._c_item is not None:
            # (DumpLogSegments' gaps followed in C too; records None: nothing to follow)
            buf = self.out.buf
            last = self._c_item(buf, batch, records, self._c_mode, self._last_offset, self._follow)
            if last is not None:
                self._last_offset = last
                if len(buf) >= FLUSH_CHARS:
                    self.out.write()
                return
        if records is not None and self._follow is not None:
            self._last_offset = follow(records, self._last_offset, self._follow)
        for line in text.item_lines(batch, records, self.view, self.data, not self.skip_metadata):
            self.out.add(line)

    def side(self, f: LogFile, rows: list[dict[str, Any]], lines: list[str]) -> None:
        for line in lines:
            self.out.add(line)

    def end_file(self, f: LogFile, trailing: int) -> None:
        if trailing > 0:
            self.out.add(text.trailing_line(f.path, trailing))
        if self._gaps:
            self.blocks.append(text.non_consecutive_block(f.path, self._gaps))
            self._gaps = []
        if self.gaps is not None:
            self.gaps.end_file()

    def add_summary(self, blocks: list[tuple[int, list[str]]]) -> None:
        self.blocks.extend(blocks)

    @property
    def summary(self) -> list[tuple[int, list[str]]]:
        return self.blocks + gap_summary(self.gaps)

    def finish(self) -> None:
        self.out.flush()


class _GapReport:
    """kdump's own gap report (JSON and table views, with --records): fed per file, shown
    on stderr after all files."""

    gaps: PartitionGaps | None = None

    def _begin_gaps(self, f: LogFile) -> None:
        if self.gaps is not None:
            self.gaps.begin_file(f)

    def _gap_records(self, records) -> None:
        if records and self.gaps is not None:
            self.gaps.records(records)

    def _end_gaps(self) -> None:
        if self.gaps is not None:
            self.gaps.end_file()

    @property
    def summary(self) -> list[tuple[int, list[str]]]:
        return gap_summary(self.gaps)


class JsonDump(_GapReport):
    """NDJSON: one object per batch (or per side-file row)."""

    def __init__(self, stream: TextIO, view: PayloadView, gaps: PartitionGaps | None = None) -> None:
        self.out = Lines(stream)
        self.view = view
        self.gaps = gaps            # kdump's gap report, with --records
        self._file_json = "null"
        self._c_line = None
        self._c_encoding = -1

    def begin_file(self, f: LogFile, view: PayloadView) -> None:
        self.view = view
        self._file_json = ndjson.dumps(f.path)
        self._begin_gaps(f)
        # The C line writer, when this view lets it write lines (jsonout.batch_line's own test,
        # taken once per file instead of once per batch).
        encoding = jsonout.C_ENCODINGS.get(view.encoding)
        c = _accel.native()
        self._c_line = c.json_batch_line if c is not None and view.plain and encoding is not None else None
        self._c_encoding = encoding

    def item(self, f: LogFile, it: Item) -> None:
        batch, records, error = it
        self._gap_records(records)
        if records and ndjson.maybe_large(batch, records) and ndjson.payload_bytes(records) > ndjson.STREAM_ABOVE:
            return self._stream(f, it)
        line = None
        if error is None:
            if self._c_line is not None:
                line = self._c_line(self._file_json, batch, records, self._c_encoding)
            if line is None:
                line = ndjson.py_batch_line(self._file_json, batch, records, self.view)
        else:
            line = jsonout.batch_line(self._file_json, batch, records, self.view, error.message)
        # Lines.add, inline: this runs once per batch
        out = self.out
        out.buf.append(line)
        out.chars += len(line)
        if len(out.buf) >= FLUSH_LINES or out.chars >= FLUSH_CHARS:
            out.write()

    def _stream(self, f: LogFile, it: Item) -> None:
        """A batch too large for one string: written in pieces, straight to the stream."""
        batch, records, error = it
        self.out.write()
        write = self.out.stream.write
        for piece in ndjson.batch_pieces(self._file_json, batch, records, self.view,
                                         None if error is None else error.message):
            write(piece)
        write("\n")

    def side(self, f: LogFile, rows: list[dict[str, Any]], lines: list[str]) -> None:
        for row in rows:
            self.out.add(ndjson.dumps({"file": f.path, **row}))

    def end_file(self, f: LogFile, trailing: int) -> None:
        self._end_gaps()

    def finish(self) -> None:
        self.out.flush()


BATCH_COLUMNS = (("position", "right", 0), ("offsets", "right", 0), ("count", "right", 3), ("size", "right", 4),
                 ("magic", "right", 6), ("codec", "left", 5), ("max time (UTC)", "left", 2),
                 ("producer", "right", 7), ("flags", "left", 8), ("crc", "center", 0))
TIME_WIDTH = len("2023-11-14 22:13:20.100")


class TableDump(_GapReport):
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
                    key = self.view.short(r.key, 24, "key")
                    value = self.view.short(r.value, 60, "value")
                if self.data:
                    headers = ", ".join(f"{k.decode('utf-8', 'replace')}={self.view.short(v, 16)}"
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


def summary_lines(blocks: list[tuple[int, list[str]]]) -> list[str]:
    """DumpLogSegments' closing report for stderr: each kind of block in turn (blocks
    gathered from several renderers, in file order, give the same lines as from one)."""
    return [line for _, block in sorted(blocks, key=lambda b: b[0]) for line in block]
