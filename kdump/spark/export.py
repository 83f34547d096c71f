"""``kdump export --engine spark``: the export planned on the driver, run as Spark tasks.

Two writers, the same rows (the local engine's plan, slices and row builders):

``arrow`` (default for a local or shared-filesystem ``--out``)
    Each task decodes its slices and writes its own Parquet (pyarrow) or NDJSON files
    into the hive directories, named by task number, exactly as the local engine would.
    Rows never cross into the JVM: on a small machine Spark's own Parquet writer costs
    more CPU than the decoding it parallelises (see bench/bench_export.py).
``spark`` (used for ``scheme://`` outputs such as hdfs:// or s3a://)
    The ``kafka-log`` source read into Spark's DataFrame writer: any Hadoop filesystem,
    Spark's commit protocol. Row and error counts come from an ``Observation``, so they
    cost no second pass; the first error rows are read back only when there are any.
"""

from __future__ import annotations

import os
import re
import time

from kdump.errors import StoreUnusable, UsageError
from kdump.export.local import MAX_REPORTED_ERRORS, ExportResult, json_error_summary, write_group
from kdump.export.slices import DEFAULT_SPLIT_BYTES, pack, plan, plan_files
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.state.txn_status import of_partition
from kdump.storage import fs, views
from kdump.storage.remote import is_remote

WRITERS = ("arrow", "spark")


def is_uri(path: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path) is not None and not path.startswith("file://")


def export_spark(spark, paths: list[str], out: str, fmt: str = "parquet",
                 partition_by: tuple[str, ...] = ("topic", "partition"), encoding: str = "base64",
                 split_bytes: int = DEFAULT_SPLIT_BYTES, overwrite: bool = False,
                 writer: str | None = None, limits: Limits = DEFAULT_LIMITS, remote=None,
                 quiet: bool = False) -> ExportResult:
    """``remote``: --remote-storage's (``kdump.run.tiered.Remote``): a tiered partition's whole
    log, its remote segments planned on the driver like local ones and read by the tasks from
    the store (a path every executor reads, or an s3:// or hdfs:// URL)."""
    started = time.monotonic()
    remote_out = is_remote(out)     # s3:// or hdfs://: tasks write with pyarrow, kdump commits
    writer = writer or ("spark" if is_uri(out) and not remote_out and remote is None else "arrow")
    if writer not in WRITERS:
        raise ValueError(f"writer must be one of {WRITERS}")
    paths = [fs.abspath(p) for p in paths]
    if remote is not None:
        from kdump.render.output import Output
        from kdump.run.tiered import whole_log

        if writer == "spark":
            raise UsageError("--remote-storage exports with --writer arrow (Spark's own writer plans the PATHS alone)")
        files, upper, unread, cuts = whole_log(paths, remote, Output(False, None, quiet=quiet))
        slices = plan_files(files, split_bytes, upper=upper, cuts=cuts)
        guard = [*paths, fs.abspath(remote.storage)]
    else:
        unread = []         # partition dirs that cannot be listed: the rest is exported, marked incomplete
        slices = plan(paths, split_bytes, unlisted=unread)      # usage errors surface here, before any job
        guard = paths
    if unread and writer == "spark":
        raise unread[0]     # Spark's own writer plans again and marks its output complete: refuse

    def write(target: str, overwrite: bool):
        if writer == "arrow":
            return _arrow_tasks(spark, slices, target, fmt, partition_by, encoding, split_bytes, limits)
        return _spark_writer(spark, paths, target, fmt, partition_by, encoding, split_bytes, overwrite, limits)

    if remote_out and writer == "arrow":
        from kdump.export.remote_out import staged_remote

        with staged_remote(out, overwrite, guard, unread) as target:   # complete only once _SUCCESS is there
            rows, errors, messages = write(target, True)
    elif is_uri(out):
        rows, errors, messages = write(out, overwrite)
    else:
        from kdump.export.outdir import staged

        with staged(out, overwrite, guard, unread) as tmp:      # a local --out appears only when done
            rows, errors, messages = write(tmp, True)
    return ExportResult(rows, errors, len(slices), time.monotonic() - started, messages, tuple(unread))


# -- writer "arrow": files written by the tasks ------------------------------------------------------

