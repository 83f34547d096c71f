"""A record of a type, or a value version, kdump has no schema for (a newer Kafka's): one
``record_unknown_schema`` finding, located (file, the batch's byte position, the offset) and
named (record type, version), the same in dump, metadata, groups and txn; the rest of the
batch is read; exit 1 (damage, as metadata's other undecodable records)."""

from __future__ import annotations

import json
import struct

import pytest

from kdump.encode import build_v2_batch
from support.run import run_kdump, write_segment

T = 1_700_000_000_000
NOW = "2023-11-15T00:00:00Z"
UNKNOWN = "(no schema for record type {t} version {v} here: a newer Kafka's record, or damage); skipped"


def _s(x: str) -> bytes:
    return struct.pack(">h", len(x)) + x.encode()


def _commit(partition: int, offset: int) -> tuple[bytes, bytes]:
    key = struct.pack(">h", 1) + _s("g") + _s("t") + struct.pack(">i", partition)
    return key, struct.pack(">hqi", 3, offset, -1) + _s("") + struct.pack(">q", T)      # OffsetCommitValue v3


def _txn(tid: str, producer_id: int, version: int = 0) -> tuple[bytes, bytes]:
    value = struct.pack(">hqhib", version, producer_id, 0, 60000, 0) + struct.pack(">iqq", -1, T, T)
    return struct.pack(">h", 0) + _s(tid), value


def _feature(name: str, level: int) -> bytes:
    # frame 1, FeatureLevelRecord (apiKey 12) v0: compact name, level, no tags
    return b"\x01\x0c\x00" + bytes([len(name) + 1]) + name.encode() + struct.pack(">h", level) + b"\x00"


# Per topic: the records of the second batch (offsets 1..3): type 999, a version past the
# newest, one that decodes; the first batch holds one good record.
RECORDS = {
    "__consumer_offsets-0": [_commit(0, 10), (struct.pack(">h", 999) + _s("g"), b"\x00\x00\x00"),
                             (_commit(0, 0)[0], struct.pack(">h", 99) + b"\x00\x00"), _commit(1, 20)],
    "__transaction_state-0": [_txn("a", 5), (struct.pack(">h", 999) + _s("b"), _txn("b", 6)[1]),
                              (_txn("c", 0)[0], struct.pack(">h", 9) + b"\x00"), _txn("d", 7)],
    "__cluster_metadata-0": [(None, _feature("metadata.version", 20)), (None, b"\x01\xe7\x07\x00\x00"),
                             (None, b"\x01\x0c\x63\x00"), (None, _feature("kraft.version", 1))],
}
# (record type, version) of offsets 1 and 2, and the message's head
EXPECTED = {
    "__consumer_offsets-0": [(999, 0, "Unknown record type 999"),
                             (1, 99, "Could not read record with version 99 from value's buffer due to: Can't read "
                                     "version 99 of OffsetCommitValue")],
    "__transaction_state-0": [(999, 0, "Unknown record type 999"),
                              (0, 9, "Could not read record with version 9 from value's buffer due to: Can't read "
                                     "version 9 of TransactionLogValue")],
    "__cluster_metadata-0": [(999, 0, "Unknown metadata id 999"),
                             (12, 99, "Failed to deserialize record with type 12: Can't read version 99 of "
                                      "FeatureLevelRecord")],
}

DLS_LINES = {
    "__consumer_offsets-0": ["key: Unknown record type 999 at offset 1, skipping.",
                             "key: Error at offset 2, skipping. " + EXPECTED["__consumer_offsets-0"][1][2] + "."],
    "__transaction_state-0": ["key: Unknown record type 999 at offset 1, skipping.",
                              "key: Error at offset 2, skipping. " + EXPECTED["__transaction_state-0"][1][2] + "."],
    "__cluster_metadata-0": ["payload: Error at 1, skipping. Unknown metadata id 999",
                             "payload: Error at 2, skipping. " + EXPECTED["__cluster_metadata-0"][1][2]],
}


@pytest.fixture
def logs(tmp_path):
    """A log dir of the three partitions: {partition name: (its .log, the second batch's position)}."""
    out = {}
    for name, recs in RECORDS.items():
        first = build_v2_batch([(0, T, *recs[0])], base_timestamp=T)
        second = build_v2_batch([(i, T, *r) for i, r in enumerate(recs[1:])], base_offset=1, base_timestamp=T)
        out[name] = (write_segment(tmp_path / name, [first, second]), len(first))
    return tmp_path, out


