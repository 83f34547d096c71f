"""kdump txn / groups / metadata on shipped fixtures: exact output and exit codes.

The broker-checked answers are in test_state_kafka.py; these pin the formats, the Kafka
rules one by one (Java's String.hashCode, tombstones, transactional offset commits,
epoch bumps, .txnindex and snapshot cross-checks, snapshots and torn batches in the
metadata log) and the error paths.
"""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from kdump.encode import build_end_txn_marker, build_v2_batch, encode_snapshot
from kdump.format.snapshot import parse_snapshot
from kdump.format.walk import Walker
from kdump.model import ProducerEntry
from kdump.state.groups import java_string_hash, partition_for
from support.run import GENERATED, REAL

TXN = GENERATED / "transactions-0"
METADATA = GENERATED / "__cluster_metadata-0"
WILLIAM = REAL / "William0423__kafka"
NOW = "2023-11-15T00:00:00Z"


def _json(result) -> list[dict]:
    return [json.loads(line) for line in result.out.splitlines()]


# -- txn --------------------------------------------------------------------------------------

TXN_TEXT = """\
transactions-0: offsets 0..26 (log end offset 27), last stable offset 27; committed 3 (10 records, 1008 bytes), aborted 3 (9 records, 1000 bytes)
  producer 1000 epoch 0: last sequence 9 at offset 21, coordinator epoch 5, last write 2023-11-14T22:13:20.210Z
  producer 2000 epoch 3: last sequence 8 at offset 25, coordinator epoch 5, last write 2023-11-14T22:13:20.230Z
  commit producer 1000 epoch 0: offsets 0..7 (5 records, 548 bytes) at 2023-11-14T22:13:20.030Z
  abort producer 2000 epoch 3: offsets 3..12 (4 records, 454 bytes) at 2023-11-14T22:13:20.060Z
  abort producer 1000 epoch 0: offsets 13..17 (2 records, 237 bytes) at 2023-11-14T22:13:20.090Z
  commit producer 2000 epoch 3: offsets 15..18 (2 records, 226 bytes) at 2023-11-14T22:13:20.100Z
  abort producer 1000 epoch 0: offsets 19..22 (3 records, 309 bytes) at 2023-11-14T22:13:20.210Z
  commit producer 2000 epoch 3: offsets 23..26 (3 records, 234 bytes) at 2023-11-14T22:13:20.230Z
"""


def test_txn_text_on_the_transactions_fixture(kdump):
    r = kdump("txn", TXN, "--now", NOW)
    assert (r.code, r.out) == (0, TXN_TEXT)
    assert r.err == ("kdump: note: no __transaction_state partition here: hanging is judged by age alone\n"
                     "kdump: txn: 1 partition, 2 producers; transactions: 3 committed, 3 aborted, 0 open (0 hanging)\n")


def test_txn_open_lists_only_open_transactions(kdump, tmp_path):
    """--open: only the producers holding an open transaction (and no completed ones)."""
    assert kdump("txn", TXN, "--now", NOW, "--open").out == ""
    part = _cut_before(tmp_path, TXN, 26)              # producer 2000's last COMMIT marker gone
    r = kdump("txn", part, "--now", NOW, "--open", "--hanging-after", "0")
    assert r.code == 0
    assert r.out.splitlines()[1:] == [
        "  producer 2000 epoch 3: last sequence 8 at offset 25, coordinator epoch 5, last write "
        "2023-11-14T22:13:20.234Z; open transaction from offset 23 (3 records, 234 bytes, open for 1 h 46 min) "
        "HANGING: open for 1 h 46 min"]
    assert r.out.startswith("transactions-0: offsets 0..25 (log end offset 26), last stable offset 23;")
    assert r.err.endswith("kdump: txn: 1 partition, 1 producer; transactions: 0 committed, 0 aborted, "
                          "1 open (1 hanging)\n")


def test_txn_aborted_transactions_are_the_txnindex_entries(kdump):
    """The fixture's .txnindex files are the reference: (pid, first, last) of every abort."""
    (part,) = _json(kdump("txn", TXN, "--json", "--now", NOW))
    aborted = [(t["producer_id"], t["first_offset"], t["last_offset"]) for t in part["transactions"]
               if t["outcome"] == "ABORT"]
    assert aborted == [(2000, 3, 12), (1000, 13, 17), (1000, 19, 22)]
    assert part["findings"] == [] and part["last_stable_offset"] == part["log_end_offset"] == 27


