"""How ``verify`` and ``recover`` show what they found: plain text, NDJSON or a Rich table.

Renderers only draw: ``file(report)`` once per file (streamed), ``finish()`` at the end.
The summary line goes to stderr and is built by ``summary_line``.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

STATUS_STYLE = {"ok": "green", "torn_tail": "yellow", "damaged": "bold red", "unreadable": "magenta"}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


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


def file_summary(r) -> str:
    d = r.to_dict()
    parts = [d["status"]]
    if d["batches"] is not None:
        offsets = _offsets(d["first_offset"], d["last_offset"])
        parts.append(f"{d['batches']} batches, {d['records']} records, offsets {offsets}")
    if d["size"] is not None:
        if d["valid_bytes"] is not None and d["valid_bytes"] != d["size"]:
            parts.append(f"{d['valid_bytes']} of {d['size']} bytes valid")
        else:
            parts.append(f"{d['size']} bytes")
    return ", ".join(parts)


class TextVerify:
    """One line per file, then one indented line per finding."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def file(self, r) -> None:
        lines = [f"{r.file}: {file_summary(r)}"]
        lines += [f"  {finding_text(f)}" for f in r.findings]
        self.stream.write("\n".join(lines) + "\n")

    def finish(self) -> None:
        self.stream.flush()


class JsonVerify:
    """NDJSON: one object per file, the model of design.md."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def file(self, r) -> None:
        self.stream.write(_dumps(r.to_dict()) + "\n")

    def finish(self) -> None:
        self.stream.flush()


class TableVerify:
    """A Rich table, flushed every few dozen files so long runs show progress."""

    CHUNK = 64

    def __init__(self, console) -> None:
        self.console = console
        self.rows: list = []
        self.first = True

    def file(self, r) -> None:
        self.rows.append(r)
        if len(self.rows) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self.rows:
            return
        from rich.table import Table
        from rich.text import Text

        t = Table(show_header=self.first, title="kdump verify" if self.first else None, expand=False)
        for name, justify in (("file", "left"), ("kind", "left"), ("status", "left"), ("size", "right"),
                              ("valid", "right"), ("batches", "right"), ("records", "right"),
                              ("offsets", "left"), ("findings", "left")):
            t.add_column(name, justify=justify, overflow="fold")
        for r in self.rows:
            d = r.to_dict()
            findings = "\n".join(finding_text(f) for f in r.findings)
            t.add_row(d["file"], d["kind"], Text(d["status"], style=STATUS_STYLE.get(d["status"], "")),
                      _n(d["size"]), _n(d["valid_bytes"]), _n(d["batches"]), _n(d["records"]),
                      _offsets(d["first_offset"], d["last_offset"]), Text(findings))
        self.console.print(t)
        self.rows = []
        self.first = False

    def finish(self) -> None:
        self._flush()


def _n(v) -> str:
    return "-" if v is None else str(v)


def verify_renderer(out):
    if out.format == "json":
        return JsonVerify(out.stream)
    if out.format == "table":
        return TableVerify(out.console())
    return TextVerify(out.stream)


def summary_line(counts: dict[str, int], changes: int | None = None) -> str:
    s = (f"kdump: verified {counts['files']} file{'s' if counts['files'] != 1 else ''} "
         f"({counts['segments']} segment{'s' if counts['segments'] != 1 else ''}, {counts['bytes']} bytes): "
         f"{counts['ok']} ok, {counts['damaged']} damaged, {counts['torn_tail']} torn tail, "
         f"{counts['unreadable']} unreadable")
    if counts.get("anomalies"):
        n = counts["anomalies"]
        s += f"; {n} anomal{'ies' if n != 1 else 'y'} (states a broker accepts)"
    if counts["cut_segments"]:
        verb = "cut" if changes is not None else "would be cut by a broker's recovery"
        s += (f"; {counts['cut_bytes']} bytes in {counts['cut_segments']} segment"
              f"{'s' if counts['cut_segments'] != 1 else ''} {verb}")
    return s


def change_line(c) -> str:
    return f"kdump: {c.action} {c.path}: {c.detail}"


# -- recover plans ------------------------------------------------------------------------------

def plan_rows(plan) -> list[dict[str, Any]]:
    rows = [s.to_dict(plan.directory) for s in plan.steps]
    rows.append(plan.summary_dict())
    return rows


class TextPlan:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def plan(self, plan) -> None:
        lines = [f"{plan.directory}:"]
        for s in plan.steps:
            name = os.path.basename(s.path) if s.path else ""
            target = f" -> {s.target}" if s.target else ""
            lines.append(f"  {s.action:<14} {name}{target}: {s.reason}")
        d = plan.summary_dict()
        lines.append(f"  log end offset {_n(d['log_end_offset'])}, recovery point {_n(d['recovery_point'])} -> "
                     f"{_n(d['new_recovery_point'])}" + ("" if plan.steps else " (nothing to do)"))
        self.stream.write("\n".join(lines) + "\n")

    def finish(self) -> None:
        self.stream.flush()


class JsonPlan:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def plan(self, plan) -> None:
        self.stream.write("".join(_dumps(row) + "\n" for row in plan_rows(plan)))

    def finish(self) -> None:
        self.stream.flush()


class TablePlan:
    def __init__(self, console) -> None:
        self.console = console

    def plan(self, plan) -> None:
        from rich.table import Table

        d = plan.summary_dict()
        t = Table(title=f"{plan.directory}  (log end offset {_n(d['log_end_offset'])}, recovery point "
                        f"{_n(d['recovery_point'])} -> {_n(d['new_recovery_point'])})")
        for name in ("action", "file", "target", "reason"):
            t.add_column(name, overflow="fold")
        for s in plan.steps:
            t.add_row(s.action, os.path.basename(s.path) if s.path else "", s.target or "", s.reason)
        if not plan.steps:
            t.add_row("-", "", "", "nothing to do")
        self.console.print(t)

    def finish(self) -> None:
        pass


def plan_renderer(out):
    if out.format == "json":
        return JsonPlan(out.stream)
    if out.format == "table":
        return TablePlan(out.console())
    return TextPlan(out.stream)
