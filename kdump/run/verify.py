"""The local ``kdump verify`` run and what it writes: each directory checked (here or in a
worker of ``-j``), its reports rendered as they come, errors and repairs on stderr, the
summary line, and the exit status.

The checking is ``kdump.run.verify_units``'s and ``kdump.check.partition``'s, the repair of
``--truncate`` ``kdump.repair.truncate``'s; this module only puts them in order on the
terminal, with the progress bar.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import os

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.errors import ExitStatus, KdumpError, NothingToDoError
from kdump.findings import report_status
from kdump.format.codecs import DEFAULT_LIMITS
from kdump.render.diagnostics import output_cut, report_error
from kdump.run.verify_units import (
    COUNTED,
    ERROR,
    LOG_DIR,
    REPAIRED,
    REPORT,
    directory_events,
    listed,
    resolve_paths,
)
from kdump.storage import fs
from kdump.storage.mapped import file_size


def run_verify(paths, out, *, deep: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
               index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, truncate: bool = False,
               broker_cut: bool = False, strict: bool = False, limits=None, force: bool = False,
               jobs: int = 1) -> int:
    from kdump.check.logdir_checkpoints import read_ahead
    from kdump.check.partition import VerifyOptions
    from kdump.render.verify import summary_line
    from kdump.storage.levels import NOTHING_HERE, expand, walk
    from kdump.storage.logdir import directory_groups

    opts = VerifyOptions(deep=deep, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes,
                         broker_cut=broker_cut, limits=limits or DEFAULT_LIMITS)
    repair = None
    if truncate:
        from kdump.repair.truncate import truncate_reports as repair
    run = _Run(out, functools.partial(directory_events, opts=opts, repair=repair, force=force), strict, truncate)
    try:
        if len(paths) == 1 and fs.kind(paths[0]) == "dir":
            # One directory: its partition dirs are listed by whoever checks them (-j: the
            # workers), level by level as ``walk`` finds them, so the first report comes at once.
            path = paths[0]
            with run.progress(lambda: sum(file_size(f.path) for f in expand(path))):
                try:
                    def level(own: list, partitions: list) -> list[str]:
                        read_ahead(own, partitions, opts.offsets)     # before -j forks: the workers share it
                        return run.units(directory_groups(own) + partitions, jobs)

                    walk(path, level, kind="dir")
                    if not run.found:
                        raise NothingToDoError(NOTHING_HERE, file=path)
                except KdumpError as e:
                    run.error(e)
        else:
            files, _, errors = resolve_paths(paths, jobs)
            for e in errors:
                run.error(e)
            groups = directory_groups(files)
            if truncate and len({os.path.realpath(d) for d, _ in groups}) < len(groups):
                jobs = 1        # a directory named in pieces: repair it in one process
            with run.progress(lambda: sum(file_size(f.path) for f in files)):
                run.units(groups, jobs)
        run.renderer.finish()
    except BrokenPipeError:
        return output_cut(run.status)         # nothing more repaired: the run stopped here
    if run.counts["files"] or run.status == ExitStatus.OK:     # not "verified 0 files" after an error
        out.note(summary_line(run.counts, None if run.changes is None else len(run.changes)))
    if any(x.load_failure for x in run.counts.get("clean") or []):
        run.status = max(run.status, ExitStatus.DAMAGE)      # the broker will not load a partition
    return int(run.status)


# Reports counted for the summary at once: its per-call costs (a .kafka_cleanshutdown stat per
# log dir, the counts' dict) paid once per run of directories, not once per partition.
SUMMARY_RUN = 1024


class _Run:
    """What the run has written so far: the exit status, the summary's counts, the repairs."""

    def __init__(self, out, check, strict: bool, truncate: bool) -> None:
        from kdump.check.loss import summary_counts
        from kdump.render.verify import verify_renderer

        self.out, self.check, self.strict = out, check, strict
        self.renderer = verify_renderer(out)
        self.counts = summary_counts([])
        self.checkpoints: dict = {}     # the log dirs' checkpoints, read once a run by the summary
        self.changes: list | None = [] if truncate else None
        self.status = ExitStatus.OK
        self.found = False          # a file was checked (or could not be)
        self.bar = None

    @contextlib.contextmanager
    def progress(self, total):
        from kdump.render.progress import Progress

        with Progress.for_output(self.out, total, "verify") as self.bar:
            yield

    def error(self, e: KdumpError) -> None:
        report_error(e, hint=False)
        self.status = max(self.status, e.exit_code)

    def units(self, units: list, jobs: int) -> list[str]:
        """Check these directories (here, or over ``jobs`` workers) and write what they give, in
        order; returns the dirs named like partitions that turned out to be log dirs."""
        from kdump.check.loss import summary_counts
        from kdump.jobs.fanout import in_process, ordered_map

        out, progress, strict = self.out, self.bar, self.strict
        here = in_process(units, jobs)
        # A worker sends a directory's events at once, and what it read so far moves the bar;
        # text and NDJSON it renders itself (a table needs every report here).
        if here:
            work = self.check
        elif out.format == "table":
            work = progress.counted(functools.partial(listed, self.check))
        else:
            work = progress.counted(functools.partial(_rendered, self.check, out, strict, progress.enabled),
                                    ranged=True)
        log_dirs = []
        done: list = []     # reports the summary has yet to count (a run of directories at a time)
        for result in ordered_map(work, units, jobs, ranged=not here and out.format != "table"):
            events, counted = (result, 0) if here else result
            for kind, x in events:
                if kind == RENDERED:
                    text, unit_status, unit_counts, sizes = x
                    out.stream.write(text)
                    self.found = True
                    if unit_status > self.status:
                        self.status = ExitStatus(unit_status)
                    self._add(unit_counts)
                    for path, size in sizes:
                        progress.done(path, size)
                elif kind == REPORT:
                    self.found = True
                    self.status = max(self.status, report_status(x.status, x.findings if strict else ()))
                    self.renderer.file(x)
                    done.append(x)
                    progress.done(x.file, x.size or 0)
                elif kind == ERROR:
                    self.found = True
                    self.error(x)
                elif kind == LOG_DIR:
                    log_dirs.append(x)
                elif kind == COUNTED:
                    self._add(x)
                    done.clear()
                else:
                    self.changes += _notes(out, x)
                    if kind == REPAIRED and any(c.action == "skipped" for c in x):
                        self.status = max(self.status, ExitStatus.DAMAGE)
            if counted:
                progress.unit_done((), counted)
            if len(done) >= SUMMARY_RUN:
                self._add(summary_counts(done, self.checkpoints))
                done = []
        if done:
            self._add(summary_counts(done, self.checkpoints))
        return log_dirs

    def _add(self, counts: dict[str, int]) -> None:
        for k, v in counts.items():
            if v:
                self.counts[k] += v


