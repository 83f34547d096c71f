"""``kdump verify --engine spark``: the local verify's findings, with the segment scans and
the offset-continuity check run on Spark.

Three steps:

1. Every segment the local run would scan is scanned by ``kdump.check.scan`` in a Spark task
   (one task per segment: the broker-recovery rules need one ordered pass per file).
   This is where the time goes, most of all with ``--deep``.
2. Offset continuity across segments is a window over the scan results in Spark SQL:
   per partition directory, ordered by base offset, the last earlier segment that has
   offsets; a segment that starts at or below that segment's last offset overlaps it.
3. The per-directory cross-file checks (indexes, .txnindex, snapshots, leader epochs)
   run on the driver through ``kdump.check.partition`` with the scans from step 1 (they read
   side files and a few batches only). Its own overlap finding is replaced by the one
   from step 2, in the same place, so the reports equal the local ones.

Rendering, summary line and exit status are the local verify's.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.check.file_report import FileReport
from kdump.check.load_fates import verify_directory
from kdump.check.loss import summary_counts
from kdump.check.partition import VerifyOptions
from kdump.check.scan import ScanReport
from kdump.errors import StoreUnusable
from kdump.findings import OFFSET_OVERLAP as OVERLAP
from kdump.format.codecs import DEFAULT_LIMITS
from kdump.model import Finding
from kdump.storage import fs
from kdump.storage import logdir as K
from kdump.storage.logdir import LogFile
from kdump.storage.names import SWAP_SUFFIX


def overlap_finding(base_offset: int, first_offset: int | None, prev_name: str, prev_last: int) -> Finding | None:
    """The overlap check of one segment against the previous one that has offsets."""
    first = first_offset if first_offset is not None else base_offset
    start = min(base_offset, first)
    if start > prev_last:
        return None
    return Finding(OVERLAP, 0, first, f"segment overlaps the previous one: it starts at offset {start} but "
                                      f"{prev_name} ends at {prev_last}")


@dataclass
class PrecomputedOptions(VerifyOptions):
    """VerifyOptions whose ``scanned`` gives the Spark task's result (scanning here only as a fallback)."""

    results: dict = field(default_factory=dict)     # path -> ScanReport | KdumpError | Exception

    @contextmanager
    def scanned(self, f: LogFile) -> Iterator[tuple[ScanReport, Any]]:
        result = self.results.get(f.path)
        if result is None:
            with super().scanned(f) as got:
                yield got
            return
        if isinstance(result, BaseException):
            raise result
        yield result, None      # the bytes are on the executor: the index checks read them again


# -- step 1: which segments, scanned where ---------------------------------------------------------

def segments_to_scan(directory: str, requested: list[LogFile]) -> list[LogFile]:
    """The segments ``check_directory`` scans up front for these requested files."""
    from kdump.check.partition import directory_context

    context = directory_context(directory, requested)
    wanted = {f.path for f in requested}
    every_log = any(f.path in wanted for f in context if f.kind in (K.PRODUCER_SNAPSHOT, K.LEADER_EPOCH))
    indexed = {f.base_offset for f in context
               if f.kind in (K.INDEX, K.TIMEINDEX, K.TXNINDEX) and f.path in wanted}
    out = []
    for f in context:
        if f.kind in K.BATCH_KINDS and f.leftover in (None, SWAP_SUFFIX):
            sibling = f.leftover is None and (every_log or f.base_offset in indexed)
            if f.path in wanted or sibling:
                out.append(f)
    return out


def _scan_task(opts: VerifyOptions, item: tuple, counter=None) -> tuple:
    """Runs on an executor: one segment's scan, pickled, with the fields the window needs;
    ``counter`` (an accumulator: the driver's progress bar) gets the segment's size."""
    directory, f = item
    absolute = f._replace(path=fs.abspath(f.path)) if not os.path.isabs(f.path) else f
    try:
        report: ScanReport | BaseException = opts.scan(absolute)
    except (Exception, StoreUnusable) as e:  # noqa: BLE001 - re-raised on the driver where the local run would
        report = e
    ok = isinstance(report, ScanReport)
    if ok:
        report.file = f.path
    if counter is not None:
        try:
            counter.add(fs.getsize(absolute.path))
        except OSError:
            pass
    live = f.kind == K.LOG and f.leftover is None and f.base_offset is not None
    return (directory, f.path, os.path.basename(f.path), live and ok, f.base_offset,
            report.first_offset if ok else None, report.last_offset if ok else None,
            pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL))


SCAN_SCHEMA = ("dir string, path string, name string, live boolean, base_offset bigint, first_offset bigint, "
               "last_offset bigint, report binary")


# -- step 2: offsets across segments, in Spark ---------------------------------------------------

