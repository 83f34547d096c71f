"""The ``txn`` column of ``kdump export``'s Parquet rows: how each record's transaction ended,
the same outcome ``kdump records`` gives it (state/txn_status.py, the one home), the control
markers of later segments of the partition included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kdump.encode import build_end_txn_marker, build_v2_batch
from kdump.export.columns import record_batches
from kdump.export.schema import RECORD_COLUMNS
from kdump.export.slices import plan
from kdump.state import txn_status
from support.run import GENERATED, run_kdump

pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

TXN = GENERATED / "transactions-0"


def _rows(out: Path) -> list[tuple]:
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    rows = sorted(zip(table.column("offset").to_pylist(), table.column("txn").to_pylist(),
                      table.column("is_control").to_pylist()))
    return rows


def _outcomes_from_records(path: Path) -> dict[int, str | None]:
    r = run_kdump("records", path, "-f", "%o %x\\n")
    assert r.code == 0, r.err
    return {int(o): (x or None) for o, _, x in (line.partition(" ") for line in r.out.splitlines())}


def test_the_txn_column_is_what_records_says(tmp_path):
    out = tmp_path / "out"
    r = run_kdump("export", TXN, "--out", out)
    assert r.code == 0, r.err
    rows = _rows(out)
    assert [n for n, _ in RECORD_COLUMNS].index("txn") == [n for n, _ in RECORD_COLUMNS].index("is_transactional") + 1
    want = _outcomes_from_records(TXN)
    assert {o: t for o, t, control in rows if not control} == want
    assert all(t is None for _, t, control in rows if control)
    assert {t for _, t, _ in rows} == {"committed", "aborted", None}
    assert (want[15], want[16], want[19]) == ("committed", "committed", "aborted")    # either side of segment 19


def test_a_marker_in_a_later_segment_counts(tmp_path):
    """A transaction whose batches are in one segment and whose ABORT opens the next: the rows
    of the first segment say aborted; the second segment's data is outside a transaction."""
    part = tmp_path / "t-0"
    part.mkdir()
    (part / f"{0:020d}.log").write_bytes(build_v2_batch([(i, 1000 + i, b"k", b"v") for i in range(3)],
                                                        producer_id=7, producer_epoch=0, base_sequence=0,
                                                        is_transactional=True))
    (part / f"{3:020d}.log").write_bytes(build_end_txn_marker(False, base_offset=3, producer_id=7, producer_epoch=0)
                                         + build_v2_batch([(0, 2000, b"k", b"plain")], base_offset=4))
    (part / f"{5:020d}.log").write_bytes(build_v2_batch([(0, 3000, b"k", b"open")], base_offset=5, producer_id=8,
                                                        producer_epoch=0, base_sequence=0, is_transactional=True))
    out = tmp_path / "out"
    assert run_kdump("export", part, "--out", out).code == 0
    assert _rows(out) == [(0, "aborted", False), (1, "aborted", False), (2, "aborted", False), (3, None, True),
                          (4, None, False), (5, "open", False)]


def test_without_outcomes_the_column_is_null():
    """record_batches alone (no txn=: a caller below run/ and spark/) leaves the column null."""
    sl = plan([str(TXN)])[0]
    txn = [v for b in record_batches(sl) for v in b.column("txn").to_pylist()]
    assert txn and all(v is None for v in txn)
    txn = [v for b in record_batches(sl, txn=txn_status.of_partition) for v in b.column("txn").to_pylist()]
    assert "committed" in txn


def test_of_partition_reads_again_when_a_segment_changes(tmp_path):
    part = tmp_path / "transactions-0"
    shutil.copytree(TXN, part)
    f = plan([str(part)])[0].log_file()
    assert txn_status.of_partition(f) is txn_status.of_partition(f)       # kept: one walk a partition
    before = txn_status.of_partition(f)
    with open(sorted(part.glob("*.log"))[-1], "ab") as seg:
        seg.write(build_end_txn_marker(True, base_offset=1000, producer_id=999, producer_epoch=0))
    assert txn_status.of_partition(f) is not before


def _ndjson_rows(out: Path) -> list[tuple]:
    import json

    lines = [json.loads(line) for f in sorted(out.rglob("*.ndjson")) for line in f.read_text().splitlines()]
    assert all(list(d)[:4] == ["topic", "partition", "segment", "txn"] for d in lines)
    return sorted((d["offset"], d["txn"]) for d in lines)


def test_the_ndjson_export_has_the_parquet_txn(tmp_path):
    """``--format ndjson`` rows carry the same txn member, fourth after topic, partition and
    segment: what the Parquet column holds, row for row."""
    parquet, ndjson = tmp_path / "parquet", tmp_path / "ndjson"
    assert run_kdump("export", TXN, "--out", parquet).code == 0
    r = run_kdump("export", TXN, "--out", ndjson, "--format", "ndjson")
    assert r.code == 0, r.err
    assert _ndjson_rows(ndjson) == [(o, t) for o, t, _ in _rows(parquet)]
    assert {t for _, t in _ndjson_rows(ndjson)} == {"committed", "aborted", None}


def test_the_ndjson_txn_sees_a_marker_in_a_later_segment(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    (part / f"{0:020d}.log").write_bytes(build_v2_batch([(i, 1000 + i, b"k", b"v") for i in range(2)],
                                                        producer_id=7, producer_epoch=0, base_sequence=0,
                                                        is_transactional=True))
    (part / f"{2:020d}.log").write_bytes(build_end_txn_marker(True, base_offset=2, producer_id=7, producer_epoch=0))
    out = tmp_path / "out"
    assert run_kdump("export", part, "--out", out, "--format", "ndjson").code == 0
    assert _ndjson_rows(out) == [(0, "committed"), (1, "committed"), (2, None)]
