"""Transactional offset commits in `kdump groups`, replayed as Kafka 4.3.1's
OffsetMetadataManager does, and what `groups`, `txn` and `metadata` say when data is missing.

Each case twice: on segments built here with kdump.encode's encoders, and on
fixtures/broker/txn-offsets/, written by a real broker (TXN-OFFSETS.md), against
ConsumerGroupCommand --describe's answer kept beside it (txn-offsets.describe).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest
import txn_offsets  # tests/kafka: the broker scenario that wrote the fixture

from kdump.encode import build_end_txn_marker, build_v2_batch, encode_group_metadata_key, encode_offset_commit
from support.run import FIXTURES

T = 1_700_000_000_000          # batch n is written at T + n seconds
NOW = "2023-11-20T00:00:00Z"
BROKER = FIXTURES / "broker"
TXN_OFFSETS = BROKER / "txn-offsets"


def _json(result) -> list[dict]:
    return [json.loads(line) for line in result.out.splitlines()]


class Log:
    """One __consumer_offsets partition, a batch per call, offsets counted from 0."""

    def __init__(self, root, partition: int = 0) -> None:
        self.path = root / f"__consumer_offsets-{partition}"
        self.batches: list[bytes] = []

    @property
    def next(self) -> int:
        return len(self.batches)

    def _data(self, key, value, producer_id=-1, epoch=-1, transactional=False) -> int:
        n = self.next
        self.batches.append(build_v2_batch([(0, T + n * 1000, key, value)], base_offset=n,
                                           producer_id=producer_id, producer_epoch=epoch,
                                           base_sequence=0 if producer_id != -1 else -1,
                                           is_transactional=transactional))
        return n

    def plain(self, group, partition, offset, producer_id=-1) -> int:
        n = self.next
        return self._data(*encode_offset_commit(group, "t", partition, offset, commit_timestamp=T + n * 1000,
                                                metadata="plain"), producer_id=producer_id,
                          epoch=-1 if producer_id == -1 else 0)

    def txn(self, producer_id, group, partition, offset, epoch=0) -> int:
        n = self.next
        return self._data(*encode_offset_commit(group, "t", partition, offset, commit_timestamp=T + n * 1000,
                                                metadata="txn"), producer_id=producer_id, epoch=epoch,
                          transactional=True)

    def tombstone(self, group, partition, producer_id=-1) -> int:
        return self._data(*encode_offset_commit(group, "t", partition, None), producer_id=producer_id)

    def group_tombstone(self, group) -> int:
        return self._data(encode_group_metadata_key(group), None)

    def marker(self, producer_id, commit, epoch=0) -> int:
        n = self.next
        self.batches.append(build_end_txn_marker(commit, base_offset=n, producer_id=producer_id,
                                                 producer_epoch=epoch, timestamp=T + n * 1000))
        return n

    def write(self) -> None:
        self.path.mkdir(exist_ok=True)
        (self.path / "00000000000000000000.log").write_bytes(b"".join(self.batches))


def _groups(kdump, root, *args) -> dict[str, dict]:
    r = kdump("groups", root, "--json", "--now", NOW, *args)
    assert r.code == 0, r.err
    return {o["group_id"]: o for o in _json(r) if o["object"] == "group"}


def _committed(g) -> dict[int, int]:
    return {o["partition"]: o["offset"] for o in g["offsets"]}


def _pending(g) -> dict[tuple[int, int], int]:
    return {(o["partition"], o["producer_id"]): o["offset"] for o in g["pending_offsets"]}


# -- the five cases of the issue, and the crash, built here -----------------------------------

def test_commit_abort_and_open(kdump, tmp_path):
    log = Log(tmp_path)
    log.txn(7, "g-commit", 0, 100)
    log.marker(7, commit=True)
    log.plain("g-abort", 0, 50)
    log.txn(8, "g-abort", 0, 100)
    log.marker(8, commit=False)
    log.plain("g-open", 0, 50)
    log.txn(9, "g-open", 0, 100)
    log.write()
    gs = _groups(kdump, tmp_path)
    assert {gid: (_committed(g), _pending(g)) for gid, g in gs.items()} == {
        "g-commit": ({0: 100}, {}), "g-abort": ({0: 50}, {}), "g-open": ({0: 50}, {(0, 9): 100})}
    (p,) = gs["g-open"]["pending_offsets"]
    assert p == {"topic": "t", "partition": 0, "offset": 100, "leader_epoch": -1, "metadata": "txn",
                 "commit_timestamp": T + 6000, "expire_timestamp": -1, "record_offset": 6, "producer_id": 9,
                 "producer_epoch": 0, "log_end_offset": None, "lag": None}
    assert gs["g-commit"]["offsets"][0]["record_offset"] == 0


def test_a_plain_commit_after_the_transactional_one_wins_over_its_commit_marker(kdump, tmp_path):
    log = Log(tmp_path)
    log.txn(7, "g", 0, 100)
    log.plain("g", 0, 200)          # written after the transactional commit, before its marker
    log.marker(7, commit=True)
    log.plain("h", 0, 200)          # the other way round: the transactional record is the later one
    log.txn(8, "h", 0, 100)
    log.marker(8, commit=True)
    log.write()
    gs = _groups(kdump, tmp_path)
    assert (_committed(gs["g"]), _pending(gs["g"])) == ({0: 200}, {})
    assert (_committed(gs["h"]), _pending(gs["h"])) == ({0: 100}, {})


def test_a_plain_tombstone_while_the_transaction_is_open_deletes_the_pending_commit(kdump, tmp_path):
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.txn(7, "g", 0, 100)
    log.txn(7, "g", 1, 110)         # another partition of the same transaction survives
    log.txn(8, "g", 0, 120)         # a second producer's pending commit on the same partition goes too
    log.tombstone("g", 0)
    log.marker(7, commit=True)
    log.marker(8, commit=True)
    log.write()
    g = _groups(kdump, tmp_path)["g"]
    assert (_committed(g), _pending(g)) == ({1: 110}, {})


def test_a_tombstone_in_a_transactional_batch_applies_at_once(kdump, tmp_path):
    """Kafka replays a tombstone whatever its batch: it is not held until the marker."""
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.tombstone("g", 0, producer_id=7)
    log.marker(7, commit=False)
    log.write()
    assert _committed(_groups(kdump, tmp_path)["g"]) == {}


def test_a_producer_killed_mid_transaction_leaves_its_commit_pending_until_the_coordinator_aborts(kdump, tmp_path):
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.txn(7, "g", 0, 100)
    log.write()
    assert _pending(_groups(kdump, tmp_path)["g"]) == {(0, 7): 100}
    log.marker(7, commit=False, epoch=1)      # the coordinator's abort after the timeout bumps the epoch
    log.write()
    g = _groups(kdump, tmp_path)["g"]
    assert (_committed(g), _pending(g)) == ({0: 50}, {})


def test_a_producer_id_on_a_plain_batch_makes_its_commit_pending(kdump, tmp_path):
    """The loader hands every data batch's producer id to the replay: any id but -1 is pending."""
    log = Log(tmp_path)
    log.plain("g", 0, 50, producer_id=5)
    log.write()
    g = _groups(kdump, tmp_path)["g"]
    assert (_committed(g), _pending(g)) == ({}, {(0, 5): 50})


