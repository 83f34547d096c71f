"""``kdump export --engine local``: pyarrow Parquet and NDJSON, no Spark."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kdump.encode import build_v2_batch
from kdump.export.columns import record_batches
from kdump.export.local import export_local
from kdump.export.schema import RECORD_COLUMNS, arrow_schema
from kdump.export.slices import Scope, plan
from kdump.export.write import HIVE_NULL
from kdump.format.index import encode_index
from support.run import GENERATED, run_kdump

pa = pytest.importorskip("pyarrow")
ds = pytest.importorskip("pyarrow.dataset")
pq = pytest.importorskip("pyarrow.parquet")


def _segment(directory: Path, batches: int, records: int = 20, base: int = 0) -> Path:
    """A v2 segment with a broker-style .index entry every 4096 bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    data, entries, last_entry_at, offset = bytearray(), [], 0, base
    for i in range(batches):
        recs = [(j, 1_700_000_000_000 + offset + j, b"k%d" % (offset + j), bytes([i % 256]) * 100,
                 [("h", b"v")] if j == 0 else []) for j in range(records)]
        if len(data) - last_entry_at > 4096:
            entries.append((offset + records - 1, len(data)))
            last_entry_at = len(data)
        data += build_v2_batch(recs, base_offset=offset, codec=(0, 1, 4)[i % 3])
        offset += records
    (directory / f"{base:020d}.log").write_bytes(bytes(data))
    (directory / f"{base:020d}.index").write_bytes(encode_index(entries, base))
    return directory / f"{base:020d}.log"


def read(out: str):
    part = ds.HivePartitioning(pa.schema([("topic", pa.string()), ("partition", pa.int32())]),
                               null_fallback=HIVE_NULL)
    t = ds.dataset(out, format="parquet", partitioning=part).to_table()
    return t.sort_by([("topic", "ascending"), ("partition", "ascending"), ("segment", "ascending"),
                      ("offset", "ascending")])


def dump_records(path) -> list[tuple]:
    code, out, _ = run_kdump("dump", "--records", "--data", "--json", "--encoding", "base64", path)
    rows = []
    for line in out.splitlines():
        b = json.loads(line)
        for r in b.get("records") or ():
            rows.append((os.path.basename(b["file"]), r["offset"],
                         None if r["key"] is None else base64.b64decode(r["key"]),
                         None if r["value"] is None else base64.b64decode(r["value"])))
    return rows


def test_parquet_holds_the_records_dump_decodes(tmp_path):
    out = tmp_path / "out"
    result = export_local([str(GENERATED)], str(out))
    t = read(str(out))
    assert t.num_rows == result.rows
    assert result.error_rows == 1 and "torn_tail" in result.errors[0]
    good = t.filter(pa.compute.is_null(t["error"]))
    ours = sorted(zip(good["segment"].to_pylist(), good["offset"].to_pylist(), good["key"].to_pylist(),
                      good["value"].to_pylist()), key=_key)
    assert ours == sorted(dump_records(str(GENERATED)), key=_key)
    # Hive layout, zstd, millisecond UTC timestamps, partition columns only in the path.
    assert (out / "topic=zstd-v2" / "partition=0").is_dir()
    f = next((out / "topic=zstd-v2" / "partition=0").glob("*.parquet"))
    pf = pq.ParquetFile(f)
    assert "topic" not in pf.schema_arrow.names and "offset" in pf.schema_arrow.names
    assert pf.schema_arrow.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"


def _key(r):
    return (r[0], r[1], r[2] or b"", r[3] or b"")


def test_schema_and_row_fields(tmp_path):
    rows = [r for sl in plan([str(GENERATED / "headers-0")]) for b in record_batches(sl)
            for r in b.to_pylist()]
    assert [f.name for f in arrow_schema()] == [n for n, _ in RECORD_COLUMNS]
    r = rows[0]
    assert (r["topic"], r["partition"], r["segment"], r["magic"], r["timestamp_type"]) == \
        ("headers", 0, "00000000000000000000.log", 2, "CreateTime")
    assert r["timestamp"].tzinfo is not None and r["timestamp"].year == 2023
    with_headers = [r for r in rows if r["headers"]]
    assert any(h["value"] is None for r in with_headers for h in r["headers"])
    assert {r["compression"] for r in rows} == {"none", "snappy", "zstd"}
    legacy = [r for sl in plan([str(GENERATED / "lz4-v0-0")]) for b in record_batches(sl)
              for r in b.to_pylist()]
    assert {r["timestamp_type"] for r in legacy} == {"NoTimestampType"} and legacy[0]["timestamp"] is None


