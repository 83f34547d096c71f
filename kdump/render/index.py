"""Renderers of ``kdump index`` / ``kdump timeindex``: text, NDJSON and Rich tables.

The text view keeps DumpLogSegments' lines (``offset: <o> position: <p>``,
``timestamp: <ts> offset: <o>``, ``<file> is empty.``, ``<file> passed sanity check.``)
and adds kdump's own report lines after them (zero tail, verification, faults, notes).
A renderer only draws: the command fills a ``FileReport`` and hands it over.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TextIO

from kdump.export import ndjson
from kdump.model import Finding
from kdump.render.escape import printable
from kdump.render.line_buffer import Lines
from kdump.words import plural

TAIL_TEXT = "zero-filled preallocated tail from slot {start} (active segment or unclean shutdown): {slots} slots"

CONVENTIONS = {
    "index": {
        "last": "each batch's last offset (Kafka 2.0 and later)",
        "base": "each batch's base offset (Kafka before 2.0)",
        "either": "single-offset batches only: fits both the last-offset and the base-offset convention",
        "mixed": "some entries hold a batch's last offset, others its base offset",
        "other": "offsets inside their batches (neither base nor last)",
    },
    "timeindex": {
        "last": "the last offset of the batch holding each max timestamp (recovery, followers)",
        "record": "the record carrying each max timestamp (a leader's append path)",
        "either": "no entry tells the last-offset and record conventions apart",
        "mixed": "some entries hold the batch's last offset, others the record carrying the max timestamp",
    },
}


class FileReport:
    """What the command found for one index file; the renderers draw it."""

    __slots__ = ("path", "kind", "log", "status", "message", "size", "slots", "entries", "zero_tail", "empty",
                 "findings", "notes", "check", "sanity")

    def __init__(self, path: str, kind: str, log: str | None) -> None:
        self.path = path
        self.kind = kind                       # index | timeindex | txnindex
        self.log = log
        self.status = "ok"                     # ok | damaged | missing | unreadable
        self.message: str | None = None        # why missing / unreadable
        self.size: int | None = None
        self.slots: int | None = None
        self.entries: int | None = None
        self.zero_tail: tuple[int, int] | None = None   # (first slot, slot count)
        self.empty = False
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.check = None                      # IndexCheck when verified
        self.sanity: str | None = None         # passed | failed

    def to_dict(self) -> dict[str, Any]:
        check = self.check
        verify = None
        if check is not None:
            lo_hi = None if check.interval is None else {"min": check.interval[0], "max": check.interval[1]}
            verify = {"entries_checked": check.entries, "convention": check.convention, "interval_bytes": lo_hi,
                      "log_bytes": check.log_bytes, "log_size": check.log_size}
        return {"object": "file", "file": self.path, "kind": self.kind, "status": self.status, "log": self.log,
                "message": self.message, "size": self.size, "slots": self.slots, "entries": self.entries,
                "zero_tail": None if self.zero_tail is None else {"start_slot": self.zero_tail[0],
                                                                  "slots": self.zero_tail[1]},
                "sanity": self.sanity, "verify": verify, "notes": self.notes,
                "findings": [f.to_dict() for f in self.findings]}


def entry_line(kind: str, e) -> str:
    if kind == "index":
        return f"offset: {e.offset} position: {e.position}"
    if kind == "timeindex":
        return f"timestamp: {e.timestamp} offset: {e.offset}"
    return (f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
            f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}")


def entry_dict(kind: str, path: str, slot: int, e) -> dict[str, Any]:
    return {"object": "entry", "file": path, "slot": slot, **e.to_dict()}


def finding_text(f: Finding) -> str:
    where = "" if f.position is None else f" at byte {f.position}"
    return f"fault{where}: {f.message} [{f.kind}]"


def report_lines(rep: FileReport) -> list[str]:
    """kdump's own lines after the listing: tail, sanity, verification, faults, notes."""
    lines = []
    if rep.empty:
        lines.append(f"{rep.path} is empty.")
    if rep.zero_tail is not None:
        lines.append(TAIL_TEXT.format(start=rep.zero_tail[0], slots=rep.zero_tail[1]))
    if rep.sanity == "passed":
        lines.append(f"{rep.path} passed sanity check.")
    check = rep.check
    if check is not None:
        faults = len(rep.findings)
        lines.append(f"verified {plural(check.entries, 'entry')} against {rep.log}: "
                     f"{'no faults' if not faults else f'{faults} fault' + ('s' if faults > 1 else '')}")
        if check.convention is not None:
            lines.append(f"convention: {check.convention}: {CONVENTIONS[check.kind].get(check.convention, '')}")
        if check.interval is not None and check.entries:
            lo, hi = check.interval
            span = f"at least {lo}" if hi is None else f"{lo} to {hi}"
            lines.append(f"gaps between entries fit index.interval.bytes {span}")
    elif rep.findings:
        lines.append(f"{len(rep.findings)} fault{'s' if len(rep.findings) > 1 else ''}")
    from kdump.render.collapse import collapsed, more_like_it, where

    lines += collapsed(rep.findings, finding_text,
                       lambda run: f"{len(run)} faults at {where(run)}: {more_like_it(run)} [{run[0].kind}]")
    lines += [f"note: {n}" for n in rep.notes]
    return [printable(line) for line in lines]