def test_markers_end_only_their_own_coordinator_partitions_transactions(kdump, tmp_path):
    a, b = Log(tmp_path, 0), Log(tmp_path, 1)
    a.txn(7, "ga", 0, 100)
    a.marker(7, commit=True)
    b.txn(7, "gb", 0, 200)
    a.write()
    b.write()
    gs = _groups(kdump, tmp_path)
    assert (_committed(gs["ga"]), _pending(gs["ga"])) == ({0: 100}, {})
    assert (_committed(gs["gb"]), _pending(gs["gb"])) == ({}, {(0, 7): 200})


def test_deleting_a_group_deletes_its_pending_offsets(kdump, tmp_path):
    """DeleteGroups writes a tombstone per committed offset and per partition with pending
    commits only, then the group's; a COMMIT marker afterwards restores nothing."""
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.txn(7, "g", 1, 100)
    log.tombstone("g", 0)
    log.tombstone("g", 1)
    log.group_tombstone("g")
    log.marker(7, commit=True)
    log.write()
    assert _groups(kdump, tmp_path) == {}


def test_a_deleted_group_whose_offsets_remain_is_dead_until_used_again(kdump, tmp_path):
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.txn(7, "g", 1, 100)
    log.group_tombstone("g")
    log.write()
    g = _groups(kdump, tmp_path)["g"]
    assert (g["state"], _committed(g), _pending(g)) == ("Dead", {0: 50}, {(1, 7): 100})
    log.plain("g", 2, 60)               # an offset commit makes it a (simple) group again
    log.write()
    g = _groups(kdump, tmp_path)["g"]
    assert (g["state"], _committed(g)) == ("Empty", {0: 50, 2: 60})