def test_txn_epoch_bump_and_sequence_wrap(kdump):
    (part,) = _json(kdump("txn", GENERATED / "idempotent-0", "--json", "--now", NOW))
    by_pid = {p["producer_id"]: p for p in part["producers"]}
    assert (by_pid[4001]["producer_epoch"], by_pid[4001]["last_sequence"]) == (1, 0)   # restarted at 0
    assert by_pid[4002]["last_sequence"] == 4          # wrapped past Int.MAX
    assert all(p["current_txn_first_offset"] is None for p in part["producers"])


def _cut_before(tmp_path, src, offset):
    """A copy of partition ``src`` whose last segment ends before the batch at ``offset``."""
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    seg = sorted(dst.glob("*.log"))[-1]
    data = seg.read_bytes()
    cut = next(b.position for b in Walker(data) if b.base_offset == offset)
    seg.write_bytes(data[:cut])
    return dst


def test_open_transaction_holds_the_last_stable_offset(kdump, tmp_path):
    part = _cut_before(tmp_path, TXN, 26)              # drop producer 2000's last COMMIT marker
    r = kdump("txn", part, "--json", "--now", NOW, "--hanging-after", "0")
    (obj,) = _json(r)
    assert r.code == 0
    assert (obj["last_stable_offset"], obj["log_end_offset"]) == (23, 26)
    (p2000,) = [p for p in obj["producers"] if p["producer_id"] == 2000]
    assert p2000["open_txn"]["first_offset"] == 23 and p2000["hanging"] is True
    from kdump.words import duration
    assert p2000["hanging_reasons"] == [f"open for {duration(p2000['open_txn']['age_ms'])}"]
    r = kdump("txn", part, "--now", NOW, "--hanging-after", "2h")     # 1 h 46 min old: not yet
    assert "HANGING" not in r.out and "open transaction from offset 23 (3 records, 234 bytes, open for 1 h 46 min)" in r.out  # noqa: E501


def test_txnindex_and_snapshot_disagreements_are_findings(kdump, tmp_path):
    part = tmp_path / TXN.name
    shutil.copytree(TXN, part)
    (part / "00000000000000000019.txnindex").unlink()
    entries = [ProducerEntry(1000, 0, 7, 11, 0, 0, 5, -1), ProducerEntry(2000, 2, 3, 12, 0, 0, 5, 3)]
    (part / "00000000000000000019.snapshot").write_bytes(encode_snapshot(entries))
    r = kdump("txn", part, "--json", "--now", NOW)
    assert r.code == 1
    (obj,) = _json(r)
    assert [(f["kind"], f["offset"], f["message"]) for f in obj["findings"]] == [
        ("txn_snapshot_mismatch", 19, "00000000000000000019.snapshot: producer 1000: last_sequence 7 in the snapshot,"
                                      " 6 from the log; last_offset 11 in the snapshot, 14 from the log"),
        ("txn_snapshot_mismatch", 19, "00000000000000000019.snapshot: producer 2000: producer_epoch 2 in the "
                                      "snapshot, 3 from the log; last_sequence 3 in the snapshot, 5 from the log; "
                                      "last_offset 12 in the snapshot, 16 from the log; current_txn_first_offset 3 "
                                      "in the snapshot, -1 from the log"),
        ("txn_index_mismatch", 22, "the aborted transaction of producer 1000 at 19..22 has no .txnindex entry "
                                   "(read_committed consumers would see it)"),
    ]
    assert parse_snapshot(encode_snapshot(entries)).entries == entries


def test_txn_exit_status_follows_the_finding_classes(kdump, tmp_path):
    """A producer snapshot that disagrees with the log is an anomaly (the broker rebuilds
    producer state from the log): exit 0, 1 with --strict; a missing .txnindex entry is
    damage (read_committed consumers see aborted records): exit 1 either way."""
    part = tmp_path / TXN.name
    shutil.copytree(TXN, part)
    entries = [ProducerEntry(1000, 0, 7, 11, 0, 0, 5, -1)]
    (part / "00000000000000000019.snapshot").write_bytes(encode_snapshot(entries))
    r = kdump("txn", part, "--json", "--now", NOW)
    (obj,) = _json(r)
    assert [(f["kind"], f["class"]) for f in obj["findings"]] == [("txn_snapshot_mismatch", "anomaly")]
    assert r.code == 0
    assert kdump("txn", part, "--now", NOW).code == 0
    assert kdump("txn", part, "--json", "--now", NOW, "--strict").code == 1
    (part / "00000000000000000019.txnindex").unlink()
    r = kdump("txn", part, "--json", "--now", NOW)
    (obj,) = _json(r)
    assert [f["class"] for f in obj["findings"]] == ["anomaly", "damage"]
    assert r.code == 1
    assert kdump("txn", part, "--json", "--now", NOW, "--strict").code == 1


