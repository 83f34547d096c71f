"""How ``verify`` and ``recover`` show what they found: plain text, NDJSON or a Rich table.

Renderers only draw: ``file(report)`` once per file (streamed), ``finish()`` at the end.
The summary line goes to stderr and is built by ``summary_line``.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from kdump.findings import ACTIONABLE
from kdump.render.escape import printable
from kdump.words import plural, size

STATUS_STYLE = {"ok": "green", "torn_tail": "yellow", "damaged": "bold red", "unreadable": "magenta"}


def _offsets(first: int | None, last: int | None) -> str:
    if first is None:
        return "-"
    return str(first) if first == last else f"{first}..{last}"


def finding_text(f) -> str:
    where = []
    if f.position is not None:
        where.append(f"byte {f.position}")
    if f.offset is not None:
        where.append(f"offset {f.offset}")
    loc = f" at {', '.join(where)}" if where else ""
    label = " (anomaly)" if f.cls == "anomaly" else ""      # accepted by a broker: exit 0 unless --strict
    return f"{f.kind}{label}{loc}: {f.message}"


def finding_lines(findings) -> list[str]:
    """One line per finding, and one per run of findings of one kind (the JSON keeps each)."""
    from kdump.render.collapse import collapsed, more_like_it, where

    return collapsed(findings, finding_text,
                     lambda run: f"{run[0].kind} at {where(run)} ({len(run)} findings): {more_like_it(run)}")


def not_listed_lines(r) -> list[str]:
    """The findings a scan counted but did not keep (past the first 50 of a kind in a file)."""
    extra = r.not_listed
    return [f"{kind}: {n} more in this file, not listed (the first 50 of each kind are)" for kind, n in extra.items()]


def file_summary(r) -> str:
    """The head line's facts about a file report (what ``to_dict`` holds, read straight off it)."""
    parts = [r.status]
    s = r.scan
    if s is not None:
        parts.append(f"{plural(s.batches, 'batch')}, {plural(s.records, 'record')}, "
                     f"offsets {_offsets(s.first_offset, s.last_offset)}")
    size = r.size
    if size is not None:
        valid = r.valid_bytes
        parts.append(f"{valid} of {size} bytes valid" if valid is not None and valid != size else f"{size} bytes")
    return ", ".join(parts)


