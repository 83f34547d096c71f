"""The kafka-log data sources against the CLI's decoding, splitting, pushdown and damage."""

from __future__ import annotations

import os
import shutil

import pytest
from sparkkit import GENERATED, cli_records, digest, fixture_roots, make_segment

from kdump.encode import build_v2_batch
from kdump.export.columns import record_batches
from kdump.export.schema import BATCH_COLUMNS, JSON_COLUMNS, RECORD_COLUMNS, arrow_schema
from kdump.export.slices import DEFAULT_SPLIT_BYTES, plan

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SMALL_SPLIT = 64 << 10


def _table(df):
    return df.toArrow()


def _sorted_rows(table, columns=("file", "position", "offset")):
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: tuple((r[c] is None, r[c] or 0) for c in columns))


def test_schemas_are_pysparks_arrow_schemas(spark):
    from pyspark.sql.pandas.types import to_arrow_schema

    for fmt, options, columns in (("kafka-log", {}, RECORD_COLUMNS),
                                  ("kafka-log", {"json": "base64"}, JSON_COLUMNS),
                                  ("kafka-log-batches", {}, BATCH_COLUMNS)):
        df = spark.read.format(fmt).options(**options).load(str(GENERATED))
        assert to_arrow_schema(df.schema, timezone="UTC") == arrow_schema(columns), fmt


def test_whole_fixture_tree_gives_the_rows_the_cli_decodes(spark):
    roots = fixture_roots()
    table = _table(spark.read.format("kafka-log").load(roots)
                   .select("file", "segment", "offset", "key", "value", "error"))
    ours: dict[str, list[tuple]] = {}
    errors = []
    for r in table.to_pylist():
        if r["error"] is not None:
            errors.append(r)
            continue
        ours.setdefault(os.path.dirname(r["file"]), []).append((r["segment"], r["offset"], r["key"], r["value"]))
    theirs = cli_records(roots)
    assert set(ours) == set(theirs)
    for directory in theirs:
        assert digest(ours[directory]) == digest(theirs[directory]), directory
    assert sum(len(v) for v in ours.values()) > 40_000
    # The only damaged fixture is the torn tail, reported as one error row where the walk stopped.
    assert [(os.path.basename(os.path.dirname(r["file"])), r["offset"]) for r in errors] == [("torn-tail-0", 6)]


def test_a_split_segment_gives_the_same_rows_as_one_task(spark, tmp_path):
    log = make_segment(tmp_path / "one-0", batches=600, seed=3)
    assert log.stat().st_size > 10 * SMALL_SPLIT
    split = spark.read.format("kafka-log").option("splitBytes", str(SMALL_SPLIT)).load(str(log))
    whole = spark.read.format("kafka-log").option("splitBytes", "0").load(str(log))
    assert split.rdd.getNumPartitions() >= 8
    assert whole.rdd.getNumPartitions() == 1
    a, b = _sorted_rows(_table(split)), _sorted_rows(_table(whole))
    assert len(a) == len(b) > 5000
    assert a == b
    assert all(r["error"] is None for r in a)
    # ... and the same as the local engine's reader.
    local = _local_rows([str(log)], SMALL_SPLIT)
    assert [(r["offset"], r["key"], r["value"]) for r in a] == \
        sorted(((r["offset"], r["key"], r["value"]) for r in local), key=lambda t: t[0])


def _local_rows(paths, split_bytes=DEFAULT_SPLIT_BYTES):
    return [r for sl in plan(paths, split_bytes) for b in record_batches(sl) for r in b.to_pylist()]


