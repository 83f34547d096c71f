"""``kdump verify``: is it intact? Read-only unless ``--truncate`` is given."""

from __future__ import annotations

import functools
import importlib.util
import os

import click

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.errors import ExitStatus, KdumpError, UsageError
from kdump.findings import ANOMALY
from kdump.format.codecs import DEFAULT_LIMITS, limits_for
from kdump.storage.segment import file_size
from kdump.cli.options import Output, force_option, jobs_option, jobs_or_default, limits_option, output_options, paths_argument


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
@click.option("--strict", is_flag=True,
              help="Also exit 1 for anomalies: odd states a broker accepts as they are (an index entry naming an "
                   "offset compaction removed, a checkpoint lagging the log, segments overlapping after an "
                   "interrupted clean).")
@force_option
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Run here, or as a Spark job (needs the 'spark' extra).")
@click.option("--master", metavar="URL", help="Spark master URL for --engine spark (e.g. local[4], spark://host:7077).")
@click.option("--problems", is_flag=True,
              help="List only the files with findings (the summary on stderr still counts every file).")
@limits_option
@jobs_option
@output_options
def verify(paths, deep, max_message_size, index_interval_bytes, truncate, broker_cut, strict, force, engine, master,
           problems, max_decompressed, max_expansion, jobs, json_flag, fmt, color, quiet):
    """Check segments, indexes and side files for damage.

    PATHS are files, partition directories or log directories. Every segment is walked
    batch by batch (framing, size, magic, CRC, offsets; records too with --deep) and
    checked against its neighbours: offsets across segments, .index/.timeindex,
    .txnindex against the transaction markers, producer snapshot CRCs and the
    leader-epoch-checkpoint. Leftover .cleaned/.swap/.deleted files and orphan indexes
    are noted, not counted as damage: the broker finishes them at startup.

    Each file gets a line (or with --json one object: file, kind, status, size,
    valid_bytes, batches, records, first_offset, last_offset, findings); valid_bytes is
    where a broker's recovery would cut the segment. Each finding has a class: damage
    (data a broker would cut, delete or fail to load, or that readers lose), anomaly (odd
    but accepted by a broker as it is), info (a state the broker finishes at startup).
    A summary goes to stderr. The text and table views show a run of findings of one
    kind in one file as one line (count, byte and offset ranges); --json lists each. On
    a terminal the table lists the files with findings and sums up the rest; --problems
    lists only those anywhere.

    With --truncate, damage in a segment that later segments follow is cut the same way,
    and the later segments are moved into kdump-quarantine-<time>/ inside the partition
    (a broker's recovery deletes them): no offset gap is left behind.

    \b
    Exit status: 0 clean or only anomalies, 1 damage found (also when --truncate
    repaired it; anomalies too with --strict), 3 could not complete (unreadable file,
    codec library missing).
    """
    out = Output(json_flag, fmt, color, quiet)
    out.problems_only = problems
    limits = limits_for(max_decompressed, max_expansion)
    if force and not truncate:
        raise UsageError("--force applies only with --truncate")
    if engine == "spark":
        if truncate:
            raise UsageError("--truncate runs locally only; drop --engine spark to repair")
        return _spark(paths, deep, max_message_size, index_interval_bytes, master, out, limits, strict)
    if master:
        raise UsageError("--master is for --engine spark")
    return run_verify(paths, out, deep=deep, max_message_size=max_message_size,
                      index_interval_bytes=index_interval_bytes, truncate=truncate, broker_cut=broker_cut,
                      strict=strict, limits=limits, force=force, jobs=jobs_or_default(jobs))


def _spark(paths, deep, max_message_size, index_interval_bytes, master, out, limits, strict=False) -> int:
    if importlib.util.find_spec("kdump.spark.verify") is None or importlib.util.find_spec("pyspark") is None:
        raise UsageError("the Spark engine needs the 'spark' extra", hint="pip install 'kdump[spark]'")
    from kdump.spark.verify import run_verify as spark_verify

    return spark_verify(list(paths), master, out=out, deep=deep, max_message_size=max_message_size,
                        index_interval_bytes=index_interval_bytes, limits=limits, strict=strict)


