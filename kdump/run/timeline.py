"""``kdump info --timeline`` and ``--html FILE``: a timeline per partition directory, drawn
on the terminal (render.timeline), written as NDJSON (``--json``) or as a page
(render.timeline_html), one directory at a time."""

from __future__ import annotations

import functools

from kdump.check.partition import VerifyOptions
from kdump.errors import ExitStatus
from kdump.findings import ERROR, classes_status
from kdump.storage.levels import resolve
from kdump.survey.timeline import build, partition_dirs


def run(paths, out, html_file: str | None, show: bool, jobs: int) -> int:
    from kdump.jobs.fanout import ordered_map

    files = resolve(paths, jobs=jobs)
    dirs = partition_dirs(files)
    status = ExitStatus.OK
    timelines = []
    left_out: set[str] = set()      # columns a table had no room for (the legend says which)
    # One VerifyOptions a run: the log dirs' checkpoints read once (a worker: once), not once a partition.
    for t in ordered_map(functools.partial(_build, opts=VerifyOptions()), dirs, jobs):
        classes = [f.cls for f in [*t.findings, *(f for s in t.segments for f in s.findings)]]
        # Damage exits 1; a file that could not be read (an error finding) 3.
        status = max(status, classes_status(classes), ExitStatus.INCOMPLETE if ERROR in classes else ExitStatus.OK)
        if show:
            if out.format == "json":
                from kdump.export.ndjson import dumps

                out.stream.write(dumps({"object": "timeline", **t.to_dict()}) + "\n")
            else:
                from kdump.render.timeline import print_timeline

                left_out.update(print_timeline(out.console(), t))
        timelines.append(t)
    if show and out.format != "json" and timelines:
        from kdump.render.timeline import print_legend

        print_legend(out.console(), left_out)
    if html_file is not None:
        from kdump.render.diagnostics import say
        from kdump.render.escape import printable
        from kdump.render.timeline_html import page
        from kdump.storage.safewrite import atomic_write

        atomic_write(html_file, page(timelines).encode())
        say(printable(f"kdump: wrote {html_file}: the timeline of {len(timelines)} "
                      f"partition{'s' if len(timelines) != 1 else ''}"))
    return int(status)


def _build(unit, opts: VerifyOptions):
    return build(*unit, opts)