def _findings(log, position, name) -> list[dict]:
    return [{"object": "finding", "kind": "record_unknown_schema", "class": "damage", "file": str(log),
             "position": position, "offset": offset, "record_type": t, "version": v,
             "message": f"{head} {UNKNOWN.format(t=t, v=v)}"}
            for offset, (t, v, head) in enumerate(EXPECTED[name], start=1)]


def _lines(found: list[dict]) -> str:
    return "".join(f"kdump: error: {f['file']}:{f['position']}: offset {f['offset']}: record_unknown_schema: "
                   f"{f['message']}\n" for f in found)


def _json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("name", list(RECORDS))
def test_dump_text_and_json(logs, name):
    _, parts = logs
    log, position = parts[name]
    found = _findings(log, position, name)
    r = run_kdump("dump", log.parent, "--records", "--data")
    assert r.code == 1 and r.err == _lines(found), r.err
    # stdout stays DumpLogSegments': its own line for each, and the record after them decoded
    lines = r.out.splitlines()
    assert [line.split(" headerKeys: [] ")[1] for line in lines[-3:-1]] == DLS_LINES[name]
    assert lines[-1].split(" headerKeys: [] ")[1].startswith(("key: {", "payload: {"))
    r = run_kdump("dump", log.parent, "--records", "--data", "--format", "table")
    assert r.code == 1 and r.err == _lines(found), r.err
    r = run_kdump("dump", log.parent, "--records", "--data", "--json")
    objs = _json(r.out)
    assert (r.code, r.err) == (1, "")
    assert [o["object"] for o in objs] == ["batch", "batch", "finding", "finding"]
    assert objs[2:] == found
    assert [("decoded" in x, "decode_error" in x) for x in objs[1]["records"]] == [
        (False, True), (False, True), (True, False)]


def test_metadata(logs):
    root, parts = logs
    log, position = parts["__cluster_metadata-0"]
    found = _findings(log, position, "__cluster_metadata-0")
    r = run_kdump("metadata", log.parent)
    assert (r.code, r.err) == (1, _lines(found))
    assert r.out == ("cluster metadata: snapshot -, replayed to offset 3 (2023-11-14T22:13:20.000Z)\n"
                     "feature kraft.version=1\nfeature metadata.version=20\n")
    r = run_kdump("metadata", log.parent, "--json")
    assert (r.code, r.err) == (1, "")
    objs = _json(r.out)
    assert objs[0]["errors"] == [] and objs[-2:] == found
    assert [o["object"] for o in objs] == ["metadata", "feature", "feature", "finding", "finding"]


def test_groups(logs):
    root, parts = logs
    log, position = parts["__consumer_offsets-0"]
    found = _findings(log, position, "__consumer_offsets-0")
    r = run_kdump("groups", log.parent, "--now", NOW)
    assert (r.code, r.err) == (1, _lines(found))
    assert r.out == (
        "__consumer_offsets: partition count unknown, 1 here\n"
        "group g: protocol classic state Empty generation - assignor - (__consumer_offsets-0)\n"
        "  t-0: offset 10 log end - lag - leader epoch -1 committed 2023-11-14T22:13:20.000Z metadata ''\n"
        "  t-1: offset 20 log end - lag - leader epoch -1 committed 2023-11-14T22:13:20.000Z metadata ''\n")
    r = run_kdump("groups", log.parent, "--now", NOW, "--json")
    assert (r.code, r.err) == (1, "")
    objs = _json(r.out)
    assert [o["object"] for o in objs] == ["offsets_topic", "group", "finding", "finding"] and objs[2:] == found


def test_txn(logs):
    root, parts = logs
    log, position = parts["__transaction_state-0"]
    found = _findings(log, position, "__transaction_state-0")
    r = run_kdump("txn", log.parent, "--now", NOW)
    assert (r.code, r.err) == (1, _lines(found) + "kdump: txn: 0 partitions, 0 producers; transactions: 0 committed, "
                                                  "0 aborted, 0 open (0 hanging)\n")
    assert r.out == (
        "transactional id a: producer 5 epoch 0 Empty partitions - timeout 60000 ms (__transaction_state-0 offset 0)\n"
        "transactional id d: producer 7 epoch 0 Empty partitions - timeout 60000 ms (__transaction_state-0 offset 3)\n")
    r = run_kdump("txn", log.parent, "--now", NOW, "--json")
    assert (r.code, r.err) == (1, "")
    objs = _json(r.out)
    assert [o["object"] for o in objs] == ["finding", "finding", "transactional_id", "transactional_id"]
    assert objs[:2] == found
