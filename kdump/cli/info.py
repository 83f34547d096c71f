"""``kdump info``: a summary per partition, the first picture of a log dir."""

from __future__ import annotations

import os

import click

from kdump.errors import ExitStatus, KdumpError
from kdump.storage.logdir import BATCH_KINDS, resolve
from kdump.render.escape import printable
from kdump.state.render import when as _time
from kdump.info import SIZE_BUCKETS, PartitionSummary, bucket_label, summarize
from kdump.render.output import Output
from kdump.cli.options import jobs_option, jobs_or_default, output_options, paths_argument


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@jobs_option
@click.option("--timeline", is_flag=True,
              help="Chart each partition's segments against offset and time: sizes, record rates, offsets "
                   "missing (compaction), findings (damage in red).")
@click.option("--html", "html_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write the timeline as a self-contained HTML page (plotly; opens without network).")
@output_options
def info(paths, jobs, timeline, html_file, json_flag, fmt, color, quiet):
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
    from kdump.storage.logdir import directory_groups
    from kdump.parallel import in_process, ordered_map

    from kdump.render.diagnostics import report_error

    unlisted: list = []         # partition dirs that cannot be listed: reported, the rest summed up
    files = resolve(paths, kinds=BATCH_KINDS, jobs=jobs_or_default(jobs), errors=unlisted)
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
            if out.format == "json":
                from kdump.export.ndjson import dumps

                out.stream.write(dumps(s.to_dict()) + "\n")
            elif out.format == "text":
                out.stream.write(_text(s))
            else:
                summaries.append(s)
            for p in s.problems:
                click.echo(printable(f"kdump: error: {p}"), err=True)
    if summaries:
        _table(out, summaries)
    return int(status)


def _summary(group) -> PartitionSummary:
    return next(summarize(group[1]))


def _or_dash(v) -> str:
    return "-" if v is None else str(v)


def _offsets(s: PartitionSummary, sep: str) -> str:
    """first-last, or "-" for a partition with no batches."""
    return "-" if s.first_offset is None else f"{s.first_offset}{sep}{s.last_offset}"


def _hist(s: PartitionSummary) -> str:
    parts = [f"{bucket_label(limit)}:{s.size_histogram[limit]}" for limit in (*SIZE_BUCKETS, None)
             if s.size_histogram[limit]]
    return " ".join(parts) or "-"


def _text(s: PartitionSummary) -> str:
    d = s.to_dict()
    lines = [
        printable(f"partition: {s.path}"),
        printable(f"  topic: {_or_dash(s.topic)}") + f" partition: {_or_dash(s.partition)} segments: {s.segments} "
                                                     f"bytes: {s.bytes}",
        f"  batches: {s.batches} records: {s.records} offsets: {_offsets(s, '-')}",
        f"  time: {_time(s.min_timestamp)} .. {_time(s.max_timestamp)}",
        f"  codecs: {', '.join(f'{k}={v}' for k, v in d['codecs'].items()) or '-'} "
        f"magic: {', '.join(f'v{k}={v}' for k, v in d['magic'].items()) or '-'}",
        f"  producers: {d['producers']} transactional: {d['transactional_share']:.1%} "
        f"control: {d['control_share']:.1%} invalid batches: {s.invalid_batches} trailing bytes: {s.trailing_bytes}",
        f"  batch sizes: {_hist(s)}",
    ]
    return "\n".join(lines) + "\n"


def _table(out: Output, summaries: list[PartitionSummary]) -> None:
    from rich.table import Table
    from rich.text import Text

    t = Table(title="kdump info", title_justify="left")
    # Partitions of several log dirs (brokers, JBOD disks) share names: show where each is.
    log_dirs = [os.path.dirname(os.path.normpath(s.path)) for s in summaries]
    several = len(set(log_dirs)) > 1
    if several:
        t.add_column("log dir", justify="left", overflow="fold")
    for name, just in (("partition", "left"), ("segments", "right"), ("bytes", "right"), ("batches", "right"),
                       ("records", "right"), ("offsets", "right"), ("time range (UTC)", "left"),
                       ("codecs", "left"), ("producers", "right"), ("txn/ctl", "right"), ("batch sizes", "left"),
                       ("state", "left")):
        t.add_column(name, justify=just)
    for s, log_dir in zip(summaries, log_dirs):
        d = s.to_dict()
        ok = not (s.problems or s.invalid_batches or s.trailing_bytes)
        name = printable(f"{s.topic}-{s.partition}" if s.topic else s.path)
        t.add_row(*([printable(log_dir)] if several else []), name, str(s.segments), f"{s.bytes:,}",
                  f"{s.batches:,}", f"{s.records:,}", _offsets(s, "–"),
                  f"{_time(s.min_timestamp)}\n{_time(s.max_timestamp)}",
                  ", ".join(f"{k} {v}" for k, v in d["codecs"].items()), str(d["producers"]),
                  f"{d['transactional_share']:.0%}/{d['control_share']:.0%}", _hist(s),
                  Text("ok", style="green") if ok else Text("damaged", style="red"))
    out.console().print(t)


__all__ = ["info", "KdumpError"]