def test_pushdown_prunes_partitions_and_results_stay_correct(spark, big_dir):
    paths = [str(big_dir), str(GENERATED)]
    full = spark.read.format("kafka-log").option("splitBytes", str(SMALL_SPLIT)).load(paths)
    everything = _local_rows(paths)
    total_tasks = full.rdd.getNumPartitions()
    offsets = sorted(r["offset"] for r in everything if r["topic"] == "big" and r["partition"] == 1)
    low, high = offsets[len(offsets) // 3], offsets[len(offsets) // 3 + 300]

    q = full.where(f"topic = 'big' AND partition = 1 AND offset BETWEEN {low} AND {high}")
    plan = q._sc._jvm.PythonSQLUtils.explainString(q._jdf.queryExecution(), "formatted")
    assert "PushedFilters: [EqualTo(topic,big), EqualTo(partition,1), GreaterThanOrEqual(offset," in plan
    assert q.rdd.getNumPartitions() < total_tasks // 4
    got = sorted((r["offset"], r["key"]) for r in _table(q.select("offset", "key")).to_pylist())
    want = sorted((r["offset"], r["key"]) for r in everything
                  if r["topic"] == "big" and r["partition"] == 1 and low <= r["offset"] <= high)
    assert got == want and len(got) == 301

    # IN on topics, a range on partitions, and an offset IN list (pruned here, applied by Spark).
    q2 = full.where("topic IN ('big', 'zstd-v2') AND partition >= 0 AND partition < 1 AND offset IN (3, 12, 13)")
    got2 = sorted(tuple(r) for r in q2.select("topic", "partition", "offset").collect())
    want2 = sorted((r["topic"], r["partition"], r["offset"]) for r in everything
                   if r["topic"] in ("big", "zstd-v2") and r["partition"] == 0 and r["offset"] in (3, 12, 13))
    assert got2 == want2 and got2
    # A contradiction plans no task and reads nothing.
    assert full.where("offset > 10 AND offset < 5").count() == 0


def _damaged_segment(directory):
    """intact | CRC mismatch | zstd batch whose payload is garbage (CRC recomputed) | intact | torn tail"""
    from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD
    from kdump.format.crc import crc32c

    recs = [(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * 50) for i in range(5)]
    good1 = build_v2_batch(recs, base_offset=0)
    bad_crc = bytearray(build_v2_batch(recs, base_offset=5))
    bad_crc[-10] ^= 0x01          # inside the last value: decodes, but the CRC fails
    garbage = bytearray(build_v2_batch(recs, base_offset=10, codec=4))
    garbage[RECORD_BATCH_OVERHEAD:] = b"\x01" * (len(garbage) - RECORD_BATCH_OVERHEAD)
    garbage[CRC_OFFSET:CRC_OFFSET + 4] = crc32c(bytes(garbage[ATTRIBUTES_OFFSET:])).to_bytes(4, "big")
    good2 = build_v2_batch(recs, base_offset=15)
    torn = build_v2_batch(recs, base_offset=20)[:40]
    directory.mkdir(parents=True)
    path = directory / "00000000000000000000.log"
    path.write_bytes(good1 + bytes(bad_crc) + bytes(garbage) + good2 + torn)
    return path


def test_damaged_data_becomes_error_rows_not_a_failed_job(spark, tmp_path):
    path = _damaged_segment(tmp_path / "broken-0")
    rows = _sorted_rows(_table(spark.read.format("kafka-log").load(str(path.parent))))
    errors = [r for r in rows if r["error"] is not None]
    assert [(r["offset"], r["compression"], r["crc_valid"]) for r in errors] == [(10, "zstd", True), (20, None, None)]
    assert "offset 10" in errors[0]["error"] and errors[1]["error"].startswith("torn_tail: ")
    intact = [r for r in rows if r["error"] is None]
    assert [r["offset"] for r in intact] == list(range(10)) + list(range(15, 20))
    assert [r["crc_valid"] for r in intact] == [True] * 5 + [False] * 5 + [True] * 5
    local = [r for sl in plan([str(path.parent)]) for b in record_batches(sl) for r in b.to_pylist()]
    assert _sorted_rows(_arrow(local)) == rows


def _arrow(rows):
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=arrow_schema())


def test_batches_source_lists_every_batch_and_the_stop(spark):
    from kdump.format.walk import Walker

    df = spark.read.format("kafka-log-batches").load(str(GENERATED))
    rows = df.collect()
    expected = 0
    for f in plan([str(GENERATED)]):
        with open(f.path, "rb") as fh:
            expected += len(list(Walker(fh.read())))
    assert len([r for r in rows if r["error"] is None]) == expected
    stops = [(os.path.basename(os.path.dirname(r["file"])), r["error_kind"], r["position"]) for r in rows
             if r["error"] is not None]
    assert stops == [("torn-tail-0", "torn_tail", 667)]
    assert df.where("topic = 'zstd-v2'").count() == 5


def test_user_schema_selects_columns(spark):
    df = spark.read.format("kafka-log").schema("offset bigint, value binary, topic string").load(str(GENERATED))
    rows = df.where("topic = 'headers'").collect()
    assert rows and set(rows[0].asDict()) == {"offset", "value", "topic"}


def test_unreadable_paths_are_a_clear_error(spark, tmp_path):
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException, match="no such file"):
        spark.read.format("kafka-log").load(str(tmp_path / "nope")).count()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_session_without_python_pushdown_can_still_read(spark):
    conf = "spark.sql.python.filterPushdown.enabled"
    spark.conf.set(conf, "false")
    try:
        df = spark.read.format("kafka-log").option("pushdown", "false").load(str(GENERATED))
        assert df.where("topic = 'zstd-v2' AND offset >= 12").count() == 8
    finally:
        spark.conf.set(conf, "true")


def test_the_txn_column_is_the_local_exports(spark):
    """Each executor reads its partition's control markers (state/txn_status.py of_partition):
    the txn column is the one ``kdump export`` writes."""
    from kdump.state.txn_status import of_partition

    path = str(GENERATED / "transactions-0")
    table = _table(spark.read.format("kafka-log").option("splitBytes", "1").load(path).select("offset", "txn"))
    got = sorted((r["offset"], r["txn"]) for r in table.to_pylist())
    want = sorted((r["offset"], r["txn"]) for sl in plan([path]) for b in record_batches(sl, txn=of_partition)
                  for r in b.to_pylist())
    assert got == want
    assert {t for _, t in got} == {"committed", "aborted", None}