def test_txn_filters(kdump):
    (obj,) = _json(kdump("txn", TXN, "--json", "--now", NOW, "--producer-id", "2000"))
    assert {p["producer_id"] for p in obj["producers"]} == {2000}
    assert {t["producer_id"] for t in obj["transactions"]} == {2000}
    r = kdump("txn", TXN, "--json", "--now", NOW, "--transactional-id", "nobody")
    assert (r.code, r.out) == (0, "")
    assert "transactional id nobody is not in __transaction_state" in r.err


def test_txn_usage_errors(kdump, tmp_path):
    r = kdump("txn", tmp_path / "missing")
    assert r.code == 3 and r.err.startswith("kdump: error: ") and "no such file or directory" in r.err
    r = kdump("txn", TXN, "--hanging-after", "soon")
    assert r.code == 2 and "'soon' is not a duration" in r.err


# -- groups -----------------------------------------------------------------------------------

def test_java_string_hash_and_partition_for():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("\U0001F600") == 1772899                 # two UTF-16 code units
    assert java_string_hash("polygenelubricants") == -(1 << 31)      # Integer.MIN_VALUE ...
    assert partition_for("polygenelubricants", 50) == 0              # ... which Utils.abs maps to 0
    assert partition_for("debug-consumer-group", 50) == 28


@pytest.mark.parametrize("logs", ["William0423__kafka", "seanorth__kafka-server", "tuyen-nnt__kafka_2.13-3.0.0"])
def test_every_real_group_is_in_the_partition_kafka_hashes_it_to(kdump, logs):
    groups = [o for o in _json(kdump("groups", REAL / logs, "--json")) if o["object"] == "group"]
    assert groups
    assert all(g["coordinator_partition"] == partition_for(g["group_id"], 50) for g in groups)


GROUP_TEXT = """\
__consumer_offsets: 50 partitions (from --partitions), 50 here; group debug-consumer-group belongs in __consumer_offsets-28
group debug-consumer-group: protocol classic (consumer) state Stable generation 1 assignor range (__consumer_offsets-28)
  member consumer-1-61400dcb-1b93-4b4e-8891-5ae75e419305 client consumer-1 host /127.0.0.1 assigned debug_topic-0
  debug_topic-0: offset 40 log end 40 lag 0 leader epoch -1 committed 2018-08-15T05:57:03.113Z metadata ''
"""


def test_groups_text_with_group(kdump):
    r = kdump("groups", WILLIAM, "--group", "debug-consumer-group", "--partitions", "50")
    assert (r.code, r.out, r.err) == (0, GROUP_TEXT, "")


def test_groups_at_and_expiry(kdump):
    r = kdump("groups", WILLIAM, "--json", "--at", "2018-08-15T02:20:00Z")
    assert [o["offsets"][0]["offset"] for o in _json(r)[1:]] == [30]
    # The group has a member assigned the topic: the coordinator keeps its offsets.
    (g,) = _json(kdump("groups", WILLIAM, "--json", "--now", "2030-01-01T00:00:00Z"))[1:]
    assert g["offsets"][0]["expired"] is False
    seanorth = REAL / "seanorth__kafka-server"
    (g,) = _json(kdump("groups", seanorth, "--json", "--now", "2022-01-10T00:00:00Z"))[1:]
    assert [o["expired"] for o in g["offsets"]] == [False, False]          # empty group, one day on
    (g,) = _json(kdump("groups", seanorth, "--json", "--now", "2022-01-17T00:00:00Z"))[1:]
    assert [o["expired"] for o in g["offsets"]] == [True, True]            # 7 days after it became empty


def test_groups_tombstone_deletes_the_group(kdump):
    """DonaldY's __consumer_offsets-28 holds a console consumer's group, then its tombstone."""
    r = kdump("groups", REAL / "DonaldY__kafka-2.7.1", "--json")
    assert [o["object"] for o in _json(r)] == ["offsets_topic"]


