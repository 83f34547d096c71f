"""Internal topics through ``kdump dump``: auto-selected decoders, per-record errors, KRaft snapshots.

Ports DumpLogSegmentsTest #15-#17 at the command-line level (the decoders' own scenarios,
#20-#22, are in tests/decoders/).
"""

from __future__ import annotations

import json

from kdump import encode as build
from kdump.format.control import KRAFT_VERSION, SNAPSHOT_FOOTER, SNAPSHOT_HEADER
from support.run import REAL, run_kdump, write_segment

NOW = 1_700_000_000_000
MANNY = REAL / "Manny-97__end-to-end-streaming-system" / "kafka" / "data" / "__cluster_metadata-0"


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))


def topic_record(name: str) -> bytes:
    body = uvarint(len(name) + 1) + name.encode() + bytes(range(16)) + b"\x00"
    return uvarint(1) + uvarint(2) + uvarint(0) + body


def test_every_internal_record_in_the_fixture_tree_decodes():
    r = run_kdump("dump", REAL, "--data", "--json")
    # Two fixture partitions were committed without their .log (the source repo ignores *.log).
    # The other lines are the notes of gaps compaction explains (kdump/check/gaps.py): nothing unexplained.
    missing, notes = [], []
    for line in r.err.splitlines():
        (missing if ": log_missing: " in line else notes).append(line)
    assert r.code == 0 and len(missing) == 2, r.err[:500]
    assert notes and all(" explained by compaction (cleaned up to offset " in line for line in notes), notes
    decoded = errors = 0
    for line in r.out.splitlines():
        obj = json.loads(line)
        for rec in obj.get("records") or []:
            if "decode_error" in rec:
                errors += 1
            if "decoded" in rec:
                decoded += 1
            if rec.get("control"):
                assert "error" not in rec["control"], rec
    assert errors == 0
    assert decoded > 34_000


def test_bogus_metadata_record_is_skipped_not_fatal(tmp_path):
    """#15: a bogus record among valid ones: the types still print, and 'skipping' appears."""
    good = [(0, NOW, None, topic_record("orders")), (1, NOW, None, topic_record("payments"))]
    bogus = [(0, NOW, None, uvarint(10000) + uvarint(10000))]
    seg = write_segment(tmp_path / "__cluster_metadata-0", [
        build.build_v2_batch(good, base_offset=0),
        build.build_v2_batch(bogus, base_offset=2),
        build.build_v2_batch([(0, NOW, None, topic_record("after"))], base_offset=3)])
    r = run_kdump("dump", seg, "--data")            # decoder chosen from the directory name
    assert r.code == 0
    assert r.out.count("TOPIC_RECORD") == 3 and "skipping" in r.out
    r = run_kdump("dump", seg, "--cluster-metadata-decoder", "--skip-record-metadata")
    assert r.out.count("TOPIC_RECORD") == 3
    js = [json.loads(x) for x in run_kdump("dump", seg, "--data", "--json").out.splitlines()]
    assert "decode_error" in js[1]["records"][0] and js[2]["records"][0]["decoded"]["value"]["name"] == "after"


def test_control_records_are_described(tmp_path):
    """#16: COMMIT marker and KRaft control records each print their DumpLogSegments form."""
    batches = [
        build.build_end_txn_marker(True, base_offset=0, producer_id=1, producer_epoch=0, coordinator_epoch=5),
        build.build_control_batch(SNAPSHOT_HEADER, b"\x00\x00" + (10000).to_bytes(8, "big") + b"\x00",
                                  base_offset=1),
        build.build_control_batch(KRAFT_VERSION, b"\x00\x00\x00\x01\x00", base_offset=2),
        build.build_control_batch(SNAPSHOT_FOOTER, b"\x00\x00\x00", base_offset=3),
    ]
    seg = write_segment(tmp_path / "__cluster_metadata-0", batches)
    r = run_kdump("dump", seg, "--cluster-metadata-decoder")
    assert r.code == 0, r.err
    assert "endTxnMarker: COMMIT coordinatorEpoch: 5" in r.out
    assert 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":10000}' in r.out
    assert 'KRaftVersion {"version":0,"kRaftVersion":1}' in r.out
    assert 'SnapshotFooter {"version":0}' in r.out


