"""fixtures/broker/ holds what fixtures/broker/PROVENANCE.md claims, read by kdump itself.

The files are as the broker wrote them (SHA256SUMS); each shape shows up in
`kdump dump --json`; `kdump dump` and `kdump verify` read every file and directory of it
without an error, as they must on data a broker wrote (a crash mid-cleaning included: its
leftovers are the broker's to delete, not damage).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from pathlib import Path

import pytest

from support.run import FIXTURES, run_kdump

BROKER = FIXTURES / "broker"
LOG_DIR = BROKER / "all-shapes"
CRASH_DIR = BROKER / "cleaner-crash"
LOG_DIRS = (LOG_DIR, CRASH_DIR)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
FILES = sorted(p for d in LOG_DIRS for p in d.rglob("*") if p.is_file())
PARTITIONS = sorted(p for d in LOG_DIRS for p in d.iterdir() if p.is_dir())


def _rel(path: Path) -> str:
    return str(path.relative_to(BROKER))


def test_files_are_as_the_broker_wrote_them():
    listed = {}
    for line in (BROKER / "SHA256SUMS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    assert set(listed) == {_rel(p) for p in FILES}
    for path in FILES:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == listed[_rel(path)], _rel(path)


@functools.lru_cache(maxsize=1)
def _batches() -> dict[str, list[dict]]:
    """`kdump dump --data --json` of the whole log dir, batches by partition directory."""
    result = run_kdump("dump", str(LOG_DIR), "--data", "--json")
    assert result.code == 0, result.err
    by_dir = defaultdict(list)
    for line in result.out.splitlines():
        row = json.loads(line)
        by_dir[Path(row["file"]).parent.name].append(row)
    return by_dir


def _live(partition: str) -> list[dict]:
    """Batches of the segments a broker would load (not the cleaner's .deleted leftovers)."""
    return [b for b in _batches()[partition] if b["file"].endswith(".log")]


def _records(partition: str) -> list[dict]:
    return [r for b in _live(partition) for r in b["records"]]


def _decoded_types(partition: str) -> set[str]:
    return {r["decoded"]["type"] for r in _records(partition) if r.get("decoded")}


def _controls(partition: str) -> set[str]:
    return {r["control"]["type"] for r in _records(partition) if r.get("control")}


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec(codec):
    batches = _live(f"codec-{codec}-0")
    assert {b["compression"] for b in batches} == {codec}
    assert sum(b["count"] for b in batches) == 40 + 20 + 60  # kafka-python, aiokafka, Java


def test_idempotent_producers():
    batches = _live("idempotent-0")
    assert batches and all(b["producer_id"] >= 0 and b["base_sequence"] >= 0 for b in batches)
    assert len({b["producer_id"] for b in batches}) == 2  # kafka-python and the Java client


def test_committed_and_aborted_transactions():
    for partition in ("txn-0", "txn-other-0"):
        assert all(b["is_transactional"] for b in _live(partition))
        assert _controls(partition) == {"COMMIT", "ABORT"}
    assert {b["compression"] for b in _live("txn-0")} == {"none", "gzip", "lz4", "zstd"}
    assert any(p.suffix == ".txnindex" and p.stat().st_size for p in (LOG_DIR / "txn-0").iterdir())


def test_headers_null_keys_null_values_tombstones():
    records = _records("records-0")
    assert any(r["key"] is None and r["value"] is not None for r in records)
    assert any(r["key"] is not None and r["value"] is None for r in records)
    assert any(len(r["headers"]) == 3 for r in records)
    assert any(h["value"] is None for r in records for h in r["headers"])  # null header value


def test_log_append_time():
    batches = _live("log-append-time-0")
    assert {b["timestamp_type"] for b in batches} == {"LogAppendTime"}
    assert {b["compression"] for b in batches} == {"none", "gzip", "lz4"}


def test_segment_rolls():
    assert len(list((LOG_DIR / "rolled-0").glob("*.log"))) >= 5
    assert len(list((LOG_DIR / "__cluster_metadata-0").glob("*.log"))) >= 2


def test_compaction_after_the_cleaner_ran():
    kept = _live("compacted-0")
    assert any(b["delete_horizon_ms"] is not None for b in kept)  # tombstones, horizon stamped
    assert any(r["value"] is None for b in kept for r in b["records"])
    assert any(b["count"] == 0 for b in kept)  # emptied batches kept for their producer state
    purged = _records("compacted-purged-0")
    assert purged and all(r["value"] is not None for r in purged)  # tombstones removed
    assert len(purged) < purged[-1]["offset"] + 1  # gaps: offsets the cleaner removed
    for partition in ("compacted-0", "compacted-purged-0"):
        assert any(p.name.endswith(".log.deleted") for p in (LOG_DIR / partition).iterdir())
    assert "compacted" in (LOG_DIR / "cleaner-offset-checkpoint").read_text()


def test_consumer_offsets_classic_consumer_and_share_groups():
    types = _decoded_types("__consumer_offsets-0")
    assert {"OFFSET_COMMIT", "GROUP_METADATA"} <= types  # classic protocol
    assert {"CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_MEMBER_METADATA"} <= types  # KIP-848
    assert {"SHARE_GROUP_METADATA", "SHARE_GROUP_MEMBER_METADATA"} <= types  # KIP-932
    assert "COMMIT" in _controls("__consumer_offsets-0")  # offsets committed in transactions


def test_share_group_state_and_transaction_state():
    assert {"SHARE_SNAPSHOT", "SHARE_UPDATE"} <= _decoded_types("__share_group_state-0")
    assert _decoded_types("__transaction_state-0") == {"TRANSACTION_LOG"}


def test_cluster_metadata_and_its_snapshots():
    metadata = LOG_DIR / "__cluster_metadata-0"
    snapshots = sorted(metadata.glob("*.checkpoint"))
    assert len(snapshots) >= 2  # format's own, and at least one the controller took
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "FEATURE_LEVEL_RECORD"} <= _decoded_types("__cluster_metadata-0")
    for snapshot in snapshots:
        rows = [json.loads(line) for line in run_kdump("dump", str(snapshot), "--records", "--json").out.splitlines()]
        controls = [r["control"]["type"] for row in rows for r in row["records"] if r.get("control")]
        assert controls[0] == "SNAPSHOT_HEADER" and controls[-1] == "SNAPSHOT_FOOTER", snapshot.name
    assert (metadata / "quorum-state").is_file() and (LOG_DIR / "bootstrap.checkpoint").is_file()