def run_verify(paths, out: Output, *, deep: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
               index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, truncate: bool = False,
               broker_cut: bool = False, strict: bool = False, limits=None, force: bool = False,
               jobs: int = 1) -> int:
    from kdump.check.partition import VerifyOptions, summarize
    from kdump.storage.logdir import directory_groups
    from kdump.parallel import in_process, ordered_map
    from kdump.render.verify import summary_line, verify_renderer
    from kdump.cli import error_line, output_cut
    from kdump.cli.progress import Progress

    opts = VerifyOptions(deep=deep, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes,
                         broker_cut=broker_cut, limits=limits or DEFAULT_LIMITS)
    files, status = resolve_paths(paths, jobs)
    groups = directory_groups(files)
    if truncate and len({os.path.realpath(d) for d, _ in groups}) < len(groups):
        jobs = 1        # a directory named in pieces: repair it in one process
    check = functools.partial(_directory, opts=opts, truncate=truncate, force=force)
    if not in_process(groups, jobs):
        check = functools.partial(_listed, check)     # a worker sends a directory's events at once
    renderer = verify_renderer(out)
    counts = summarize([])
    changes: list | None = [] if truncate else None
    try:
        with Progress.for_output(out, lambda: sum(file_size(f.path) for f in files), "verify") as progress:
            for events in ordered_map(check, groups, jobs):
                done = []
                for kind, x in events:
                    if kind == REPORT:
                        status = max(status, report_status(x.status, x.findings if strict else ()))
                        renderer.file(x)
                        done.append(x)
                        progress.done(x.file, x.size or 0)
                    elif kind == ERROR:
                        click.echo(error_line(x), err=True)
                        status = max(status, x.exit_code)
                    else:
                        changes += _notes(out, x)
                        if kind == REPAIRED and any(c.action == "skipped" for c in x):
                            status = max(status, ExitStatus.DAMAGE)
                for k, v in summarize(done).items():
                    counts[k] += v
        renderer.finish()
    except BrokenPipeError:
        return output_cut(status)         # nothing more repaired: the run stopped here
    out.note(summary_line(counts, None if changes is None else len(changes)))
    return int(status)


# What --truncate may rewrite: a directory holding none of these (a log dir's own checkpoints)
# is read without taking its lock.
WRITABLE = ("log", "index", "timeindex", "txnindex")

# What checking one directory gives, in the order it is printed: a file's report, an error,
# the stale temporary files removed on locking, the changes of the repair.
REPORT, ERROR, CLEANED, REPAIRED = "report", "error", "cleaned", "repaired"


def _directory(group, opts, truncate: bool, force: bool):
    """One directory, a unit of ``-j``: with --truncate it is locked before it is read and
    until it is repaired, by this process alone. Yields (kind, value) events."""
    from kdump.check.partition import verify_files
    from kdump.storage.logdir import take_listing
    from kdump.storage.writelock import Locks

    directory, files = group
    with Locks(force) as locks:
        if truncate and any(f.kind in WRITABLE for f in files):
            try:
                yield CLEANED, locks.take(directory)
            except KdumpError as e:
                yield ERROR, e
                return
            take_listing(directory)     # listed before the lock: list it again
        done = []
        for r in verify_files(files, opts):
            r = _light(r)
            yield REPORT, r
            done.append(r)
        if truncate:
            from kdump.repair.truncate import truncate_reports

            try:
                yield REPAIRED, truncate_reports(done, opts)
            except KdumpError as e:
                yield ERROR, e


def _listed(check, group) -> list:
    return list(check(group))


def _notes(out: Output, changes: list) -> list:
    from kdump.render.verify import change_line

    for c in changes:
        out.note(change_line(c))
    return changes


def resolve_paths(paths, jobs: int = 1) -> tuple[list, ExitStatus]:
    """The files under PATHS, each once (by real path: a file named twice is checked and
    repaired once), and the exit status so far; a PATH that cannot be read is reported."""
    from kdump.storage.logdir import resolve
    from kdump.cli import error_line

    status = ExitStatus.OK
    files = []
    seen: set[str] = set()
    dirs: dict[str, str] = {}
    for path in paths:
        try:
            found = resolve([path], jobs=jobs)
        except KdumpError as e:
            click.echo(error_line(e), err=True)
            status = max(status, e.exit_code)
            continue
        if os.path.isdir(path):
            from kdump.check.logless import logless_dirs

            for e in logless_dirs(found):
                click.echo(error_line(e), err=True)
                status = max(status, e.exit_code)
        if len(paths) == 1:
            return found, status        # one PATH lists each file once: no need to resolve links
        for f in found:
            key = _real(f.path, dirs)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, status


def _real(path: str, dirs: dict[str, str]) -> str:
    """``os.path.realpath(path)``, resolving each directory once (a partition may hold
    100,000 segments) and only a file that is itself a link in full."""
    if os.path.islink(path):
        return os.path.realpath(path)
    directory, name = os.path.split(path)
    real = dirs.get(directory)
    if real is None:
        real = dirs[directory] = os.path.realpath(directory)
    return os.path.join(real, name)


def report_status(s: str, strict_findings=()) -> ExitStatus:
    """The exit status a file report's status gives; with --strict its anomalies count too."""
    status = {"ok": ExitStatus.OK, "unreadable": ExitStatus.INCOMPLETE}.get(s, ExitStatus.DAMAGE)
    if status == ExitStatus.OK and any(f.cls == ANOMALY for f in strict_findings):
        return ExitStatus.DAMAGE
    return status


def _light(r):
    """Keep what the summary and the repair need, not the per-segment transaction lists."""
    if r.scan is not None:
        r.scan.txn_events = []
        r.scan.epochs = []
    return r