def test_kraft_snapshot_file():
    """#17: a real <offset>-<epoch>.checkpoint: snapshot line, record types, header/footer."""
    snap = MANNY / "00000000000000006342-0000000001.checkpoint"
    r = run_kdump("dump", snap, "--data")
    assert r.code == 0
    assert "Snapshot end offset: 6342, epoch: 1" in r.out
    for word in ("FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "SnapshotHeader", "SnapshotFooter",
                 '"lastContainedLogTimestamp":'):
        assert word in r.out, word
    r = run_kdump("dump", snap, "--data", "--skip-record-metadata")
    assert "Snapshot end offset: 6342, epoch: 1" in r.out and "REGISTER_BROKER_RECORD" in r.out
    assert "SnapshotHeader" not in r.out and "SnapshotFooter" not in r.out
    r = run_kdump("dump", MANNY.parent / "bootstrap.checkpoint", "--data")
    assert r.code == 0 and "KRaft bootstrap snapshot" in r.out


def test_offsets_decoder_text_and_json():
    part = REAL / "William0423__kafka" / "kafka-logs" / "__consumer_offsets-28"
    r = run_kdump("dump", part, "--data")
    line = next(x for x in r.out.splitlines() if '"type":"1"' in x)
    assert ' key: {"type":"1","data":{"group":' in line and ' payload: {"version":' in line
    objs = [json.loads(x) for x in run_kdump("dump", part, "--data", "--json").out.splitlines()]
    rec = objs[1]["records"][0]
    assert rec["decoded"]["type"] == "OFFSET_COMMIT" and rec["decoded"]["key"]["group"] == "debug-consumer-group"
    # --no-auto-decode gives the raw view
    raw = run_kdump("dump", part, "--data", "--no-auto-decode").out
    assert '"type":"1"' not in raw


def _share_key(type_id: int) -> bytes:
    topic_id = bytes(range(16))
    return type_id.to_bytes(2, "big") + (3).to_bytes(2, "big") + b"gs1" + topic_id + (0).to_bytes(4, "big")


def _share_update(start: int) -> bytes:
    batch = start.to_bytes(8, "big") + (start + 4).to_bytes(8, "big") + b"\x02" + (1).to_bytes(2, "big") + b"\x00"
    return (b"\x00\x00" + (0).to_bytes(4, "big") + (5).to_bytes(4, "big") + start.to_bytes(8, "big")
            + b"\x02" + batch + b"\x00")


