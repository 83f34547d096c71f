"""Options shared by every command, as decorators, and the choice of output format."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

FORMATS = ("text", "table", "json")
_SIZE_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


class ByteSize(click.ParamType):
    """A byte count: ``1048576``, ``512K``, ``64MiB``, ``2G`` (binary units)."""

    name = "size"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        digits = text.rstrip("kmgib")
        unit = text[len(digits):]
        if not digits.isdigit() or unit not in _SIZE_UNITS:
            self.fail(f"{value!r} is not a size (e.g. 1048576, 512K, 64MiB, 2G)", param, ctx)
        return int(digits) * _SIZE_UNITS[unit]


def limits_option(f: Callable) -> Callable:
    """--max-decompressed / --max-expansion: how far one compressed payload may expand;
    --max-records-per-batch: how many records a batch may declare."""
    from kdump.format.codecs import DEFAULT_CAP, DEFAULT_FLOOR, DEFAULT_MAX_RECORDS, DEFAULT_RATIO

    f = click.option("--max-records-per-batch", type=click.IntRange(min=0), default=DEFAULT_MAX_RECORDS,
                     show_default=True, metavar="N",
                     help="Refuse to decode a batch that declares more than N records (or a v0/v1 compressed "
                          "message holding more inner messages): a finding on the batch. "
                          "The default is the most a batch written by Kafka can hold ((2^31-1)/7: Kafka counts a "
                          "batch's uncompressed bytes in an int32, and a record takes 7 bytes at least).")(f)

    f = click.option("--max-expansion", type=click.IntRange(min=1), default=DEFAULT_RATIO, show_default=True,
                     metavar="RATIO",
                     help=f"Refuse a compressed payload that expands more than RATIO times its size (payloads "
                          f"up to {DEFAULT_FLOOR >> 20}MiB, or --max-decompressed if lower, are always allowed).")(f)
    f = click.option("--max-decompressed", type=ByteSize(), default=DEFAULT_CAP, show_default="1GiB",
                     help="Refuse to expand one compressed payload beyond this size. Either limit gives a finding "
                          "on the batch, never an allocation of that size.")(f)
    return f


def force_option(f: Callable) -> Callable:
    """--force on the writing commands: write even while a broker holds the log dir's .lock."""
    return click.option("--force", is_flag=True,
                        help="Write even while a running Kafka broker holds the log dir's .lock (refused otherwise). "
                             "Two kdump runs never write to the same partition at once, --force or not.")(f)


def output_options(f: Callable) -> Callable:
    """--json / --format / --color / --quiet, the same on every command; --io-limit (every
    command with these options reads)."""
    f = io_limit_option(f)
    f = click.option("-q", "--quiet", is_flag=True, help="No progress or notes on stderr.")(f)
    f = click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
                     help="Colour in tables (NO_COLOR is respected).")(f)
    f = click.option("--format", "fmt", type=click.Choice(FORMATS),
                     help="Output format [default: table on a terminal, text when piped].")(f)
    f = click.option("--json", "json_flag", is_flag=True,
                     help="NDJSON on stdout: one object a line (= --format json).")(f)
    return f


def jobs_option(f: Callable) -> Callable:
    """-j/--jobs: worker processes for a run over several partitions."""
    return click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                        help="Spread the partitions over N worker processes [default: the number of CPUs]; the "
                             "output is the same, in the same order, as with -j 1.")(f)


# Set when a PATH is an hdfs:// URL: the command runs in one process (the HDFS client's
# threads do not survive fork, and a forked worker could wait on them forever).
_one_process = {"hdfs": False}


def jobs_or_default(jobs: int | None) -> int:
    if _one_process["hdfs"]:
        return 1
    if jobs is not None:
        return jobs
    from kdump.jobs.fanout import default_jobs

    return default_jobs()


def local_urls(ctx: Any, param: Any, value: Any) -> Any:
    """PATHS as the readers take them: ``file:///x`` is the local path ``/x``; ``s3://``,
    ``s3a://`` and ``hdfs://`` URLs stay URLs (``kdump.storage.remote``)."""
    from kdump.storage.fs import local_path

    if value is None:
        return value
    _one_process["hdfs"] = any(v.startswith("hdfs://") for v in ((value,) if isinstance(value, str) else value))
    return local_path(value) if isinstance(value, str) else tuple(local_path(v) for v in value)


def paths_argument(f: Callable) -> Callable:
    return click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str), callback=local_urls)(f)


class Rate(click.ParamType):
    """A rate in MB/s above 0: ``50``, ``12.5``."""

    name = "rate"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            rate = float(value)
        except (TypeError, ValueError):
            rate = float("nan")
        if not 0 < rate < float("inf"):
            self.fail(f"{value!r} is not a rate above 0 in MB/s (e.g. 50, 12.5)", param, ctx)
        return rate


def _set_io_limit(ctx: Any, param: Any, value: Any) -> None:
    from kdump.storage.gentle import set_io_limit

    set_io_limit(value)     # None too: a run without the option reads at full speed


def local_reads_only(engine: str) -> None:
    """--io-limit holds for kdump's own processes; Spark's executors read on their own."""
    from kdump.errors import UsageError
    from kdump.storage.gentle import active

    if engine == "spark" and active():
        raise UsageError("--io-limit holds for --engine local only (Spark's executors read on their own)")


def io_limit_option(f: Callable) -> Callable:
    """--io-limit MB/s on every reading command (kdump.storage.gentle): set as it is parsed,
    before anything is read or any worker forked."""
    return click.option("--io-limit", type=Rate(), metavar="MB/S",
                        callback=_set_io_limit, expose_value=False, is_eager=False,
                        help="Read at most MB/S megabytes (10^6 bytes) a second, all -j workers together, and "
                             "drop what was read from the page cache behind the reader, except the pages that "
                             "were cached before (a live broker's): for a run beside a broker in production.")(f)
