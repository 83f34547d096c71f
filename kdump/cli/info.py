"""``kdump info``: a summary per partition, the first picture of a log dir."""

from __future__ import annotations

import datetime as dt

import click

from ..errors import ExitStatus, KdumpError
from ..logdir import BATCH_KINDS, resolve
from ..summary import SIZE_BUCKETS, PartitionSummary, bucket_label, summarize
from .options import Output, jobs_option, jobs_or_default, output_options, paths_argument


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@jobs_option
@output_options
def info(paths, jobs, json_flag, fmt, color, quiet):
    """Summarise partitions: segments, bytes, batches, records, offset and time ranges,
    codecs, producers, transactional and control share, batch-size histogram.

    Reads batch headers only, so it is fast even on large log dirs.
    """
    out = Output(json_flag, fmt, color, quiet)
    from ..logdir import directory_groups
    from ..parallel import ordered_map

    files = resolve(paths, kinds=BATCH_KINDS)
    status = ExitStatus.OK
    summaries = []
    for s in ordered_map(_summary, directory_groups(files), jobs_or_default(jobs)):
        if s.problems or s.invalid_batches or s.trailing_bytes:
            status = ExitStatus.DAMAGE
        if out.format == "json":
            from ..render.jsonout import dumps

            out.stream.write(dumps(s.to_dict()) + "\n")
        elif out.format == "text":
            out.stream.write(_text(s))
        else:
            summaries.append(s)
        for p in s.problems:
            click.echo(f"kdump: error: {p}", err=True)
    if summaries:
        _table(out, summaries)
    return int(status)


def _summary(group) -> PartitionSummary:
    return next(summarize(group[1]))


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _hist(s: PartitionSummary) -> str:
    parts = [f"{bucket_label(limit)}:{s.size_histogram[limit]}" for limit in (*SIZE_BUCKETS, None)
             if s.size_histogram[limit]]
    return " ".join(parts) or "-"


def _text(s: PartitionSummary) -> str:
    d = s.to_dict()
    lines = [
        f"partition: {s.path}",
        f"  topic: {s.topic} partition: {s.partition} segments: {s.segments} bytes: {s.bytes}",
        f"  batches: {s.batches} records: {s.records} offsets: {s.first_offset}-{s.last_offset}",
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
    for name, just in (("partition", "left"), ("segments", "right"), ("bytes", "right"), ("batches", "right"),
                       ("records", "right"), ("offsets", "right"), ("time range (UTC)", "left"),
                       ("codecs", "left"), ("producers", "right"), ("txn/ctl", "right"), ("batch sizes", "left"),
                       ("state", "left")):
        t.add_column(name, justify=just)
    for s in summaries:
        d = s.to_dict()
        ok = not (s.problems or s.invalid_batches or s.trailing_bytes)
        t.add_row(f"{s.topic}-{s.partition}" if s.topic else s.path, str(s.segments), f"{s.bytes:,}",
                  f"{s.batches:,}", f"{s.records:,}", f"{s.first_offset}–{s.last_offset}",
                  f"{_time(s.min_timestamp)}\n{_time(s.max_timestamp)}",
                  ", ".join(f"{k} {v}" for k, v in d["codecs"].items()), str(d["producers"]),
                  f"{d['transactional_share']:.0%}/{d['control_share']:.0%}", _hist(s),
                  Text("ok", style="green") if ok else Text("damaged", style="red"))
    out.console().print(t)


__all__ = ["info", "KdumpError"]
