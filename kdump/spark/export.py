"""``kdump export --engine spark``: the kafka-log source written out by Spark's writers.

The rows are those of the local engine (same plan, same slices, same row builders); only
the writer differs. Row and error counts come from an ``Observation`` on the written
DataFrame, so they cost no second pass; the first error rows are read back only when
there are any.
"""

from __future__ import annotations

import os
import time

from .. import export as core


def export_spark(spark, paths: list[str], out: str, fmt: str = "parquet",
                 partition_by: tuple[str, ...] = ("topic", "partition"), encoding: str = "base64",
                 split_bytes: int = core.DEFAULT_SPLIT_BYTES, overwrite: bool = False) -> core.ExportResult:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from .source import RECORDS_FORMAT, register

    started = time.monotonic()
    paths = [os.path.abspath(p) for p in paths]
    out = os.path.abspath(out)
    slices = core.plan(paths, split_bytes)          # usage errors surface here, before any job
    core.prepare_out(out, overwrite, paths)
    register(spark)
    reader = spark.read.format(RECORDS_FORMAT).option("splitBytes", str(split_bytes))
    observation = Observation("kdump_export")
    if fmt == "parquet":
        df = reader.load(paths)
        df = df.observe(observation, F.count(F.lit(1)).alias("rows"), F.count("error").alias("errors"))
        writer = df.write.mode("overwrite").option("compression", "zstd")
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.parquet(out)
    elif fmt == "ndjson":
        df = reader.option("json", encoding).load(paths)
        df = df.observe(observation, F.count(F.lit(1)).alias("rows"),
                        F.count(F.when(F.col("is_error"), 1)).alias("errors"))
        writer = df.select(*partition_by, "line").write.mode("overwrite")
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.text(out)
    else:
        raise ValueError(fmt)
    metrics = observation.get
    rows, errors = int(metrics.get("rows", 0)), int(metrics.get("errors", 0))
    messages = _first_errors(spark, out, fmt) if errors else []
    return core.ExportResult(rows, errors, len(slices), time.monotonic() - started, messages)


def _first_errors(spark, out: str, fmt: str) -> list[str]:
    from pyspark.sql import functions as F

    if fmt == "parquet":
        rows = (spark.read.parquet(out).where(F.col("error").isNotNull())
                .select("file", "position", "error").limit(core.MAX_REPORTED_ERRORS).collect())
        return [f"{r['file']}:{r['position']}: {r['error']}" for r in rows]
    rows = (spark.read.text(out).where(F.instr("value", '"error":') > 0)
            .select("value").limit(core.MAX_REPORTED_ERRORS).collect())
    return [r["value"] for r in rows]


def run_export(paths: list[str], out: str, master: str | None = None, conf: dict[str, str] | None = None,
               **options) -> core.ExportResult:
    """Start (or reuse) a session, export, and stop the session if this call started it."""
    from .session import get_session, owns_session

    owned = owns_session()
    spark = get_session(master, conf)
    try:
        return export_spark(spark, paths, out, **options)
    finally:
        if owned:
            spark.stop()