def test_at_shows_pending_offsets_as_they_were(kdump, tmp_path):
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.txn(7, "g", 0, 100)
    plain = log.plain("g", 0, 200)
    log.marker(7, commit=True)
    log.write()

    def at(n):
        g = _groups(kdump, tmp_path, "--at", f"{T + n * 1000}")["g"]
        return _committed(g), _pending(g)

    assert at(0) == ({0: 50}, {})
    assert at(1) == ({0: 50}, {(0, 7): 100})
    assert at(plain) == ({0: 200}, {(0, 7): 100})
    assert at(plain + 1) == ({0: 200}, {})


def test_text_and_table_show_pending_offsets_apart(kdump, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")        # the table's rows on one line, whatever the terminal
    log = Log(tmp_path)
    log.plain("g", 0, 50)
    log.txn(7, "g", 0, 100)
    log.write()
    r = kdump("groups", tmp_path, "--format", "text", "--now", NOW)
    assert (r.code, r.err) == (0, "")
    assert r.out == (
        "__consumer_offsets: partition count unknown, 1 here\n"
        "group g: protocol classic state Empty generation - assignor - (__consumer_offsets-0)\n"
        "  t-0: offset 50 log end - lag - leader epoch -1 committed 2023-11-14T22:13:20.000Z metadata 'plain'\n"
        "  t-0: pending offset 100 producer 7 epoch 0 (uncommitted transaction, record at offset 1) leader epoch -1 "
        "commit timestamp 2023-11-14T22:13:21.000Z metadata 'txn'\n")
    r = kdump("groups", tmp_path, "--format", "table", "--now", NOW)
    assert r.code == 0
    pending = r.out[r.out.index("pending transactional offsets (not committed)"):]
    assert re.search(r"┃ group\s+┃ topic-partition\s+┃ offset ┃ producer ┃ epoch ┃ record at ┃ commit time \(UTC\)",
                     pending), r.out
    assert re.search(r"│ g\s+│ t-0\s+│\s+100 │\s+7 │\s+0 │\s+1 │ 2023-11-14T22:13:21.000Z │", pending), r.out
    assert "pending transactional offsets" not in _table_without_pending(kdump, tmp_path)


def _table_without_pending(kdump, tmp_path) -> str:
    log = Log(tmp_path / "plain")
    (tmp_path / "plain").mkdir()
    log.plain("g", 0, 50)
    log.write()
    return kdump("groups", tmp_path / "plain", "--format", "table", "--now", NOW).out


# -- the same cases, written by a real broker ---------------------------------------------------

def _describe() -> dict[tuple[str, str, int], int | None]:
    return txn_offsets.describe_rows((BROKER / "txn-offsets.describe").read_text())


def test_broker_fixture_is_as_the_broker_wrote_it():
    sums = re.findall(r"^    ([0-9a-f]{64})  (\S+)$", (BROKER / "TXN-OFFSETS.md").read_text(), re.M)
    assert len(sums) > 20
    for digest, name in sums:
        assert hashlib.sha256((BROKER / name).read_bytes()).hexdigest() == digest, name


def test_broker_fixture_committed_offsets_are_consumer_group_commands(kdump):
    r = kdump("groups", TXN_OFFSETS, "--json")
    assert (r.code, r.err) == (0, "")
    groups = [o for o in _json(r) if o["object"] == "group"]
    ours = {(g["group_id"], o["topic"], o["partition"]): o["offset"] for g in groups for o in g["offsets"]}
    assert ours == _describe() == {("g-abort", "src", 0): 50, ("g-commit", "src", 0): 100,
                                   ("g-crash", "src", 0): 50, ("g-open", "src", 0): 50,
                                   ("g-plain-after", "src", 0): 200}
    # g-tombstone exists (its commits made it a simple group) with no offset left
    assert {g["group_id"]: g["state"] for g in groups} == {
        "g-abort": "Empty", "g-commit": "Empty", "g-crash": "Empty", "g-open": "Empty", "g-plain-after": "Empty",
        "g-tombstone": "Empty"}
    lags = {g["group_id"]: (o["log_end_offset"], o["lag"]) for g in groups for o in g["offsets"]}
    assert lags["g-plain-after"] == (250, 50)


def test_broker_fixture_pending_offsets_are_the_open_transactions(kdump):
    groups = _groups(kdump, TXN_OFFSETS)
    pending = {gid: [(o["topic"], o["partition"], o["offset"], o["metadata"]) for o in g["pending_offsets"]]
               for gid, g in groups.items() if g["pending_offsets"]}
    assert pending == {"g-open": [("src", 0, 100, "txn t-open")], "g-crash": [("src", 0, 100, "txn t-crash")]}
    # the producer ids are those __transaction_state gives t-open and t-crash, still Ongoing
    r = kdump("txn", TXN_OFFSETS, "--json", "--now", NOW)
    ids = {o["transactional_id"]: (o["producer_id"], o["state"]) for o in _json(r)
           if o["object"] == "transactional_id"}
    assert groups["g-open"]["pending_offsets"][0]["producer_id"] == ids["t-open"][0]
    assert groups["g-crash"]["pending_offsets"][0]["producer_id"] == ids["t-crash"][0]
    assert ids["t-open"][1] == ids["t-crash"][1] == "Ongoing"


def test_broker_fixture_at_each_step(kdump):
    """Before t-plain-after's COMMIT marker: its transactional 100 pending, the plain 200
    committed; t-tombstone's pending 100 gone with the OffsetDelete tombstone."""
    r = kdump("dump", TXN_OFFSETS / "__consumer_offsets-0", "--records", "--json")
    batches = _json(r)
    marker_ts = {b["base_offset"]: b["max_timestamp"] for b in batches if b["is_control"]}
    plain_after = next(b for b in batches if not b["is_control"] and b["producer_id"] == -1
                       and b["records"] and '"g-plain-after"' in json.dumps(b))
    before_commit = max(ts for off, ts in marker_ts.items() if off < plain_after["base_offset"])
    at = next(ts for off, ts in sorted(marker_ts.items()) if off > plain_after["base_offset"]) - 1
    assert at >= before_commit
    g = _groups(kdump, TXN_OFFSETS, "--at", str(at))["g-plain-after"]
    assert [(o["offset"], o["metadata"]) for o in g["offsets"]] == [(200, "plain")]
    assert [(o["offset"], o["metadata"]) for o in g["pending_offsets"]] == [(100, "txn t-plain-after")]


# -- missing data -----------------------------------------------------------------------------

def _copy(tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(TXN_OFFSETS, root)
    return root


@pytest.mark.parametrize("remove, reason", [
    (["00000000000000000000.log"], "no .log segment: its records are gone"),
    (["00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
      "00000000000000000000.txnindex"], "no .log segment: its records are gone"),
])
def test_groups_names_an_incomplete_offsets_partition(kdump, tmp_path, remove, reason):
    root = _copy(tmp_path)
    part = root / "__consumer_offsets-0"
    for name in remove:
        (part / name).unlink()
    note = f"kdump: note: incomplete: {part}: {reason}; the groups it holds may be stale\n"
    r = kdump("groups", root, "--json")
    assert (r.code, r.err) == (0, note)
    header = _json(r)[0]
    assert header["incomplete"] == [{"partition": 0, "reason": f"{part}: {reason}"}]
    r = kdump("groups", root, "--json", "--strict")
    assert (r.code, r.err) == (1, note)
    r = kdump("groups", root, "--format", "text")
    assert r.out.startswith("__consumer_offsets: 1 partition (from __cluster_metadata), 1 here, incomplete: "
                            "__consumer_offsets-0\n")


def test_groups_marks_the_groups_of_a_partition_missing_a_segment(kdump, tmp_path, monkeypatch):
    """A second segment whose .log is gone (its indexes are left): the groups read from the
    first are possibly stale; a group hashed to a complete partition is not."""
    monkeypatch.setenv("COLUMNS", "200")
    root = tmp_path / "logs"
    log = Log(root, 1)              # Java's hash puts g in partition 1 of 2, h in 0
    root.mkdir()
    log.plain("g", 0, 50)
    log.write()
    (log.path / "00000000000000000007.index").write_bytes(b"")
    (log.path / "00000000000000000007.timeindex").write_bytes(b"")
    other = Log(root, 0)
    other.plain("h", 0, 60)
    other.write()
    reason = f"{log.path}: 1 segment missing (indexes without their .log: 00000000000000000007.log): their records " \
             f"are gone"
    r = kdump("groups", root, "--json", "--now", NOW)
    assert (r.code, r.err) == (0, f"kdump: note: incomplete: {reason}; the groups it holds may be stale\n")
    gs = {o["group_id"]: o["possibly_stale"] for o in _json(r) if o["object"] == "group"}
    assert gs == {"g": True, "h": False}
    r = kdump("groups", root, "--format", "text", "--now", NOW, "--partitions", "2", "--group", "g")
    assert "(__consumer_offsets-1, incomplete: possibly stale)" in r.out
    assert _json(kdump("groups", root, "--json", "--now", NOW, "--partitions", "2", "--group", "g"))[0][
        "possibly_stale"] is True
    r = kdump("groups", root, "--format", "table", "--now", NOW)
    assert "Empty (stale?)" in r.out
    assert kdump("groups", root, "--strict", "--json", "--now", NOW).code == 1


def test_txn_names_an_incomplete_transaction_state_partition(kdump, tmp_path):
    root = _copy(tmp_path)
    part = root / "__transaction_state-0"
    segment = sorted(part.glob("*.log"))[-1]
    segment.unlink()
    r = kdump("txn", root, "--json", "--now", NOW)
    reason = f"{part}: no .log segment: its records are gone" if not list(part.glob("*.log")) else \
        f"{part}: 1 segment missing (indexes without their .log: {segment.name}): their records are gone"
    assert r.code == 0
    assert f"kdump: note: incomplete: {reason}; the transactional ids it holds may be stale" in r.err
    objs = _json(r)
    assert objs[0] == {"object": "incomplete", "topic": "__transaction_state", "partition": 0, "reason": reason}
    assert kdump("txn", root, "--json", "--now", NOW, "--strict").code == 1


def test_txn_marks_transactional_ids_of_an_incomplete_partition(kdump, tmp_path):
    root = _copy(tmp_path)
    part = root / "__transaction_state-0"
    (part / "00000000000000009999.index").write_bytes(b"")     # a later segment lost its .log
    r = kdump("txn", root, "--json", "--now", NOW)
    ids = {o["transactional_id"]: o["possibly_stale"] for o in _json(r) if o["object"] == "transactional_id"}
    assert ids and all(ids.values())
    r = kdump("txn", root, "--format", "text", "--now", NOW)
    assert "(__transaction_state-0 offset" in r.out and ", incomplete: possibly stale)" in r.out
    r = kdump("txn", TXN_OFFSETS, "--json", "--now", NOW, "--strict")
    assert not any(o.get("possibly_stale") for o in _json(r) if o["object"] == "transactional_id")


def test_metadata_names_segments_missing_between_the_snapshot_and_the_point(kdump, tmp_path):
    root = _copy(tmp_path)
    part = root / "__cluster_metadata-0"
    logs = sorted(part.glob("*.log"))
    assert len(logs) == 2
    last = logs[-1]
    first_offset = int(last.name.split(".")[0])
    last.unlink()
    r = kdump("metadata", part, "--json")
    why = f"{part}: {last.name} missing (its indexes are here) between the snapshot and the point: the image may " \
          f"be stale"
    assert (r.code, r.err) == (0, f"kdump: note: incomplete: {why}\n")
    assert _json(r)[0]["incomplete"] == [why]
    assert kdump("metadata", part, "--json", "--strict").code == 1
    # a point before the lost segment is whole
    r = kdump("metadata", part, "--json", "--strict", "--at", str(first_offset - 1))
    assert (r.code, r.err, _json(r)[0]["incomplete"]) == (0, "", [])
    # the lost segment in the middle: the next one starts past the offsets expected
    shutil.copy(TXN_OFFSETS / "__cluster_metadata-0" / last.name, last)
    first = logs[0]
    for f in part.glob(first.name.split(".")[0] + ".*"):
        f.unlink()
    r = kdump("metadata", part, "--json", "--strict")
    snapshot = _json(r)[0]["snapshot"]
    assert snapshot is not None and snapshot.endswith("00000000000000000000-0000000000.checkpoint")
    why = f"{last}: offsets 0..{first_offset - 1} are not here (a segment missing between the snapshot and the " \
          f"point): the image may be stale"
    assert (r.code, r.err) == (1, f"kdump: note: incomplete: {why}\n")