def test_clean_shutdown_marker():
    assert (LOG_DIR / ".kafka_cleanshutdown").is_file()
    assert not (CRASH_DIR / ".kafka_cleanshutdown").exists()


def test_a_cleaning_interrupted_by_a_crash():
    partition = CRASH_DIR / "compacted-crash-0"
    cleaned = {p.name.split(".", 1)[1] for p in partition.glob("*.cleaned")}
    assert cleaned == {"log.cleaned", "index.cleaned", "timeindex.cleaned"}
    log = next(partition.glob("*.log.cleaned"))
    result = run_kdump("dump", str(log), "--json")
    assert result.code == 0 and result.out, result.err
    rows = [json.loads(line) for line in result.out.splitlines()]
    assert rows[-1]["position"] + rows[-1]["size"] == log.stat().st_size  # whole batches so far


# Where `kdump verify` exits 1 on this broker-written data: none.
VERIFY_FALSE_ALARMS: set[str] = set()
# The running broker's lock file (left by the crash): not a file kdump reads, named alone it is
# a usage error (2); inside a directory it is skipped.
NOT_READ = {"cleaner-crash/.lock"}


@pytest.mark.parametrize("path", [*LOG_DIRS, *PARTITIONS, *FILES], ids=lambda p: _rel(p))
def test_dump_and_verify_read_everything(path):
    for args in (("dump", str(path)), ("dump", str(path), "--data", "--json"), ("verify", str(path)),
                 ("verify", str(path), "--deep")):
        result = run_kdump(*args)
        assert "Traceback" not in result.err and "internal error" not in result.err, result.err
        if _rel(path) in NOT_READ:
            assert result.code == 2 and "not a file kdump reads" in result.err, result
            continue
        expected = 1 if args[0] == "verify" and _rel(path) in VERIFY_FALSE_ALARMS else 0
        assert result.code == expected, (args, result.out[-2000:], result.err[-2000:])