# The reports of a worker's range of directories, rendered: (text, exit status as an int, the
# summary counts that are not zero, the files' (path, size) for the bar or none without one).
RENDERED = "rendered"


def _rendered(check, out, strict: bool, sizes: bool, groups: list) -> tuple[list, Exception | None]:
    """``check`` for a range of directories (``ordered_map(ranged=True)``), for text and NDJSON:
    the reports of the whole range come back rendered as one RENDERED event, with any other
    event in its place between them. The parent only writes the text, and the per-directory
    costs of a result (its text, counts, pickling, handling) are paid once per range. A
    directory whose check fails adds nothing: the range ends there with its error."""
    from kdump.check.loss import summary_counts

    local, renderer = _worker_renderer(out)
    events: list = []
    reports: list = []
    checkpoints: dict = {}

    def flush(counts: dict | None = None) -> None:
        status = 0
        for r in reports:
            renderer.file(r)
            status = max(status, report_status(r.status, r.findings if strict else ()))
        text = local.stream.getvalue()
        local.stream.seek(0)
        local.stream.truncate()
        counts = summary_counts(reports, checkpoints) if counts is None else counts
        events.append((RENDERED, (text, int(status), {k: v for k, v in counts.items() if v},
                                  [(r.file, r.size or 0) for r in reports] if sizes else ())))
        reports.clear()

    raised = None
    for group in groups:
        try:
            unit = list(check(group))
        except Exception as e:  # noqa: BLE001 - raised in the parent, in order
            raised = e
            break
        for kind, x in unit:
            if kind == REPORT:
                reports.append(x)
            elif kind == COUNTED:
                flush(x)
            else:
                if reports:
                    flush()
                events.append((kind, x))
    if reports:
        flush()
    return [events], raised


_renderer: tuple | None = None      # in a worker: (out, its copy writing to a buffer, a renderer on it)


def _worker_renderer(out):
    """One renderer per worker, on a buffer the text and NDJSON renderers (which keep no
    state between files) are emptied from after each directory."""
    global _renderer
    from kdump.render.verify import verify_renderer

    if _renderer is None or _renderer[0] is not out:
        local = copy.copy(out)
        local.stream = io.StringIO()
        _renderer = (out, local, verify_renderer(local))
    return _renderer[1], _renderer[2]


def _notes(out, changes: list) -> list:
    from kdump.render.verify import change_line

    for c in changes:
        out.note(change_line(c))
    return changes
