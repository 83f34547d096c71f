"""``kdump verify``: is it intact? Read-only unless ``--truncate`` is given."""

from __future__ import annotations

import importlib.util
import os

import click

from ..errors import ExitStatus, KdumpError, UsageError
from ..format.codecs import DEFAULT_LIMITS, limits_for
from ..scan import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from ..segment import file_size
from .options import Output, jobs_option, jobs_or_default, limits_option, output_options, paths_argument


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--deep", is_flag=True, help="Also decode every record (decompression, sizes, record offsets).")
@click.option("--max-message-size", type=click.IntRange(min=61), default=DEFAULT_MAX_MESSAGE_SIZE,
              show_default=True,
              help="Largest plausible batch, in bytes (Kafka's message.max.bytes default). A larger batch with a "
                   "valid CRC is reported but kept, as the broker keeps it.")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=DEFAULT_INDEX_INTERVAL_BYTES,
              show_default=True, help="The topic's index.interval.bytes, used to follow the broker's recovery.")
@click.option("--truncate", is_flag=True,
              help="Cut each damaged segment at its last good batch (where a broker's recovery would, or earlier "
                   "where kdump finds damage the broker does not check), saving the cut bytes beside it as "
                   "<segment>.corrupt-<position>, and rebuild indexes that disagree with their log. No prompt: "
                   "the flag is the consent.")
@click.option("--broker-cut", is_flag=True,
              help="With --truncate: cut only where a broker's recovery would, keeping damage it does not detect "
                   "(offset regressions, undecodable records with a valid CRC).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Run here, or as a Spark job (needs the 'spark' extra).")
@click.option("--master", metavar="URL", help="Spark master URL for --engine spark (e.g. local[4], spark://host:7077).")
@limits_option
@jobs_option
@output_options
def verify(paths, deep, max_message_size, index_interval_bytes, truncate, broker_cut, engine, master, max_decompressed,
           max_expansion, jobs, json_flag, fmt, color, quiet):
    """Check segments, indexes and side files for damage.

    PATHS are files, partition directories or log directories. Every segment is walked
    batch by batch (framing, size, magic, CRC, offsets; records too with --deep) and
    checked against its neighbours: offsets across segments, .index/.timeindex,
    .txnindex against the transaction markers, producer snapshot CRCs and the
    leader-epoch-checkpoint. Leftover .cleaned/.swap/.deleted files and orphan indexes
    are noted, not counted as damage: the broker finishes them at startup.

    Each file gets a line (or with --json one object: file, kind, status, size,
    valid_bytes, batches, records, first_offset, last_offset, findings); valid_bytes is
    where a broker's recovery would cut the segment. A summary goes to stderr.

    \b
    Exit status: 0 clean, 1 damage found (also when --truncate repaired it),
    3 could not complete (unreadable file, codec library missing).
    """
    out = Output(json_flag, fmt, color, quiet)
    limits = limits_for(max_decompressed, max_expansion)
    if engine == "spark":
        if truncate:
            raise UsageError("--truncate runs locally only; drop --engine spark to repair")
        return _spark(paths, deep, max_message_size, index_interval_bytes, master, out, limits)
    if master:
        raise UsageError("--master is for --engine spark")
    return run_verify(paths, out, deep=deep, max_message_size=max_message_size,
                      index_interval_bytes=index_interval_bytes, truncate=truncate, broker_cut=broker_cut,
                      limits=limits, jobs=jobs_or_default(jobs))


def _spark(paths, deep, max_message_size, index_interval_bytes, master, out, limits) -> int:
    if importlib.util.find_spec("kdump.spark.verify") is None or importlib.util.find_spec("pyspark") is None:
        raise UsageError("the Spark engine needs the 'spark' extra", hint="pip install 'kdump[spark]'")
    from ..spark.verify import run_verify as spark_verify

    return spark_verify(list(paths), master, out=out, deep=deep, max_message_size=max_message_size,
                        index_interval_bytes=index_interval_bytes, limits=limits)


def run_verify(paths, out: Output, *, deep: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
               index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, truncate: bool = False,
               broker_cut: bool = False, limits=None, jobs: int = 1) -> int:
    from ..crosscheck import VerifyOptions, check_directory, summarize
    from ..logdir import directory_groups
    from ..parallel import ordered_map
    from ..render.verify import change_line, summary_line, verify_renderer
    from . import error_line
    from .progress import Progress

    opts = VerifyOptions(deep=deep, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes,
                         broker_cut=broker_cut, limits=limits or DEFAULT_LIMITS)
    files, status = resolve_paths(paths)
    groups = directory_groups(files)
    if truncate and len({os.path.realpath(d) for d, _ in groups}) < len(groups):
        jobs = 1        # a directory named in pieces: repair it in one process

    def check(group):
        # One directory: its reports, and with --truncate its repair (by this worker alone).
        reports = [_light(r) for r in check_directory(*group, opts)]
        if not truncate:
            return reports, None, None
        from ..repair import repair_reports

        try:
            return reports, repair_reports(reports, opts), None
        except KdumpError as e:
            return reports, [], e

    renderer = verify_renderer(out)
    counts = summarize([])
    changes: list | None = [] if truncate else None
    failed: list[KdumpError] = []
    try:
        with Progress.for_output(out, lambda: sum(file_size(f.path) for f in files), "verify") as progress:
            for reports, changed, error in ordered_map(check, groups, jobs):
                for r in reports:
                    renderer.file(r)
                    status = max(status, report_status(r.status))
                    progress.file_done(r.size or 0)
                for k, v in summarize(reports).items():
                    counts[k] += v
                if changed:
                    changes.extend(changed)
                if error is not None:
                    failed.append(error)
    finally:
        renderer.finish()
    for e in failed:
        click.echo(error_line(e), err=True)
        status = max(status, e.exit_code)
    if changes is not None:
        for c in changes:
            out.note(change_line(c))
        if any(c.action == "skipped" for c in changes):
            status = max(status, ExitStatus.DAMAGE)
    out.note(summary_line(counts, None if changes is None else len(changes)))
    return int(status)


def resolve_paths(paths) -> tuple[list, ExitStatus]:
    """The files under PATHS, each once (by real path: a file named twice is checked and
    repaired once), and the exit status so far; a PATH that cannot be read is reported."""
    from ..logdir import resolve
    from . import error_line

    status = ExitStatus.OK
    files = []
    seen: set[str] = set()
    for path in paths:
        try:
            found = resolve([path])
        except KdumpError as e:
            click.echo(error_line(e), err=True)
            status = max(status, e.exit_code)
            continue
        if len(paths) == 1:
            return found, status        # one PATH lists each file once: no need to resolve links
        for f in found:
            key = os.path.realpath(f.path)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, status


def report_status(s: str) -> ExitStatus:
    """The exit status a file report's status gives."""
    return {"ok": ExitStatus.OK, "unreadable": ExitStatus.INCOMPLETE}.get(s, ExitStatus.DAMAGE)


def _light(r):
    """Keep what the summary and the repair need, not the per-segment transaction lists."""
    if r.scan is not None:
        r.scan.txn_events = []
        r.scan.epochs = []
    return r