def test_share_group_state_dump(tmp_path):
    """#22 at the command line: auto-selected for __share_group_state-N, per-record errors, JSON."""
    recs = [(0, NOW, _share_key(1), _share_update(0)), (1, NOW, _share_key(1), _share_update(5)),
            (2, NOW, _share_key(0), None), (3, NOW, _share_key(1), b"\x00\x00\x00"),
            (4, NOW, (0x7FFF).to_bytes(2, "big"), b"\x00\x00")]
    seg = write_segment(tmp_path / "__share_group_state-3", [build.build_v2_batch(recs)])
    r = run_kdump("dump", seg, "--data")
    # type 32767 has no schema: a record_unknown_schema finding (damage); the others are read
    assert (r.code, r.err) == (1, f"kdump: error: {seg}:0: offset 4: record_unknown_schema: Unknown record type "
                                  f"32767 (no schema for record type 32767 version 0 here: a newer Kafka's record, "
                                  f"or damage); skipped\n")
    lines = [x for x in r.out.splitlines() if x.startswith("| offset:")]
    assert len(lines) == 5
    assert lines[0].endswith(' key: {"type":"1","data":{"groupId":"gs1","topicId":"AAECAwQFBgcICQoLDA0ODw",'
                             '"partition":0}} payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":5,'
                             '"startOffset":0,"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,'
                             '"deliveryCount":1}]}}')
    assert lines[2].endswith(' payload: <DELETE>')
    assert " key: Error at offset 3, skipping. Could not read record with version 0 from value's buffer" in lines[3]
    assert lines[4].endswith(" key: Unknown record type 32767 at offset 4, skipping.")
    # the flag selects it anywhere; without it a plain directory shows raw bytes
    plain = write_segment(tmp_path / "elsewhere-0", [build.build_v2_batch(recs)])
    assert '"type":"1"' not in run_kdump("dump", plain, "--data").out
    assert run_kdump("dump", plain, "--share-group-state-decoder").out.count('"groupId":"gs1"') == 3
    js = json.loads(run_kdump("dump", seg, "--json", "--data").out.splitlines()[0])
    first, bad = js["records"][0], js["records"][3]
    assert first["decoded"]["type"] == "SHARE_UPDATE"
    assert first["decoded"]["value"]["stateBatches"][0]["deliveryStateName"] == "Acknowledged"
    assert "decode_error" in bad and "decoded" not in bad


# -- __remote_log_metadata (KIP-405 tiered storage) ------------------------------------------

TOPIC_ID = bytes(range(16))             # AAECAwQFBgcICQoLDA0ODw
SEGMENT_ID = bytes(range(16, 32))       # EBESExQVFhcYGRobHB0eHw
TIP_TEXT = '{"name":"foo","id":"AAECAwQFBgcICQoLDA0ODw","partition":0}'


