"""``kdump info``: a summary per partition, the first picture of a log dir."""

from __future__ import annotations

import click

from kdump.cli.options import jobs_option, jobs_or_default, output_options, paths_argument
from kdump.cli.schema_options import info_store, usage_of
from kdump.errors import ExitStatus, KdumpError
from kdump.render.escape import printable
from kdump.render.info import info_table, info_text
from kdump.render.output import Output
from kdump.storage.logdir import BATCH_KINDS, resolve
from kdump.survey.summary import PartitionSummary, summarize


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--schemas", "schemas_path", is_flag=False, flag_value="", default=None, metavar="[STORE]",
              help="Also list the Schema Registry subjects, versions and types each partition's records use (the "
                   "log dir's _schemas-0, or --schemas=STORE; see kdump dump --schemas).")
@jobs_option
@click.option("--timeline", is_flag=True,
              help="Chart each partition's segments against offset and time: sizes, record rates, offsets "
                   "missing (compaction), findings (damage in red).")
@click.option("--html", "html_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write the timeline as a self-contained HTML page (plotly; opens without network).")
@output_options
def info(paths, schemas_path, jobs, timeline, html_file, json_flag, fmt, color, quiet):
    """Summarise partitions: segments, bytes, batches, records, offset and time ranges,
    codecs, producers, transactional and control share, batch-size histogram.

    Reads batch headers only, so it is fast even on large log dirs. --timeline and --html
    also run verify's checks on each partition to place its findings.
    """
    from kdump.render.progress import Progress

    out = Output(json_flag, fmt, color, quiet)
    if timeline or html_file:
        from kdump.run.timeline import run

        return run(paths, out, html_file, timeline, jobs_or_default(jobs))
    from kdump.jobs.fanout import in_process, ordered_map
    from kdump.render.diagnostics import report_error
    from kdump.storage.logdir import directory_groups

    unlisted: list = []         # partition dirs that cannot be listed: reported, the rest summed up
    files = resolve(paths, kinds=BATCH_KINDS, jobs=jobs_or_default(jobs), errors=unlisted)
    store = info_store(paths, schemas_path, out)
    status = ExitStatus.OK
    for e in unlisted:
        report_error(e)
        status = max(status, e.exit_code)
    summaries = []
    groups = directory_groups(files)
    jobs = jobs_or_default(jobs)
    here = in_process(groups, jobs)
    with Progress.for_paths(out, [f.path for f in files], "info") as progress:
        # A worker counts what it reads for the bar as it goes, and hands the count back.
        for group, result in zip(groups, ordered_map(_summary if here else progress.counted(_summary), groups, jobs)):
            s, counted = (result, 0) if here else result
            progress.unit_done((f.path for f in group[1]), counted)
            if s.problems or s.invalid_batches or s.trailing_bytes:
                status = ExitStatus.DAMAGE
            extra, line = usage_of(group[1], store)
            if out.format == "json":
                from kdump.export.ndjson import dumps

                out.stream.write(dumps({**s.to_dict(), **extra}) + "\n")
            elif out.format == "text":
                out.stream.write(info_text(s) + line)
            else:
                summaries.append(s)
            for p in s.problems:
                click.echo(printable(f"kdump: error: {p}"), err=True)
    if summaries:
        info_table(out.console(), summaries)
    return int(status)


def _summary(group) -> PartitionSummary:
    return next(summarize(group[1]))


__all__ = ["info", "KdumpError"]