def _offset_commit(group: str, topic: str, partition: int, offset: int, ts: int) -> tuple[bytes, bytes]:
    def s(x: str) -> bytes:
        return struct.pack(">h", len(x)) + x.encode()
    key = struct.pack(">h", 1) + s(group) + s(topic) + struct.pack(">i", partition)
    value = struct.pack(">hqi", 3, offset, -1) + s("") + struct.pack(">q", ts)     # OffsetCommitValue v3
    return key, value


def test_groups_transactional_offsets_count_after_commit_only(kdump, tmp_path):
    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    T = 1_700_000_000_000
    batches = [
        build_v2_batch([(0, T, *_offset_commit("g", "t", 0, 10, T))], base_offset=0, base_timestamp=T),
        build_v2_batch([(0, T, *_offset_commit("g", "t", 0, 20, T + 1))], base_offset=1, base_timestamp=T + 1,
                       producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_end_txn_marker(False, base_offset=2, producer_id=7, producer_epoch=0, timestamp=T + 2),
        build_v2_batch([(0, T, *_offset_commit("g", "t", 1, 30, T + 3))], base_offset=3, base_timestamp=T + 3,
                       producer_id=7, producer_epoch=0, base_sequence=1, is_transactional=True),
        build_end_txn_marker(True, base_offset=4, producer_id=7, producer_epoch=0, timestamp=T + 4),
        build_v2_batch([(0, T, _offset_commit("g", "t", 2, 5, T)[0], None)], base_offset=5, base_timestamp=T + 5),
        build_v2_batch([(0, T, *_offset_commit("g", "t", 2, 5, T + 6))], base_offset=6, base_timestamp=T + 6),
        build_v2_batch([(0, T, _offset_commit("g", "t", 2, 5, T)[0], None)], base_offset=7, base_timestamp=T + 7),
    ]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    r = kdump("groups", tmp_path, "--json", "--now", "2023-11-15T00:00:00Z")
    header, g = _json(r)
    assert r.code == 0 and header["present"] == [0]
    # 20 was aborted, 30 committed; partition 2 was deleted by its last tombstone.
    assert [(o["partition"], o["offset"]) for o in g["offsets"]] == [(0, 10), (1, 30)]
    assert (g["protocol"], g["protocol_type"], g["state"]) == ("classic", None, "Empty")


def test_groups_usage_errors(kdump):
    r = kdump("groups", WILLIAM, "--group", "x")
    assert (r.code, r.out) == (2, "")
    assert r.err == ("kdump: error: the __consumer_offsets partition count is not in __cluster_metadata here; "
                     "give it with --partitions\n")


# -- metadata ---------------------------------------------------------------------------------

METADATA_TEXT = """\
cluster metadata: snapshot {root}/00000000000000000005-0000000001.checkpoint, replayed to offset 4 \
(2023-11-14T22:13:22.000Z)
feature metadata.version=19
topic orders id AAECAwQFBgcICQoLDA0ODw partitions 0
"""


def test_metadata_text_from_the_snapshot(kdump):
    r = kdump("metadata", METADATA)
    assert (r.code, r.out, r.err) == (0, METADATA_TEXT.format(root=METADATA), "")


def test_metadata_at_an_offset_before_the_snapshot_replays_the_log(kdump):
    objs = _json(kdump("metadata", METADATA, "--at", "2", "--json"))
    assert objs[0] == {"object": "metadata", "snapshot": None, "last_offset": 2,
                       "last_timestamp": 1700000000010, "stopped": None, "errors": [], "incomplete": []}
    assert [o["object"] for o in objs[1:]] == ["feature", "topic"]
    objs = _json(kdump("metadata", METADATA, "--at", "0", "--json"))
    assert [o["object"] for o in objs] == ["metadata"]


def test_metadata_diff(kdump):
    r = kdump("metadata", METADATA, "--diff", "0", "2023-11-14T22:13:21Z")
    assert (r.code, r.out) == (0, """\
from offset 0 (no snapshot) to offset 4
added features/metadata.version: - -> 19
added topics/orders/name: - -> orders
added topics/orders/partitions: - -> {}
added topics/orders/topic_id: - -> AAECAwQFBgcICQoLDA0ODw
""")


def test_metadata_torn_batch_stops_the_replay_and_says_so(kdump, tmp_path):
    part = tmp_path / METADATA.name
    shutil.copytree(METADATA, part)
    for snap in part.glob("*.checkpoint"):
        snap.unlink()
    log = part / "00000000000000000000.log"
    data = log.read_bytes()
    torn = next(b for b in Walker(data) if b.base_offset == 3)
    log.write_bytes(data[:torn.position + torn.size - 5])
    r = kdump("metadata", part)
    assert r.code == 1
    assert r.out.splitlines()[:2] == [
        "cluster metadata: snapshot -, replayed to offset 2 (2023-11-14T22:13:20.010Z)",
        f"  replay stopped early: {log}:{torn.position}: entry of {torn.size} bytes runs past the end "
        f"({torn.size - 5} bytes left)"]
    assert "topic orders" in r.out


def test_metadata_usage_errors(kdump):
    r = kdump("metadata", TXN)
    assert (r.code, r.err) == (2, f"kdump: error: {TXN}: no __cluster_metadata-0 partition here\n")
    r = kdump("metadata", METADATA, "--at", "1", "--diff", "0", "1")
    assert (r.code, r.err) == (2, "kdump: error: --at and --diff do not go together\n")


def test_real_kraft_snapshot(kdump):
    data = REAL / "Manny-97__end-to-end-streaming-system" / "kafka" / "data"
    objs = _json(kdump("metadata", data, "--json"))
    assert objs[0]["snapshot"].endswith("00000000000000047695-0000000002.checkpoint")
    (broker,) = [o for o in objs if o["object"] == "broker"]
    assert (broker["broker_id"], broker["fenced"]) == (0, True)
    assert broker["endpoints"] == ["EXTERNAL://localhost:9094", "PLAINTEXT://kafka:9092"]


def test_metadata_at_a_time_uses_the_snapshot_only_when_it_is_older(kdump):
    later = _json(kdump("metadata", METADATA, "--at", "2023-11-14T22:13:25Z", "--json"))[0]
    assert later["snapshot"].endswith("00000000000000000005-0000000001.checkpoint")
    # The snapshot contains records up to T0+1000 ms: a point before that replays the log.
    early = _json(kdump("metadata", METADATA, "--at", "@1700000000500", "--json"))[0]
    assert (early["snapshot"], early["last_offset"], early["last_timestamp"]) == (None, 3, 1700000000500)


def test_several_log_dirs_are_one_broker(kdump, tmp_path):
    """JBOD: partitions spread over log dirs; a -future replica is skipped with a note."""
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    shutil.copytree(TXN, tmp_path / "d1" / TXN.name)
    shutil.copytree(METADATA, tmp_path / "d2" / METADATA.name)
    shutil.copytree(TXN, tmp_path / "d2" / "transactions-0.0123456789abcdef0123456789abcdef-future")
    r = kdump("txn", tmp_path / "d1", tmp_path / "d2", "--now", NOW)
    assert (r.code, r.out) == (0, TXN_TEXT)
    assert f"{tmp_path}/d2/transactions-0.0123456789abcdef0123456789abcdef-future: skipped (future replica)" in r.err
    r = kdump("metadata", tmp_path / "d1", tmp_path / "d2")
    assert r.code == 0 and "topic orders" in r.out
    r = kdump("txn", tmp_path / "d1", tmp_path / "d1", "--now", NOW, "--json")
    assert len(_json(r)) == 1 and "already read from" in r.err


@pytest.mark.parametrize("args", [("txn", TXN, "--now", NOW), ("groups", WILLIAM), ("metadata", METADATA)])
def test_tables(kdump, args):
    r = kdump(*args, "--format", "table", "--color", "never")
    assert r.code == 0 and "kdump" in r.out
    assert {"txn": "transactions-0", "groups": "debug-consumer-group", "metadata": "orders"}[args[0]] in r.out


# -- fixtures/broker: written by a real Kafka 4.3.1 broker -----------------------------------

BROKER = GENERATED.parent / "broker" / "all-shapes"


def test_broker_fixture_txn_agrees_with_the_brokers_own_side_files(kdump):
    """The broker wrote the .txnindex and .snapshot files: the replay must agree with them
    (no finding), and every aborted transaction has its .txnindex entry."""
    from kdump.format.txnindex import parse_txnindex

    r = kdump("txn", BROKER, "--json", "--now", "2026-11-24T02:00:00Z")
    assert r.code == 0
    objs = _json(r)
    parts = {(o["topic"], o["partition"]): o for o in objs if o["object"] == "partition"}
    assert all(o["findings"] == [] for o in parts.values())
    for name in ("txn-0", "txn-other-0"):
        entries = parse_txnindex((BROKER / name / "00000000000000000000.txnindex").read_bytes()).entries
        obj = parts[(name[:-2], 0)]
        aborted = [(t["producer_id"], t["first_offset"], t["last_offset"]) for t in obj["transactions"]
                   if t["outcome"] == "ABORT"]
        assert aborted == [(e.producer_id, e.first_offset, e.last_offset) for e in entries]
        assert obj["last_stable_offset"] == obj["log_end_offset"]       # a clean shutdown: nothing open
    ids = {o["transactional_id"]: o["state"] for o in objs if o["object"] == "transactional_id"}
    assert ids == {"aiokafka-txn": "CompleteCommit", "java-txn-none": "CompleteCommit",
                   "java-txn-zstd": "CompleteCommit", "kafka-python-txn": "CompleteAbort",
                   "perf-txn": "CompleteCommit"}


def test_broker_fixture_groups_of_every_protocol(kdump):
    header, *groups = _json(kdump("groups", BROKER, "--json", "--quiet"))
    assert (header["partitions"], header["partitions_from"]) == (1, "__cluster_metadata")
    assert {g["group_id"]: g["protocol"] for g in groups} == {
        "aiokafka-classic": "classic", "console-classic": "classic", "console-consumer": "consumer",
        "console-read-committed": "consumer", "console-share": "share", "kafka-python-classic": "classic",
        "txn-offsets-java": "classic", "txn-offsets-kafka-python": "classic"}
    offsets = {(g["group_id"], o["topic"]): (o["offset"], o["metadata"]) for g in groups for o in g["offsets"]}
    assert offsets[("aiokafka-classic", "codec-snappy")] == (50, "aiokafka")
    # sendOffsetsToTransaction: the committed transaction's offsets count.
    assert offsets[("txn-offsets-kafka-python", "txn")] == (3, "kp")
    assert offsets[("txn-offsets-java", "txn")] == (5, "java txn offsets")


def test_broker_fixture_metadata_names_every_partition_dir(kdump):
    objs = _json(kdump("metadata", BROKER, "--json"))
    topics = {o["name"]: o for o in objs if o["object"] == "topic"}
    dirs = {d.name.rsplit("-", 1)[0] for d in BROKER.iterdir() if d.is_dir()} - {"__cluster_metadata"}
    assert set(topics) == dirs
    assert objs[0]["snapshot"].endswith(".checkpoint") and objs[0]["stopped"] is None
    configs = {(o["resource_type"], o["resource_name"]): o["configs"] for o in objs if o["object"] == "config"}
    assert configs[("topic", "log-append-time")] == {"message.timestamp.type": "LogAppendTime"}
    assert configs[("group", "console-share")] == {"share.auto.offset.reset": "earliest"}


def test_group_tombstone_keeps_offsets_that_have_none(kdump, tmp_path):
    """A group metadata tombstone removes the group (Kafka's removeGroup), not its offsets:
    those without their own tombstone remain, the group listed as Dead."""
    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    T = 1_700_000_000_000
    key = struct.pack(">hh", 2, 1) + b"g"
    value = struct.pack(">hh", 3, 8) + b"consumer" + struct.pack(">ihhqi", 4, -1, -1, T, 0)   # GroupMetadataValue v3
    batches = [build_v2_batch([(0, T, key, value), (1, T, *_offset_commit("g", "t", 0, 9, T))], base_offset=0),
               build_v2_batch([(0, T, key, None)], base_offset=2)]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    _, g = _json(kdump("groups", tmp_path, "--json", "--now", "2023-11-15T00:00:00Z"))
    assert (g["protocol_type"], g["generation"], [o["offset"] for o in g["offsets"]]) == (None, None, [9])
    assert g["state"] == "Dead"
    (part / "00000000000000000000.log").write_bytes(batches[0])
    _, g = _json(kdump("groups", tmp_path, "--json", "--now", "2023-11-15T00:00:00Z"))
    assert (g["protocol_type"], g["generation"], g["state"]) == ("consumer", 4, "Empty")


def test_state_commands_change_nothing(kdump, tmp_path):
    from support.run import snapshot_tree

    copy = tmp_path / "all-shapes"
    shutil.copytree(BROKER, copy)
    before = snapshot_tree(copy)
    for args in (("txn", copy), ("groups", copy, "--group", "console-share"), ("metadata", copy, "--diff", "0", "211")):
        assert kdump(*args, "--json").code == 0
    assert snapshot_tree(copy) == before


def test_hanging_needs_every_transaction_state_partition_to_blame_the_coordinator(kdump, tmp_path):
    """With __transaction_state-1 of 2 missing (a disk not copied), a producer none of the
    present partitions names is judged by age alone: its id may be in the missing one."""
    _cut_before(tmp_path, TXN, 26)
    (tmp_path / "__transaction_state-1").mkdir()
    (tmp_path / "__transaction_state-1" / "00000000000000000000.log").write_bytes(b"")
    r = kdump("txn", tmp_path, "--json", "--now", NOW, "--hanging-after", "0")
    (obj,) = [o for o in _json(r) if o["object"] == "partition" and o["topic"] == "transactions"]
    (p2000,) = [p for p in obj["producers"] if p["producer_id"] == 2000]
    assert p2000["hanging"] and len(p2000["hanging_reasons"]) == 1 and obj["findings"] == []
    assert "only 1 of the 2 __transaction_state partitions are here" in r.err
    (tmp_path / "__transaction_state-0").mkdir()
    (tmp_path / "__transaction_state-0" / "00000000000000000000.log").write_bytes(b"")
    r = kdump("txn", tmp_path, "--json", "--now", NOW, "--hanging-after", "0")
    (obj,) = [o for o in _json(r) if o["object"] == "partition" and o["topic"] == "transactions"]
    (p2000,) = [p for p in obj["producers"] if p["producer_id"] == 2000]
    assert p2000["hanging_reasons"][1] == "no transactional id with this producer id in __transaction_state"
    # an anomaly (the broker starts on it as it is): exit 0, as the man page's EXIT STATUS says; 1 with --strict
    assert [f["kind"] for f in obj["findings"]] == ["txn_coordinator_mismatch"] and r.code == 0
    assert [f["class"] for f in obj["findings"]] == ["anomaly"]
    r = kdump("txn", tmp_path, "--json", "--now", NOW, "--hanging-after", "0", "--strict")
    assert r.code == 1


def test_a_log_dir_named_like_a_partition(kdump, tmp_path):
    """/data/kafka-1 holding partitions is a log dir, not partition 1 of topic kafka."""
    logdir = tmp_path / "kafka-1"
    shutil.copytree(METADATA, logdir / METADATA.name)
    (logdir / "meta.properties").write_text("node.id=1\n")
    r = kdump("metadata", logdir)
    assert r.code == 0 and "topic orders" in r.out


def test_metadata_with_a_record_that_does_not_decode_is_damage(kdump, tmp_path):
    """Exits: a record that failed to decode was shown as ``not decoded`` and the exit
    status was still 0."""
    part = tmp_path / METADATA.name
    shutil.copytree(METADATA, part)
    for snap in part.glob("*.checkpoint"):
        snap.unlink()
    log = part / "00000000000000000000.log"
    last = list(Walker(log.read_bytes()))[-1]
    end = log.stat().st_size
    with open(log, "ab") as f:
        f.write(build_v2_batch([(0, 1_700_000_001_000, None, b"\x01\x7f\x7f\x00\xff")],
                               base_offset=last.last_offset + 1))
        # a known type (TopicRecord) whose body does not parse
        f.write(build_v2_batch([(0, 1_700_000_001_000, None, b"\x01\x02\x00\xff")],
                               base_offset=last.last_offset + 2))
    r = kdump("metadata", part)
    assert r.code == 1, r.err
    # type 127 has no schema: a record_unknown_schema finding; the other is not decoded
    assert f"kdump: error: {log}:{end}: offset {last.last_offset + 1}: record_unknown_schema: " \
           f"Unknown metadata id 127 (no schema for record type 127 version 127 here" in r.err, r.err
    assert f"  not decoded: {log}: offset {last.last_offset + 2}: " in r.out, r.out
    r = kdump("metadata", part, "--diff", "0", str(last.last_offset + 2))
    assert r.code == 1, r.err