def _arrow_tasks(spark, slices, out, fmt, partition_by, encoding, split_bytes, limits):
    sc = spark.sparkContext
    groups = pack(slices, split_bytes, sc.defaultParallelism)
    remote_out = is_remote(out)
    if not remote_out:
        os.makedirs(out, exist_ok=True)
    rows = errors = 0
    messages: list[str] = []
    transformed = views.table()     # chunked remote objects (Aiven's): each task reads them itself
    if groups:
        def task(item):
            number, group = item
            if transformed:
                from kdump.storage import aiven_store  # noqa: F401 - names the layout's reader

                views.install(transformed)
            try:
                if remote_out:      # written on the executor's own disk, then copied up
                    return (*_write_group_remote(number, group, out, fmt, partition_by, encoding, limits=limits,
                                                 txn=of_partition), None)
                return (*write_group(number, group, out, fmt, partition_by, encoding, limits=limits, txn=of_partition),
                        None)
            except StoreUnusable as down:       # raised on the driver: one line, as in a local run
                return 0, 0, [], down

        for r, e, m, down in sc.parallelize(list(enumerate(groups)), len(groups)).map(task).collect():
            if down is not None:
                raise down
            rows += r
            errors += e
            messages += m[:max(0, MAX_REPORTED_ERRORS - len(messages))]
    if is_uri(out) and not remote_out:     # a local --out gets it from its staging directory
        # As Spark's committer does: readers may wait for this marker.
        with open(os.path.join(out, "_SUCCESS"), "w"):
            pass
    return rows, errors, messages


def _write_group_remote(number: int, group, out: str, *args, **kwargs):
    """``write_group`` of a task into ``out`` on a remote store: the task's files are written
    to its own disk, then copied up (a retried task writes the same names again)."""
    from kdump.export.remote_out import scratch_dir, upload_tree

    with scratch_dir() as tmp:
        result = write_group(number, group, tmp, *args, **kwargs)
        upload_tree(tmp, out)
        return result


# -- writer "spark": Spark's DataFrame writer ------------------------------------------------------

def _spark_writer(spark, paths, out, fmt, partition_by, encoding, split_bytes, overwrite, limits):
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from kdump.spark.source import RECORDS_FORMAT, register

    register(spark)
    reader = (spark.read.format(RECORDS_FORMAT).option("splitBytes", str(split_bytes))
              .option("minPartitions", str(spark.sparkContext.defaultParallelism))
              .option("maxDecompressed", str(limits.cap)).option("maxExpansion", str(limits.ratio)))
    observation = Observation("kdump_export")
    mode = "overwrite" if overwrite or not is_uri(out) else "errorifexists"     # local: a fresh staging dir
    if fmt == "parquet":
        df = reader.load(paths)
        df = df.observe(observation, F.count(F.lit(1)).alias("rows"), F.count("error").alias("errors"))
        writer = df.write.mode(mode).option("compression", "zstd")
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.parquet(out)
    else:
        df = reader.option("json", encoding).load(paths)
        df = df.observe(observation, F.count(F.lit(1)).alias("rows"),
                        F.count(F.when(F.col("is_error"), 1)).alias("errors"))
        writer = df.select(*partition_by, "line").write.mode(mode)
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.text(out)
    metrics = observation.get
    rows, errors = int(metrics.get("rows", 0)), int(metrics.get("errors", 0))
    return rows, errors, _first_errors(spark, out, fmt) if errors else []


def _first_errors(spark, out: str, fmt: str) -> list[str]:
    import json

    from pyspark.sql import functions as F

    if fmt == "parquet":
        rows = (spark.read.parquet(out).where(F.col("error").isNotNull())
                .select("file", "position", "error").limit(MAX_REPORTED_ERRORS).collect())
        return [f"{r['file']}:{r['position']}: {r['error']}" for r in rows]
    rows = (spark.read.text(out).where(F.instr("value", '"error":') > 0)
            .select("value").limit(MAX_REPORTED_ERRORS).collect())
    out_lines = []
    for r in rows:
        d = json.loads(r["value"])
        out_lines.append(json_error_summary(d.get("topic"), d.get("partition"), d.get("segment"),
                                            d.get("position"), d.get("error")))
    return out_lines


def export_on_spark(paths: list[str], out: str, master: str | None = None, conf: dict[str, str] | None = None,
                    **options) -> ExportResult:
    """Start (or reuse) a session, export, and stop the session if this call started it."""
    from kdump.spark.session import get_session, owns_session

    started = time.monotonic()
    owned = owns_session()
    spark = get_session(master, conf)
    try:
        result = export_spark(spark, paths, out, **options)
    finally:
        if owned:
            spark.stop()
    # The account counts the whole run: the JVM's start and stop are often most of it.
    return result._replace(startup=max(time.monotonic() - started - result.seconds, 0.0))


def run_spark_export(paths: list[str], out: str, *, master: str | None, conf: dict[str, str], writer: str | None,
                     json_flag: bool, quiet: bool, options: dict, remote=None) -> int:
    """``kdump export --engine spark``'s run: the export, then its account (as run.export's)."""
    from kdump.errors import ExitStatus
    from kdump.render.export import report_export
    from kdump.spark.session import check_requirements

    check_requirements()
    result = export_on_spark(paths, out, master, conf, writer=writer, remote=remote, quiet=quiet, **options)
    report_export(result, out, options["fmt"], "spark", json_flag, quiet)
    return int(result.status if result.status else ExitStatus.OK)