def test_batches_are_bounded_by_rows_and_bytes(tmp_path):
    log = _segment(tmp_path / "t-0", batches=50, records=40)
    sl = plan([str(log)])[0]
    by_rows = list(record_batches(sl, max_rows=100))
    assert all(b.num_rows <= 100 + 40 for b in by_rows) and sum(b.num_rows for b in by_rows) == 2000
    by_bytes = list(record_batches(sl, max_bytes=20_000))
    assert len(by_bytes) >= 2000 * 100 // 20_000
    assert all(b.schema == arrow_schema() for b in by_bytes)


def test_split_slices_read_the_same_records_as_one(tmp_path):
    log = _segment(tmp_path / "t-0", batches=300)
    whole = plan([str(log)], split_bytes=0)
    split = plan([str(log)], split_bytes=50_000)
    assert len(whole) == 1 and len(split) >= 5
    assert split[0].start == 0 and split[-1].end is None
    assert all(a.end == b.start for a, b in zip(split, split[1:]))

    def rows(slices):
        return [(r["offset"], r["value"]) for sl in slices for b in record_batches(sl) for r in b.to_pylist()]

    assert rows(split) == rows(whole)
    # Offset bounds from the index: every record of a slice lies inside them.
    for sl in split:
        offs = [o for o, _ in rows([sl])]
        assert sl.low is None or sl.low <= min(offs)
        assert sl.high is None or max(offs) <= sl.high


def test_a_lying_index_is_not_used_to_cut(tmp_path):
    log = _segment(tmp_path / "t-0", batches=300)
    index = log.with_suffix(".index")
    entries = [(200 + i, 7000 + 4096 * i) for i in range(20)]     # positions inside batches
    index.write_bytes(encode_index(entries, 0))
    split = plan([str(log)], split_bytes=50_000)
    assert len(split) == 1


def test_scope_prunes_files_and_slices(tmp_path):
    a = _segment(tmp_path / "a-0", batches=300)
    _segment(tmp_path / "a-0", batches=100, base=6000)
    _segment(tmp_path / "b-3", batches=10)
    everything = plan([str(tmp_path)], split_bytes=50_000)
    assert {(s.topic, s.partition) for s in everything} == {("a", 0), ("b", 3)}
    only_b = plan([str(tmp_path)], 50_000, Scope(topics=frozenset({"b"})))
    assert {s.topic for s in only_b} == {"b"}
    assert plan([str(tmp_path)], 50_000, Scope(partition_min=1, partition_max=2)) == []
    scope = Scope(start_offset=3000, end_offset=3100)
    narrow = plan([str(tmp_path)], 50_000, scope)
    assert 1 <= len(narrow) < len([s for s in everything if s.topic == "a"]) / 2
    got = [r["offset"] for sl in narrow for b in record_batches(sl, scope) for r in b.to_pylist()]
    assert got == list(range(3000, 3101))
    assert os.path.basename(narrow[0].path) == os.path.basename(a)


def test_ndjson_lines_are_dump_record_objects(tmp_path):
    out = tmp_path / "j"
    result = export_local([str(GENERATED / "headers-0")], str(out), fmt="ndjson", partition_by=())
    lines = (out / "part-00000.ndjson").read_text().splitlines()
    assert len(lines) == result.rows == 18
    code, dumped, _ = run_kdump("dump", "--records", "--data", "--json", "--encoding", "base64",
                                str(GENERATED / "headers-0"))
    records = [r for line in dumped.splitlines() for r in json.loads(line)["records"]]
    for line, rec in zip(lines, records):
        obj = json.loads(line)
        assert (obj.pop("topic"), obj.pop("partition"), obj.pop("segment"), obj.pop("txn")) == \
            ("headers", 0, "00000000000000000000.log", None)
        assert obj == rec


