"""What ``kdump dump`` reads: the files of its PATHs, each with whether it was named itself,
listed whole (``listed``), or, for one remote log dir, a level at a time as its listing comes
(``Walked``: the first partitions are dumped while later pages are still to be asked for), in
the same order; and the units of ``-j`` they make.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from kdump.errors import ExitStatus, KdumpError, UsageError
from kdump.render.diagnostics import report_error
from kdump.storage import fs
from kdump.storage.levels import expand, levels, list_level
from kdump.storage.logdir import BATCH_KINDS, LogFile

NOTHING_TO_DUMP = "no log segments or KRaft snapshots found here"


def error(out, e: KdumpError) -> None:
    report_error(e, hint=False)


def listed(paths, out, jobs: int) -> tuple[list[tuple[LogFile, bool]], ExitStatus]:
    """The files to dump, each with whether it was named itself, and the exit status so far
    (a PATH that cannot be read, a partition directory without segments); a log dir's
    thousands of partitions are listed by ``jobs`` processes."""
    status = ExitStatus.OK
    files: list[tuple[LogFile, bool]] = []     # (file, named explicitly)
    for path in paths:
        unlisted: list[KdumpError] = []       # partition dirs that cannot be listed: the rest is dumped
        try:
            expanded = expand(path, jobs, unlisted)
        except KdumpError as e:
            error(out, e)
            status = max(status, e.exit_code)
            continue
        for e in unlisted:
            error(out, e)
            status = max(status, e.exit_code)
        if fs.isdir(path):
            expanded, missing = _dumped(expanded, out)
            if not expanded and not missing and status == ExitStatus.OK:
                e = UsageError(NOTHING_TO_DUMP, file=path)
                error(out, e)
                status = max(status, e.exit_code)
        files.extend((f, not fs.isdir(path)) for f in expanded)
    return files, status


class Walked:
    """``listed`` of one remote dir, a level of ``levels`` at a time (its partitions listed
    here, one by one); ``status``: the exit status so far."""

    def __init__(self, path: str, out) -> None:
        self.path, self.out = path, out
        self.status = ExitStatus.OK

    def __iter__(self) -> Iterator[list[tuple[LogFile, bool]]]:
        found = False
        try:
            for level in levels(self.path, "dir"):
                listed, log_dirs, errors = list_level(level.partitions)
                for e in errors:
                    self._error(e)
                level.log_dirs.extend(log_dirs)
                files = list(level.files) + listed
                dumped, missing = _dumped(files, self.out)
                found = found or bool(dumped or missing)
                if dumped:
                    yield [(f, False) for f in dumped]
        except KdumpError as e:
            self._error(e)
            return
        if not found and self.status == ExitStatus.OK:
            self._error(UsageError(NOTHING_TO_DUMP, file=self.path))

    def _error(self, e: KdumpError) -> None:
        error(self.out, e)
        self.status = max(self.status, e.exit_code)


def _dumped(files: list[LogFile], out) -> tuple[list[LogFile], list]:
    """The segments and snapshots a dir's ``files`` dump, and its partition dirs without a
    log, each noted (verify's log_missing, in the same words)."""
    from kdump.check.logless import logless_dirs

    missing = logless_dirs(files)
    for d, finding in missing:
        out.note(f"kdump: note: {d}: {finding.kind}: {finding.message}")
    return [f for f in files if f.kind in BATCH_KINDS], missing


def segment_ranges(files: list[LogFile]) -> dict[str, int]:
    """For each live segment, the base offset of the next segment in its partition dir."""
    nxt: dict[str, int] = {}
    by_dir: dict[str, list[LogFile]] = {}
    for f in files:
        if f.kind == "log" and f.leftover is None and f.base_offset is not None:
            by_dir.setdefault(os.path.dirname(f.path), []).append(f)
    for segs in by_dir.values():
        segs.sort(key=lambda f: f.base_offset)
        for a, b in zip(segs, segs[1:]):
            nxt[a.path] = b.base_offset
    return nxt


def partition_units(files: list[tuple[LogFile, bool]]) -> list[list[tuple[LogFile, bool]]]:
    """Consecutive files of one directory together: the units of ``-j``."""
    units: list[list[tuple[LogFile, bool]]] = []
    for f, explicit in files:
        if units and os.path.dirname(units[-1][-1][0].path) == os.path.dirname(f.path):
            units[-1].append((f, explicit))
        else:
            units.append([(f, explicit)])
    return units
