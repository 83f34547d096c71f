"""``kdump info``'s run: a summary per partition from batch headers, printed as each is done."""

from __future__ import annotations

from kdump.errors import ExitStatus
from kdump.jobs.fanout import in_process, ordered_map
from kdump.render.diagnostics import report_error, say
from kdump.render.escape import printable
from kdump.render.info import info_table, info_text
from kdump.render.progress import Progress
from kdump.run.schema_store import info_store, usage_of
from kdump.storage.logdir import BATCH_KINDS, directory_groups, resolve
from kdump.survey.summary import PartitionSummary, partition_summaries


def run_info(paths, out, *, schemas_path: str | None, jobs: int) -> int:
    unlisted: list = []         # partition dirs that cannot be listed: reported, the rest summed up
    bootstrap: list = []
    files = resolve(paths, kinds=BATCH_KINDS, jobs=jobs, errors=unlisted, left_out=bootstrap)
    store = info_store(paths, schemas_path, out)
    for f in bootstrap:
        out.note(printable(f"kdump: note: {f.path}: the KRaft bootstrap snapshot, not a partition "
                           "(kdump dump reads it)"))
    status = ExitStatus.OK
    for e in unlisted:
        report_error(e)
        status = max(status, e.exit_code)
    summaries = []
    groups = directory_groups(files)
    here = in_process(groups, jobs)
    with Progress.for_paths(out, [f.path for f in files], "info") as progress:
        # A worker counts what it reads for the bar as it goes, and hands the count back.
        for group, result in zip(groups, ordered_map(_summary if here else progress.counted(_summary), groups, jobs)):
            s, counted = (result, 0) if here else result
            progress.unit_done((f.path for f in group[1]), counted)
            status = max(status, s.status, ExitStatus.DAMAGE if s.invalid_batches or s.trailing_bytes else 0)
            extra, line = usage_of(group[1], store)
            if out.format == "json":
                from kdump.export.ndjson import dumps

                out.stream.write(dumps({**s.to_dict(), **extra}) + "\n")
            elif out.format == "text":
                out.stream.write(info_text(s) + line)
            else:
                summaries.append(s)
            for p in s.problems:
                say(printable(f"kdump: error: {p}"))
    if summaries:
        info_table(out.console(), summaries)
    return int(status)


def _summary(group) -> PartitionSummary:
    return next(partition_summaries(group[1]))