class TextVerify:
    """One line per file, then one indented line per finding."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def file(self, r) -> None:
        head = f"{printable(r.file)}: {file_summary(r)}"
        if not r.findings:      # most files: one line, nothing to collapse
            self.stream.write(head + "\n")
            return
        lines = [head] + [f"  {printable(line)}" for line in finding_lines(r.findings) + not_listed_lines(r)]
        self.stream.write("\n".join(lines) + "\n")

    def finish(self) -> None:
        self.stream.flush()


class JsonVerify:
    """NDJSON: one object per file (the README's JSON model)."""

    def __init__(self, stream: TextIO) -> None:
        from kdump.export.ndjson import dumps  # (the text view starts without it)

        self.stream, self.dumps = stream, dumps

    def file(self, r) -> None:
        self.stream.write(self.dumps({"object": "file", **r.to_dict()}) + "\n")

    def finish(self) -> None:
        self.stream.flush()


class TableVerify:
    """Rich tables for a terminal, one per directory, listing the files with findings; the
    plain ok files are summarised in one line at the end. Names are never wrapped."""

    CHUNK = 64

    def __init__(self, console) -> None:
        self.console = console
        self.rows: list = []
        self.directory: str | None = None
        self.titled = False
        self.ok_kinds: dict[str, int] = {}
        self.ok_dirs: set[str] = set()
        self.info_kinds: dict[str, int] = {}

    def file(self, r) -> None:
        shown = [f for f in r.findings if f.cls != "info" or f.kind in ACTIONABLE]
        for f in r.findings:
            if f.cls == "info" and f.kind not in ACTIONABLE:   # a state the broker finishes: counted
                self.info_kinds[f.kind] = self.info_kinds.get(f.kind, 0) + 1
        if r.status == "ok" and not shown:
            self.ok_kinds[r.kind] = self.ok_kinds.get(r.kind, 0) + 1
            if len(self.ok_dirs) < 2:
                self.ok_dirs.add(os.path.dirname(r.file))
            return
        directory = os.path.dirname(r.file)
        if directory != self.directory:
            self._flush()
            self.directory, self.titled = directory, False
        self.rows.append((r, shown))
        if len(self.rows) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self.rows:
            return
        from rich.text import Text

        from kdump.tables import Col, FitTable, title

        if not self.titled:         # the directory on a line of its own: a path is never wrapped
            title(self.console, printable(self.directory or "."), style="")
            # Two columns so that a narrow terminal still has room: the file and what it holds
            # (one short line each, never wrapped), and its findings (folded at spaces); one
            # record per block where even that does not fit.
            self.fit = FitTable(self.console, [Col("file", join="\n"), Col("findings", fold=True, join="\n")],
                                show_lines=True)
        rows = []
        for r, shown in self.rows:
            d = r.to_dict()
            cell = Text(printable(os.path.basename(d["file"])), style="bold")
            cell.append("\n")
            cell.append(d["status"], style=STATUS_STYLE.get(d["status"], ""))
            for line in _facts(d):
                cell.append("\n" + line)
            rows.append((cell, Text("\n".join(printable(line) for line in finding_lines(shown) + not_listed_lines(r)))))
        self.fit.draw(rows)
        self.rows = []
        self.titled = True

    def finish(self) -> None:
        self._flush()
        n = sum(self.ok_kinds.values())
        if n:
            kinds = ", ".join(f"{v} {k}" for k, v in sorted(self.ok_kinds.items(), key=lambda kv: -kv[1]))
            where = f" in {printable(next(iter(self.ok_dirs)) or '.')}" if len(self.ok_dirs) == 1 else ""
            self.console.print(f"{n} ok file{'s' if n != 1 else ''}{where} not listed ({kinds}); "
                               f"--format text lists every file", style="green")
            self.ok_kinds = {}
        n = sum(self.info_kinds.values())
        if n:
            kinds = ", ".join(f"{v} {k}" for k, v in sorted(self.info_kinds.items(), key=lambda kv: -kv[1]))
            self.console.print(f"{plural(n, 'info finding')} not listed ({kinds}: states a broker finishes at "
                               f"startup); --format text lists them", style="dim")
            self.info_kinds = {}


class ProblemsOnly:
    """--problems: pass on only the files not ok or with findings other than info (a state
    the broker finishes at startup, such as a missing index it rebuilds, is no problem)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def file(self, r) -> None:
        if r.status != "ok" or any(f.cls != "info" or f.kind in ACTIONABLE for f in r.findings):
            self.inner.file(r)

    def finish(self) -> None:
        self.inner.finish()


def _facts(d: dict) -> list[str]:
    """Short lines about one file for the table's file cell."""
    lines = []
    if d["batches"] is not None:
        lines.append(f"{plural(d['batches'], 'batch')}, offsets {_offsets(d['first_offset'], d['last_offset'])}")
    if d["size"] is not None:
        valid = d["valid_bytes"]
        lines.append(f"{valid} of {d['size']} bytes valid" if valid is not None and valid != d["size"]
                     else f"{d['size']} bytes")
    return lines


def _n(v) -> str:
    return "-" if v is None else str(v)


def verify_renderer(out):
    if out.format == "json":
        r = JsonVerify(out.stream)
    elif out.format == "table":
        r = TableVerify(out.console())
    else:
        r = TextVerify(out.stream)
    return ProblemsOnly(r) if getattr(out, "problems_only", False) else r


def summary_line(counts: dict, changes: int | None = None) -> str:
    s = (f"kdump: verified {plural(counts['files'], 'file')} ({plural(counts['segments'], 'segment')}, "
         f"{size(counts['bytes'])}): {counts['ok']} ok, {counts['damaged']} damaged, {counts['torn_tail']} torn tail, "
         f"{counts['unreadable']} unreadable")
    if counts.get("anomalies"):
        n = counts["anomalies"]
        s += f"; {plural(n, 'anomaly')} (states a broker accepts)"
    if counts["cut_segments"]:
        s += "; " + loss_text(counts, done=bool(changes))
    if counts.get("unrecovered") and not changes:
        n = counts["unrecovered"]
        s += (f"; {plural(n, 'damaged segment')} before the recovery point {'is' if n == 1 else 'are'} not "
              f"recovered: a broker keeps {'it' if n == 1 else 'them'} as {'it is' if n == 1 else 'they are'} and "
              f"serves the damage (kdump verify --truncate cuts {'it' if n == 1 else 'them'})")
    for x in counts.get("clean") or []:
        s += "; " + clean_text(x, done=bool(changes))
    return s


def clean_text(x, done: bool = False) -> str:
    """What the next broker start does to a partition of a log dir shut down cleanly (check.clean_load);
    ``done``: verify --truncate changed the log dir (a failing load is cut as a crash recovery cuts)."""
    name = printable(os.path.basename(x.directory) or x.directory)
    if x.load_failure is not None and done:
        return (f"the broker would not have loaded partition {name} as it was: {x.load_failure} (after a clean "
                f"shutdown it reads the log end offset without recovery); cut as a crash recovery cuts it")
    if x.load_failure is not None:
        return (f"the broker will not load partition {name}: {x.load_failure} (after a clean shutdown it reads the "
                f"log end offset without recovery; fix: kdump recover --full --apply, or delete "
                f".kafka_cleanshutdown so that the broker recovers it)")
    total = x.cut_bytes + x.deleted_bytes
    if not total:
        ends = x.first_offset if x.first_offset != x.log_end_offset else x.last_offset + 1
        return (f"after a clean shutdown the broker takes the log end offset of {name} from its index as it is: "
                f"{_n(x.log_end_offset)}, where the log ends at {ends} (readers are sent astray: "
                f"offsets {_range(x)} are not served as written, and new appends reuse them); before it starts: "
                f"kdump index --rebuild")
    astray = "" if not x.trusted_damaged_indexes else (
        f"; it trusts {plural(x.trusted_damaged_indexes, 'damaged index file')} as "
        f"{'it is, which sends' if x.trusted_damaged_indexes == 1 else 'they are, which send'} readers astray "
        f"(kdump index --rebuild rebuilds them from the log)")
    return (f"after a clean shutdown the broker recovers no segment of {name}: it keeps the damage and serves it up "
            f"to log end offset {_n(x.log_end_offset)} (a crash recovery, or kdump recover --full, would remove "
            f"{plural(total, 'byte')}: offsets {_range(x)}){astray}")


def loss_text(counts: dict, done: bool = False) -> str:
    """All that a broker's recovery removes (check.loss): the bytes cut, the later segments
    deleted whole, the offsets lost."""
    cut, deleted = counts["cut_bytes"], counts.get("deleted_segments", 0)
    head = "removed" if done else "a broker's recovery would remove"
    total = cut + counts.get("deleted_bytes", 0)
    s = f"{head} {size(total)}" + (f" ({total} bytes)" if total >= 1000 else "") + \
        f": {plural(cut, 'byte')} cut from {plural(counts['cut_segments'], 'segment')}"
    if deleted:
        s += (f", {plural(deleted, 'later segment')} {'moved to quarantine' if done else 'deleted'} whole "
              f"({plural(counts['deleted_bytes'], 'byte')})")
    found = counts.get("losses") or []
    ranges = [f"{_range(x)} in {printable(os.path.basename(x.directory) or x.directory)}" for x in found[:3]]
    if len(found) == 1:
        ranges = [_range(found[0])]
    elif len(found) > 3:
        ranges.append(f"{len(found) - 3} more partitions")
    return s + (f"; offsets {', '.join(ranges)}" if ranges else "")


def _range(x) -> str:
    if x.first_offset is None:
        return "-"
    return f"{x.first_offset}..{x.last_offset}" if x.last_offset is not None else f"{x.first_offset} and later"


def change_line(c) -> str:
    # "moved X to Y: why", "renamed X to Y"; other details follow a colon.
    sep = " " if c.detail.startswith("to ") else ": "
    return printable(f"kdump: {c.action} {c.path}{sep}{c.detail}")


# -- recover plans ------------------------------------------------------------------------------

def plan_rows(plan) -> list[dict[str, Any]]:
    rows = [s.to_dict(plan.directory) for s in plan.steps]
    rows.append(plan.summary_dict())
    return rows


class TextPlan:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def plan(self, plan) -> None:
        lines = [f"{printable(plan.directory)}:"]
        for s in plan.steps:
            name = os.path.basename(s.path) if s.path else ""
            target = f" -> {s.target}" if s.target else ""
            lines.append(printable(f"  {s.action:<14} {name}{target}: {s.reason}"))
        d = plan.summary_dict()
        lines.append(f"  log end offset {_n(d['log_end_offset'])}, recovery point {_n(d['recovery_point'])} -> "
                     f"{_n(d['new_recovery_point'])}" + ("" if plan.steps else " (nothing to do)"))
        self.stream.write("\n".join(lines) + "\n")

    def finish(self) -> None:
        self.stream.flush()


class JsonPlan:
    def __init__(self, stream: TextIO) -> None:
        from kdump.export.ndjson import dumps

        self.stream, self.dumps = stream, dumps

    def plan(self, plan) -> None:
        self.stream.write("".join(self.dumps({"object": "recovery" if row["action"] == "summary" else "step", **row})
                                  + "\n" for row in plan_rows(plan)))

    def finish(self) -> None:
        self.stream.flush()


def plan_renderer(out):
    if out.format == "json":
        return JsonPlan(out.stream)
    if out.format == "table":
        from kdump.render.plan import TablePlan

        return TablePlan(out.console())
    return TextPlan(out.stream)
