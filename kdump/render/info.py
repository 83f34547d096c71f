"""What ``kdump info`` prints: a block of text lines, or a table per log dir, per partition summary."""

from __future__ import annotations

import os

from kdump.render.escape import printable
from kdump.render.state import when as _time
from kdump.storage import fs
from kdump.survey.summary import SIZE_BUCKETS, PartitionSummary, bucket_label


def _or_dash(v) -> str:
    return "-" if v is None else str(v)


def _offsets(s: PartitionSummary, sep: str) -> str:
    """first-last, or "-" for a partition with no batches."""
    return "-" if s.first_offset is None else f"{s.first_offset}{sep}{s.last_offset}"


def _hist(s: PartitionSummary) -> str:
    parts = [f"{bucket_label(limit)}:{s.size_histogram[limit]}" for limit in (*SIZE_BUCKETS, None)
             if s.size_histogram[limit]]
    return " ".join(parts) or "-"


def info_text(s: PartitionSummary) -> str:
    """The text view: a block of lines per partition."""
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


INFO_COLUMNS = (("partition", "left", 0), ("segments", "right", 5), ("bytes", "right", 3), ("batches", "right", 6),
                ("records", "right", 4), ("offsets", "right", 0), ("time range (UTC)", "left", 2),
                ("codecs", "left", 7), ("producers", "right", 8), ("txn/ctl", "right", 9),
                ("batch sizes", "left", 10), ("state", "left", 0))


def info_table(console, summaries: list[PartitionSummary]) -> None:
    """A table per log dir, the log dir said once above it (partitions of several log dirs,
    brokers or JBOD disks, share names); columns fit the terminal (kdump.tables)."""
    from rich.text import Text

    from kdump.tables import Col, print_table

    cols = [Col(n, j, d, fold=n in ("batch sizes", "codecs"), join=" .. " if n.startswith("time") else " ")
            for n, j, d in INFO_COLUMNS]
    by_dir: dict[str, list[tuple]] = {}
    for s in summaries:
        d = s.to_dict()
        ok = not (s.problems or s.invalid_batches or s.trailing_bytes)
        name = printable(f"{s.topic}-{s.partition}" if s.topic else os.path.basename(fs.normpath(s.path)))
        by_dir.setdefault(os.path.dirname(fs.normpath(s.path)), []).append((
            name, str(s.segments), f"{s.bytes:,}", f"{s.batches:,}", f"{s.records:,}", _offsets(s, "–"),
            "-" if s.min_timestamp is None else f"{_time(s.min_timestamp)}\n{_time(s.max_timestamp)}",
            ", ".join(f"{k} {v}" for k, v in d["codecs"].items()), str(d["producers"]),
            f"{d['transactional_share']:.0%}/{d['control_share']:.0%}", _hist(s),
            Text("ok", style="green") if ok else Text("damaged", style="red")))
    for log_dir, rows in by_dir.items():
        print_table(console, cols, rows, printable(f"kdump info: {log_dir or '.'}"))
