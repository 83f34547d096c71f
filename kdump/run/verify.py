"""The local ``kdump verify`` run and what it writes: each directory checked (here or in a
worker of ``-j``), its reports rendered as they come, errors and repairs on stderr, the
summary line, and the exit status.

The checking is ``kdump.check.verify_run``'s and ``kdump.check.partition``'s, the repair of
``--truncate`` ``kdump.repair.truncate``'s; this module only puts them in order on the
terminal, with the progress bar.
"""

from __future__ import annotations

import copy
import functools
import io
import os

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.check.verify_run import ERROR, REPAIRED, REPORT, directory_events, listed, report_status, resolve_paths
from kdump.errors import ExitStatus
from kdump.format.codecs import DEFAULT_LIMITS
from kdump.render.diagnostics import output_cut, report_error
from kdump.storage.segment import file_size


def run_verify(paths, out, *, deep: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
               index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, truncate: bool = False,
               broker_cut: bool = False, strict: bool = False, limits=None, force: bool = False,
               jobs: int = 1) -> int:
    from kdump.check.partition import VerifyOptions, summarize
    from kdump.parallel import in_process, ordered_map
    from kdump.render.progress import Progress
    from kdump.render.verify import summary_line, verify_renderer
    from kdump.storage.logdir import directory_groups

    opts = VerifyOptions(deep=deep, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes,
                         broker_cut=broker_cut, limits=limits or DEFAULT_LIMITS)
    files, status, errors = resolve_paths(paths, jobs)
    for e in errors:
        report_error(e, hint=False)
    groups = directory_groups(files)
    if truncate and len({os.path.realpath(d) for d, _ in groups}) < len(groups):
        jobs = 1        # a directory named in pieces: repair it in one process
    repair = None
    if truncate:
        from kdump.repair.truncate import truncate_reports as repair
    check = functools.partial(directory_events, opts=opts, repair=repair, force=force)
    renderer = verify_renderer(out)
    counts = summarize([])
    changes: list | None = [] if truncate else None
    try:
        with Progress.for_output(out, lambda: sum(file_size(f.path) for f in files), "verify") as progress:
            here = in_process(groups, jobs)
            # A worker sends a directory's events at once, and what it read so far moves the bar;
            # text and NDJSON it renders itself (a table needs every report here).
            if here:
                work = check
            elif out.format == "table":
                work = progress.counted(functools.partial(listed, check))
            else:
                work = progress.counted(functools.partial(_rendered, check, out, strict, progress.enabled))
            for result in ordered_map(work, groups, jobs):
                events, counted = (result, 0) if here else result
                done = []
                for kind, x in events:
                    if kind == RENDERED:
                        text, unit_status, unit_counts, sizes = x
                        out.stream.write(text)
                        status = max(status, unit_status)
                        for k, v in unit_counts.items():
                            counts[k] += v
                        for path, size in sizes:
                            progress.done(path, size)
                    elif kind == REPORT:
                        status = max(status, report_status(x.status, x.findings if strict else ()))
                        renderer.file(x)
                        done.append(x)
                        progress.done(x.file, x.size or 0)
                    elif kind == ERROR:
                        report_error(x, hint=False)
                        status = max(status, x.exit_code)
                    else:
                        changes += _notes(out, x)
                        if kind == REPAIRED and any(c.action == "skipped" for c in x):
                            status = max(status, ExitStatus.DAMAGE)
                progress.unit_done((), counted)
                for k, v in summarize(done).items():
                    counts[k] += v
        renderer.finish()
    except BrokenPipeError:
        return output_cut(status)         # nothing more repaired: the run stopped here
    out.note(summary_line(counts, None if changes is None else len(changes)))
    return int(status)


# A worker's reports of one directory, rendered: (text, exit status, summary counts, the
# files' (path, size) for the bar or none without one).
RENDERED = "rendered"


def _rendered(check, out, strict: bool, sizes: bool, group) -> list:
    """``listed`` for text and NDJSON: each run of reports comes back as one RENDERED event,
    so the parent only writes the text (no report objects to unpickle and render there)."""
    from kdump.check.partition import summarize
    from kdump.render.verify import verify_renderer

    events: list = []
    reports: list = []
    local = copy.copy(out)

    def flush() -> None:
        if reports:
            local.stream = io.StringIO()
            renderer = verify_renderer(local)
            status = ExitStatus.OK
            for r in reports:
                renderer.file(r)
                status = max(status, report_status(r.status, r.findings if strict else ()))
            events.append((RENDERED, (local.stream.getvalue(), status, summarize(reports),
                                      [(r.file, r.size or 0) for r in reports] if sizes else ())))
            reports.clear()

    for kind, x in check(group):
        if kind == REPORT:
            reports.append(x)
        else:
            flush()
            events.append((kind, x))
    flush()
    return events


def _notes(out, changes: list) -> list:
    from kdump.render.verify import change_line

    for c in changes:
        out.note(change_line(c))
    return changes