def scan_and_link(spark, items: list[tuple[str, LogFile]], opts: VerifyOptions, counter=None):
    """Scan ``items`` in Spark; return ({path: report or exception}, {path: overlap Finding}).
    ``counter``: an accumulator for the bytes scanned (``spark/progress.py``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not items:
        return {}, {}
    sc = spark.sparkContext
    task_opts = VerifyOptions(deep=opts.deep, max_message_size=opts.max_message_size,
                              index_interval_bytes=opts.index_interval_bytes, limits=opts.limits)
    rdd = sc.parallelize(items, min(len(items), 10_000)).map(lambda item: _scan_task(task_opts, item, counter))
    # Kept once computed: the window and the collect of the reports both read the scans.
    scans = spark.createDataFrame(rdd, SCAN_SCHEMA).persist()
    # The last earlier live segment (by base offset, per directory) that holds offsets.
    earlier = Window.partitionBy("dir").orderBy("base_offset").rowsBetween(Window.unboundedPreceding, -1)
    prev = F.last(F.when(F.col("live") & F.col("last_offset").isNotNull(),
                         F.struct(F.col("name"), F.col("last_offset"))), ignorenulls=True).over(earlier)
    start = F.least(F.col("base_offset"), F.coalesce(F.col("first_offset"), F.col("base_offset")))
    linked = (scans.where("live").withColumn("prev", prev)
              .withColumn("overlaps", F.col("prev").isNotNull() & (start <= F.col("prev.last_offset")))
              .select("path", "overlaps", "base_offset", "first_offset", "prev"))
    overlaps: dict[str, Finding] = {}
    for row in linked.where("overlaps").collect():
        finding = overlap_finding(row["base_offset"], row["first_offset"], row["prev"]["name"],
                                  row["prev"]["last_offset"])
        if finding is not None:
            overlaps[row["path"]] = finding
    results = {row["path"]: pickle.loads(row["report"]) for row in scans.select("path", "report").collect()}
    scans.unpersist()
    return results, overlaps


def _with_spark_overlap(report: FileReport, overlap: Finding | None) -> FileReport:
    """Put step 2's overlap finding where crosscheck puts its own: right after the scan's findings."""
    if report.scan is None or report.log is None or report.log.kind != K.LOG or report.log.leftover is not None:
        return report
    kept = [f for f in report.findings if f.kind != OVERLAP]
    if overlap is not None:
        at = min(len(report.scan.findings), len(kept))
        kept.insert(at, overlap)
    report.findings = kept
    return report


# -- the command ---------------------------------------------------------------------------------

def verify_spark(spark, paths, out, opts: VerifyOptions, strict: bool = False) -> int:
    from kdump.findings import report_status
    from kdump.render.diagnostics import report_error
    from kdump.render.progress import Progress
    from kdump.render.verify import summary_line, verify_renderer
    from kdump.run.verify_units import resolve_paths
    from kdump.spark.progress import scan_progress

    files, status, errors = resolve_paths(paths)
    for e in errors:
        report_error(e, hint=False)
    groups = K.directory_groups(files)
    items = [(directory, f) for directory, requested in groups for f in segments_to_scan(directory, requested)]
    scanned = {f.path for _, f in items}
    # The bar of the local run: the segments' bytes as Spark's tasks finish them, then the
    # other files as the driver checks them.
    with Progress.for_output(out, lambda: _total(files, items), "verify") as progress:
        with scan_progress(spark, progress, items) as counter:
            results, overlaps = scan_and_link(spark, items, opts, counter)
        local_opts = PrecomputedOptions(deep=opts.deep, max_message_size=opts.max_message_size,
                                        index_interval_bytes=opts.index_interval_bytes, limits=opts.limits,
                                        results=results)
        renderer = verify_renderer(out)
        reports = []
        try:
            for directory, requested in groups:
                for r in verify_directory(directory, requested, local_opts):
                    r = _with_spark_overlap(r, overlaps.get(r.file))
                    renderer.file(r)
                    reports.append(r)
                    if r.file not in scanned:
                        progress.done(r.file, r.size or 0)
                    status = max(status, report_status(r.status, r.findings if strict else ()))
        finally:
            renderer.finish()
    out.note(summary_line(summary_counts(reports, {}), None))
    return int(status)


def _total(files: list[LogFile], items: list[tuple[str, LogFile]]) -> int:
    from kdump.storage.mapped import file_size

    paths = {f.path for f in files} | {f.path for _, f in items}
    return sum(file_size(p) for p in paths)


def verify_on_spark(paths, master: str | None = None, conf: dict[str, str] | None = None, *, out=None,
               deep: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
               index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, limits=None, strict: bool = False) -> int:
    """``kdump verify --engine spark``: returns the exit status; output goes through ``out``
    (a ``kdump.render.output.Output``; text on stdout by default)."""
    from kdump.render.output import Output
    from kdump.spark.session import check_requirements, get_session, owns_session

    out = out if out is not None else Output(False, None)
    check_requirements()
    owned = owns_session()
    spark = get_session(master, conf)
    try:
        opts = VerifyOptions(deep=deep, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes,
                             limits=limits or DEFAULT_LIMITS)
        return verify_spark(spark, list(paths), out, opts, strict)
    finally:
        if owned:
            spark.stop()
