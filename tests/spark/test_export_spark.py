"""``kdump export --engine spark`` writes the rows the local engine writes."""

from __future__ import annotations

import glob
import json
import os

import pytest
from sparkkit import GENERATED, run_cli

from kdump.export.columns import record_batches
from kdump.export.local import export_local
from kdump.export.slices import plan
from kdump.export.write import HIVE_NULL
from kdump.state.txn_status import of_partition

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SORT = ["topic", "partition", "segment", "position", "offset"]


def read_parquet(out):
    import pyarrow as pa
    import pyarrow.dataset as ds

    part = ds.HivePartitioning(pa.schema([("topic", pa.string()), ("partition", pa.int32())]),
                               null_fallback=HIVE_NULL)
    table = ds.dataset(out, format="parquet", partitioning=part).to_table()
    return table.select(table.schema.names).sort_by([(c, "ascending") for c in SORT])


def ndjson_lines(out):
    lines = []
    for path in glob.glob(os.path.join(out, "**", "*"), recursive=True):
        if os.path.isfile(path) and not os.path.basename(path).startswith((".", "_")):
            with open(path, encoding="utf-8") as f:
                lines += f.read().splitlines()
    return sorted(lines)


def test_parquet_from_both_engines_round_trips_with_the_same_rows(spark, tmp_path, big_dir):
    import pyarrow.parquet as pq

    from kdump.spark.export import export_spark

    paths = [str(GENERATED), str(big_dir)]
    local = export_local(paths, str(tmp_path / "local"), split_bytes=1 << 20, txn=of_partition)
    a = read_parquet(str(tmp_path / "local"))
    assert a.num_rows == local.rows > 1000
    for writer in ("arrow", "spark"):
        remote = export_spark(spark, paths, str(tmp_path / writer), split_bytes=1 << 20, writer=writer)
        assert (local.rows, local.error_rows) == (remote.rows, remote.error_rows) == (local.rows, 1)
        assert local.errors == remote.errors
        b = read_parquet(str(tmp_path / writer))
        assert a.schema.names == b.schema.names
        for name in a.schema.names:
            assert a.column(name).to_pylist() == b.column(name).to_pylist(), (writer, name)
    # Round trip: what was decoded is what is read back, timestamps in milliseconds, zstd.
    direct = sorted(((r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for sl in plan(paths)
                     for batch in record_batches(sl) for r in batch.to_pylist()), key=_nulls_last)
    assert sorted(zip(*(a.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value"))),
                  key=_nulls_last) == direct
    for engine in ("local", "arrow", "spark"):
        f = sorted(glob.glob(str(tmp_path / engine / "topic=big" / "partition=0" / "*.parquet")))[0]
        meta = pq.ParquetFile(f).metadata
        col = meta.schema.names.index("timestamp")
        assert meta.row_group(0).column(col).compression == "ZSTD", engine
        logical = str(meta.schema.column(col).logical_type)
        assert "isAdjustedToUTC=true" in logical and "timeUnit=milliseconds" in logical, engine


def _nulls_last(t):
    return tuple((v is None, v if v is not None else 0) for v in t)


def test_ndjson_from_both_engines_is_the_same(spark, tmp_path):
    from kdump.spark.export import export_spark
    from kdump.state.txn_status import of_partition

    # (txn=: what run/export.py gives, as the Spark engine's tasks read the outcomes themselves)
    local = export_local([str(GENERATED)], str(tmp_path / "local"), fmt="ndjson", encoding="hex", txn=of_partition)
    a = ndjson_lines(str(tmp_path / "local"))
    assert len(a) == local.rows
    assert {"topic", "partition", "segment", "txn", "offset", "key", "value", "headers"} <= set(json.loads(a[0]))
    assert {"committed", "aborted"} <= {json.loads(line).get("txn") for line in a}
    for writer in ("arrow", "spark"):
        remote = export_spark(spark, [str(GENERATED)], str(tmp_path / writer), fmt="ndjson", encoding="hex",
                              writer=writer)
        assert (local.rows, local.error_rows) == (remote.rows, remote.error_rows)
        assert local.errors == remote.errors
        assert ndjson_lines(str(tmp_path / writer)) == a, writer


def test_cli_export_with_the_spark_engine(spark, tmp_path, big_dir):
    code, out, err = run_cli("export", str(big_dir), "--out", str(tmp_path / "o"), "--engine", "spark",
                             "--master", "local[2]", "--partition-by", "topic", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["engine"] == "spark" and summary["error_rows"] == 0 and summary["rows"] > 1000
    # The whole run is counted, the session's start and stop too (29 s were reported as 6.4 s).
    assert summary["seconds"] >= summary.get("engine_start_stop_seconds", 0) > 0
    assert sorted(n for n in os.listdir(tmp_path / "o") if not n.startswith(".")) == ["_SUCCESS", "topic=big"]
    # A second run into the same directory is refused; --overwrite replaces it.
    code, _, err = run_cli("export", str(big_dir), "--out", str(tmp_path / "o"), "--engine", "spark")
    assert code == 2 and "not empty" in err


def test_limits_reach_every_spark_writer(spark, tmp_path):
    from kdump.encode import build_v2_batch
    from kdump.format.codecs import ZSTD, limits_for
    from kdump.spark.export import export_spark

    part = tmp_path / "big-0"
    part.mkdir()
    recs = [(i, 1_700_000_000_000, None, b"\0" * 1_000_000) for i in range(8)]      # 8 MB, a few KiB of zstd
    (part / "00000000000000000000.log").write_bytes(build_v2_batch(recs, codec=ZSTD))
    limits = limits_for(1 << 20)
    local = export_local([str(part)], str(tmp_path / "local"), fmt="ndjson", limits=limits)
    assert (local.rows, local.error_rows) == (1, 1) and "beyond 1048576 bytes" in local.errors[0]
    for writer in ("arrow", "spark"):
        for fmt in ("ndjson", "parquet"):
            out = str(tmp_path / f"{writer}-{fmt}")
            remote = export_spark(spark, [str(part)], out, fmt=fmt, writer=writer, limits=limits)
            assert (remote.rows, remote.error_rows) == (1, 1), (writer, fmt)
            assert "beyond 1048576 bytes" in remote.errors[0], (writer, fmt)
    unlimited = export_spark(spark, [str(part)], str(tmp_path / "all"), fmt="ndjson", writer="spark")
    assert (unlimited.rows, unlimited.error_rows) == (8, 0)
