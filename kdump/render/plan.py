"""``kdump recover``'s plans on a terminal, at any width (80 and 73 columns included).

A partition with steps: its path on a line of its own, its offsets on the next, then its
steps, those alike (the same action and reason, no target: the nine quarantined files of a
cleaner crash) in one row that lists their files. Partitions with nothing to do are one row
each, in one table per run of them, under their parent directory (a path is never folded). Where a table does not
fit, ``kdump.tables`` draws blocks, whose reasons fold at spaces: no name is cut.
"""

from __future__ import annotations

import os

from kdump.render.escape import printable
from kdump.tables import Col, print_table, title

STEP_COLS = [Col("action"), Col("files", join="\n"), Col("target"), Col("reason", fold=True)]
IDLE_COLS = [Col("partition"), Col("log end offset", justify="right"), Col("recovery point", justify="right")]


def _n(v) -> str:
    return "-" if v is None else str(v)


def step_rows(plan) -> list[tuple[str, str, str, str]]:
    """(action, files, target, reason): steps alike, one after another, share a row."""
    rows: list[tuple[str, list[str], str, str]] = []
    for s in plan.steps:
        name = printable(os.path.basename(s.path)) if s.path else ""
        target, reason = printable(s.target or ""), printable(s.reason)
        last = rows[-1] if rows else None
        if last is not None and not target and not last[2] and (last[0], last[3]) == (s.action, reason) and name:
            last[1].append(name)
        else:
            rows.append((s.action, [name] if name else [], target, reason))
    return [(a, "\n".join(files), t, r) for a, files, t, r in rows]


class TablePlan:
    def __init__(self, console) -> None:
        self.console = console
        self._idle: list[tuple[str, str, str, str]] = []     # (parent, name, log end offset, recovery point)

    def plan(self, plan) -> None:
        d = plan.summary_dict()
        points = f"{_n(d['recovery_point'])} -> {_n(d['new_recovery_point'])}" \
            if d["new_recovery_point"] != d["recovery_point"] else _n(d["recovery_point"])
        if not plan.steps:
            parent, name = os.path.split(os.path.normpath(plan.directory))
            if self._idle and self._idle[-1][0] != parent:
                self._flush()
            self._idle.append((parent, name, _n(d["log_end_offset"]), points))
            return
        self._flush()
        title(self.console, printable(plan.directory))
        n = len(plan.actions)
        self.console.print(f"log end offset {_n(d['log_end_offset'])}, recovery point {points}; "
                           f"{n} step{'' if n == 1 else 's'}", style="dim", markup=False, highlight=False)
        rows = step_rows(plan)
        keep = [i for i in range(len(STEP_COLS)) if STEP_COLS[i].name != "target" or any(r[2] for r in rows)]
        print_table(self.console, [STEP_COLS[i] for i in keep], [[r[i] for i in keep] for r in rows])

    def _flush(self) -> None:
        if not self._idle:
            return
        parent = self._idle[0][0]
        count = len(self._idle)
        if parent:
            title(self.console, printable(parent))
        self.console.print(f"nothing to do in {count} partition{'' if count == 1 else 's'}:", style="dim",
                           markup=False, highlight=False)
        print_table(self.console, IDLE_COLS, [(printable(name), leo, rp) for _, name, leo, rp in self._idle])
        self._idle = []

    def finish(self) -> None:
        self._flush()