def _remote_frame(api_key: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(0) + body


def _topic_id_partition() -> bytes:
    return uvarint(4) + b"foo" + TOPIC_ID + (0).to_bytes(4, "big") + b"\x00"


def _partition_delete() -> bytes:
    """RemotePartitionDeleteMetadata v0: foo-0, brokerId 0, eventTimestampMs 0, DELETE_PARTITION_MARKED."""
    return _remote_frame(2, _topic_id_partition() + (0).to_bytes(4, "big") + (0).to_bytes(8, "big") + b"\x00\x00")


def _segment_update() -> bytes:
    """RemoteLogSegmentMetadataUpdate v0 with custom metadata 00 01 02 03, COPY_SEGMENT_FINISHED."""
    body = (_topic_id_partition() + SEGMENT_ID + b"\x00" + (0).to_bytes(4, "big") + (0).to_bytes(8, "big")
            + uvarint(5) + bytes([0, 1, 2, 3]) + b"\x01" + b"\x00")
    return _remote_frame(1, body)


DELETE_TEXT = ('{"type":"REMOTE_PARTITION_DELETE_METADATA_RECORD","version":0,"data":{"topicIdPartition":%s,'
               '"brokerId":0,"eventTimestampMs":0,"remotePartitionDeleteState":0}}' % TIP_TEXT)


def test_remote_log_metadata_dump(tmp_path):
    """DumpLogSegmentsTest's --remote-log-metadata-decoder cases: records in one and in several
    batches, a corrupted value among them (an error line, and the dump goes on)."""
    seg = write_segment(tmp_path / "__remote_log_metadata-0", [
        build.build_v2_batch([(0, NOW, None, _segment_update()), (1, NOW, None, _partition_delete())]),
        build.build_v2_batch([(0, NOW, None, b"corrupted")], base_offset=2),
        build.build_v2_batch([(0, NOW, None, _partition_delete())], base_offset=3)])
    r = run_kdump("dump", seg, "--data")                  # decoder chosen from the directory name
    assert r.code == 0, r.err
    assert "Log starting offset: 0" in r.out
    assert r.out.count("baseOffset:") == 3
    lines = [x for x in r.out.splitlines() if x.startswith("| offset:")]
    assert len(lines) == 4
    assert lines[0].endswith(
        ' payload: {"type":"REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD","version":0,"data":{"remoteLogSegmentId":'
        '{"topicIdPartition":%s,"id":"EBESExQVFhcYGRobHB0eHw"},"brokerId":0,"eventTimestampMs":0,'
        '"customMetadata":"AAECAw==","remoteLogSegmentState":1}}' % TIP_TEXT)
    assert lines[1].endswith(" payload: " + DELETE_TEXT) and lines[3].endswith(" payload: " + DELETE_TEXT)
    # no key: the error is the payload, worded "Error at offset N" as DumpLogSegments does for this topic
    assert lines[2].endswith(" payload: Error at offset 2, skipping. Could not deserialize metadata record due to "
                             "unknown frame version 99 (only frame version 1 is supported)")
    assert " key:" not in r.out
    js = [json.loads(x) for x in run_kdump("dump", seg, "--data", "--json").out.splitlines()]
    update, delete = js[0]["records"]
    assert update["decoded"]["type"] == "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD"
    assert update["decoded"]["value"]["remoteLogSegmentStateName"] == "COPY_SEGMENT_FINISHED"
    assert update["decoded"]["value"]["customMetadata"] == "AAECAw=="
    assert delete["decoded"]["value"]["remotePartitionDeleteStateName"] == "DELETE_PARTITION_MARKED"
    bad = js[1]["records"][0]
    assert "decoded" not in bad and "unknown frame version 99" in bad["decode_error"]
    assert js[2]["records"][0]["decoded"]["type_id"] == 2
    r = run_kdump("dump", seg, "--remote-log-metadata-decoder", "--skip-record-metadata")
    assert r.out.count("REMOTE_PARTITION_DELETE_METADATA_RECORD") == 2 and "skipping" in r.out


def test_remote_log_metadata_flag_and_precedence(tmp_path):
    plain = write_segment(tmp_path / "elsewhere-0", [build.build_v2_batch([(0, NOW, None, _partition_delete())])])
    assert "REMOTE_PARTITION" not in run_kdump("dump", plain, "--data").out
    r = run_kdump("dump", plain, "--remote-log-metadata-decoder")      # implies --data
    assert r.code == 0 and r.out.rstrip().endswith(" payload: " + DELETE_TEXT)
    # DumpLogSegments' order: offsets > transaction-log > cluster-metadata > remote-log-metadata > share-group-state
    both = run_kdump("dump", plain, "--remote-log-metadata-decoder", "--share-group-state-decoder").out
    assert both.rstrip().endswith(" payload: " + DELETE_TEXT)
    cm = run_kdump("dump", plain, "--cluster-metadata-decoder", "--remote-log-metadata-decoder").out
    assert " payload: Error at 0, skipping. Failed to deserialize record with type 2" in cm


def test_remote_log_metadata_non_zero_starting_offset_and_empty(tmp_path):
    """DumpLogSegmentsTest: testDumpRemoteLogMetadataNonZeroStartingOffset and ...Empty."""
    part = tmp_path / "__remote_log_metadata-7"
    write_segment(part, [], base_offset=0)
    second = write_segment(part, [build.build_v2_batch([(0, NOW, None, _partition_delete())], base_offset=1)],
                           base_offset=1)
    r = run_kdump("dump", second, "--remote-log-metadata-decoder")
    assert r.code == 0 and "Log starting offset: 1" in r.out
    assert r.out.count("baseOffset:") == 1 and r.out.count("payload:") == 1 and DELETE_TEXT in r.out
    empty = run_kdump("dump", part / f"{0:020d}.log", "--remote-log-metadata-decoder")
    assert empty.code == 0 and "Log starting offset: 0" in empty.out
    assert "baseOffset:" not in empty.out and "payload:" not in empty.out