def rebuild_lines(result) -> list[str]:
    lines = []
    for w in result.files:
        what = {"created": "created", "replaced": "rewrote", "unchanged": "unchanged:"}[w.status]
        line = f"{what} {w.path}: {plural(w.entries, 'entry')}"
        if w.backup:
            line += f" (old file kept as {w.backup})"
        lines.append(line)
    lines.append(f"from {result.log}: index.interval.bytes {result.interval_bytes}, time index offsets: "
                 f"{result.time_offset} ({result.time_offset_from}), {result.valid_bytes} of {result.log_size} "
                 f"bytes indexed")
    lines += [f"note: {n}" for n in result.notes]
    return [printable(line) for line in lines]


def rebuild_dicts(result) -> list[dict[str, Any]]:
    return [{"object": "rebuild", "file": w.path, "kind": w.kind, "log": result.log, "status": w.status,
             "entries": w.entries, "backup": w.backup, "time_offset": result.time_offset,
             "time_offset_from": result.time_offset_from, "interval_bytes": result.interval_bytes,
             "valid_bytes": result.valid_bytes, "log_size": result.log_size, "notes": result.notes}
            for w in result.files]


class TextIndex:
    """DumpLogSegments lines, then kdump's report lines."""

    def __init__(self, stream: TextIO) -> None:
        self.out = Lines(stream)

    def begin(self, rep: FileReport) -> None:
        self.out.add(printable(f"Dumping {rep.path}"))

    def entries(self, rep: FileReport, entries) -> None:
        add = self.out.add
        kind = rep.kind
        if kind == "index":
            for e in entries:
                add(f"offset: {e.offset} position: {e.position}")
        elif kind == "timeindex":
            for e in entries:
                add(f"timestamp: {e.timestamp} offset: {e.offset}")
        else:
            for e in entries:
                add(entry_line(kind, e))

    def end(self, rep: FileReport) -> None:
        for line in report_lines(rep):
            self.out.add(line)

    def missing(self, rep: FileReport) -> None:
        self.out.add(printable(f"{rep.path}: {rep.status}: {rep.message}"))

    def rebuilt(self, result) -> None:
        for line in rebuild_lines(result):
            self.out.add(line)

    def finish(self) -> None:
        self.out.flush()


class JsonIndex:
    """NDJSON: one object per entry (``object: entry``), then one per file (``object: file``)."""

    def __init__(self, stream: TextIO) -> None:
        self.out = Lines(stream)

    def begin(self, rep: FileReport) -> None:
        pass

    def entries(self, rep: FileReport, entries) -> None:
        f = ndjson.dumps(rep.path)
        add = self.out.add
        if rep.kind == "index":
            for i, e in enumerate(entries):
                add(f'{{"object":"entry","file":{f},"slot":{i},"offset":{e.offset},"position":{e.position}}}')
        elif rep.kind == "timeindex":
            for i, e in enumerate(entries):
                add(f'{{"object":"entry","file":{f},"slot":{i},"timestamp":{e.timestamp},"offset":{e.offset}}}')
        else:
            for i, e in enumerate(entries):
                add(ndjson.dumps(entry_dict(rep.kind, rep.path, i, e)))

    def end(self, rep: FileReport) -> None:
        self.out.add(ndjson.dumps(rep.to_dict()))

    def missing(self, rep: FileReport) -> None:
        self.end(rep)

    def rebuilt(self, result) -> None:
        for d in rebuild_dicts(result):
            self.out.add(ndjson.dumps(d))

    def finish(self) -> None:
        self.out.flush()


def _ts(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return ""


class TableIndex:
    """Rich tables for a terminal, drawn in chunks so memory stays flat."""

    CHUNK = 1000

    def __init__(self, console) -> None:
        self.console = console

    def begin(self, rep: FileReport) -> None:
        from kdump.tables import title

        title(self.console, printable(rep.path))

    def entries(self, rep: FileReport, entries) -> None:
        from kdump.tables import Col, FitTable

        cols = {"index": ("slot", "offset", "position"), "timeindex": ("slot", "timestamp", "time (UTC)", "offset"),
                "txnindex": ("slot", "version", "producer", "first offset", "last offset", "LSO")}[rep.kind]
        # One FitTable for the file: its chunks keep the same columns and widths (rows aligned).
        floor = [len(str(rep.slots or 0))] + [0] * (len(cols) - 1)
        table = FitTable(self.console, [Col(c, "left" if c == "time (UTC)" else "right") for c in cols], floor,
                         box=None, pad_edge=False)
        rows = []
        for i, e in enumerate(entries):
            if rep.kind == "index":
                rows.append((str(i), str(e.offset), str(e.position)))
            elif rep.kind == "timeindex":
                rows.append((str(i), str(e.timestamp), _ts(e.timestamp), str(e.offset)))
            else:
                rows.append((str(i), str(e.version), str(e.producer_id), str(e.first_offset), str(e.last_offset),
                             str(e.last_stable_offset)))
            if len(rows) >= self.CHUNK:
                table.draw(rows)
                rows = []
        table.draw(rows)

    def end(self, rep: FileReport) -> None:
        for line in report_lines(rep):
            style = "bold red" if line.startswith("fault") else "yellow" if line.startswith("note") else None
            self.console.print(line, style=style, soft_wrap=True)

    def missing(self, rep: FileReport) -> None:
        self.console.print(printable(f"{rep.path}: {rep.status}: {rep.message}"), style="yellow", soft_wrap=True)

    def rebuilt(self, result) -> None:
        for line in rebuild_lines(result):
            self.console.print(line, style="yellow" if line.startswith("note") else None, soft_wrap=True)

    def finish(self) -> None:
        pass