def test_cli_local_export(tmp_path, kdump):
    out = tmp_path / "o"
    r = kdump("export", str(GENERATED / "zstd-v2-0"), "--out", str(out), "--json")
    assert r.code == 0, r.err
    summary = json.loads(r.out)
    assert summary["rows"] == 20 and summary["engine"] == "local" and summary["error_rows"] == 0
    assert "exported 20 rows" in r.err
    assert kdump("export", str(GENERATED / "zstd-v2-0"), "--out", str(out)).code == 2
    assert kdump("export", str(GENERATED / "zstd-v2-0"), "--out", str(out), "--overwrite").code == 0
    damaged = kdump("export", str(GENERATED / "torn-tail-0"), "--out", str(tmp_path / "d"))
    assert damaged.code == 1 and "torn_tail" in damaged.err
    assert kdump("export", str(GENERATED), "--out", str(tmp_path / "x"), "--partition-by", "offset").code == 2
    assert kdump("export", str(GENERATED), "--out", str(tmp_path / "x"), "--master", "local[2]").code == 2
    assert kdump("export", str(tmp_path / "missing"), "--out", str(tmp_path / "x")).code == 3
    assert kdump("export", str(GENERATED), "--out", str(GENERATED / "zstd-v2-0" / "x")).code == 2


def test_export_modules_do_not_import_pyspark():
    code = ("import sys, kdump.export.local, kdump.export.slice_rows, kdump.spark, kdump.cli.export; "
            "sys.exit(1 if any(m.split('.')[0] == 'pyspark' for m in sys.modules) else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_threaded_and_inline_parquet_writers_agree(tmp_path):
    _segment(tmp_path / "in" / "t-0", batches=120)
    _segment(tmp_path / "in" / "u-1", batches=30)
    a = export_local([str(tmp_path / "in")], str(tmp_path / "a"), threads=True, split_bytes=40_000)
    b = export_local([str(tmp_path / "in")], str(tmp_path / "b"), threads=False)
    assert a.rows == b.rows == 3000
    ta, tb = read(str(tmp_path / "a")), read(str(tmp_path / "b"))
    assert ta.equals(tb)
    assert sorted(p.name for p in (tmp_path / "a").rglob("*.parquet")) == ["part-00000.zstd.parquet"] * 2


def test_a_write_failure_is_raised_not_swallowed(tmp_path, monkeypatch):
    import pyarrow.parquet

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pyarrow.parquet, "ParquetWriter", broken)
    from kdump.errors import WriteError

    with pytest.raises(WriteError, match="disk full"):
        export_local([str(GENERATED / "zstd-v2-0")], str(tmp_path / "o"))


def test_spark_engine_without_java_is_a_clear_error(tmp_path, monkeypatch, kdump):
    pytest.importorskip("pyspark")
    from kdump.spark import session

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(session.SparkUnavailableError, match="Java 17"):
        session.check_requirements()
    r = kdump("export", str(GENERATED / "zstd-v2-0"), "--out", str(tmp_path / "o"), "--engine", "spark")
    assert r.code == 3 and "needs Java 17" in r.err and "hint:" in r.err


def test_spark_session_defaults_stay_on_loopback_and_quiet():
    from kdump.spark import session

    conf = session.session_conf("local[2]", {"spark.sql.shuffle.partitions": "7"})
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false" and conf["spark.ui.showConsoleProgress"] == "false"
    assert conf["spark.sql.shuffle.partitions"] == "7"
    assert conf["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MILLIS"
    log4j = conf["spark.driver.extraJavaOptions"].split("file:")[1]
    text = Path(log4j).read_text()
    assert "rootLogger.level = error" in text and "logger.spark.level = error" in text
    assert session.master_on_this_machine("spark://127.0.0.1:7077")
    assert not session.master_on_this_machine("spark://10.0.0.5:7077")
    assert session.java_major(sys.executable) is None
