"""__remote_log_metadata (KIP-405 tiered storage): the four record types, byte by byte.

The values are written out by hand from Kafka's message specs (storage/src/main/resources/
message/RemoteLogSegmentMetadataRecord.json, ...UpdateRecord.json,
RemotePartitionDeleteMetadataRecord.json, RemoteLogSegmentMetadataSnapshotRecord.json), not
from kdump's schema file. The DumpLogSegmentsTest scenarios for --remote-log-metadata-decoder
(one delete record; an update with 4 bytes of custom metadata next to a delete; a corrupted
value) are ported here as far as they concern bytes -> fields; the segment-level ones are in
tests/render/test_internal_topics_cli.py.
"""

from __future__ import annotations

import pytest
from kafka_wire import blob, boolean, count, i8, i32, i64, string, tags, uuid, uvarint

from kdump.decoders import cluster_metadata, frame
from kdump.decoders import remote_log_metadata as rlm
from kdump.decoders.coordinator import UnknownRecordTypeError
from kdump.errors import DecodeError

F = True                                   # every remote-log metadata record is flexible from v0
TOPIC_ID = "Uj5wn_FqTXirEASvVZRY1w"
SEGMENT_ID = "surWMNpmXk5bl_Ry5tk_EA"
TS = 1_732_000_000_123


def framed(api_key: int, version: int, body: bytes, frame_version: int = 1) -> bytes:
    return uvarint(frame_version) + uvarint(api_key) + uvarint(version) + body


def topic_id_partition(name: str = "foo", partition: int = 0) -> bytes:
    return string(name, F) + uuid(TOPIC_ID) + i32(partition) + tags()


def segment_id(name: str = "foo", partition: int = 0) -> bytes:
    return topic_id_partition(name, partition) + uuid(SEGMENT_ID) + tags()


def leader_epochs(*pairs) -> bytes:
    return count(len(pairs), F) + b"".join(i32(epoch) + i64(offset) + tags() for epoch, offset in pairs)


def segment_metadata(version: int = 0, state: int = 0, custom: bytes | None = None,
                     txn_index_empty: bool | None = None, broker_leader_epoch: int | None = None) -> bytes:
    body = (segment_id() + i64(100) + i64(199) + i32(3) + i64(TS + 5) + i64(TS) + leader_epochs((0, 100), (2, 150))
            + i32(4096) + blob(custom, F) + i8(state))
    tagged = {}
    if txn_index_empty is not None:
        tagged[0] = boolean(txn_index_empty)
    if broker_leader_epoch is not None:
        tagged[1] = i32(broker_leader_epoch)
    return framed(0, version, body + tags(tagged))


def segment_update(version: int = 0, state: int = 1, custom: bytes | None = None, broker_id: int = 0,
                   ts: int = 0, broker_leader_epoch: int | None = None, end_offset: int | None = None) -> bytes:
    body = segment_id() + i32(broker_id) + i64(ts) + blob(custom, F) + i8(state)
    tagged = {}
    if broker_leader_epoch is not None:
        tagged[0] = i32(broker_leader_epoch)
    if end_offset is not None:
        tagged[1] = i64(end_offset)
    return framed(1, version, body + tags(tagged))


def partition_delete(version: int = 0, state: int = 0, broker_id: int = 0, ts: int = 0,
                     broker_leader_epoch: int | None = None, end_offset: int | None = None) -> bytes:
    body = topic_id_partition() + i32(broker_id) + i64(ts) + i8(state)
    tagged = {}
    if broker_leader_epoch is not None:
        tagged[0] = i32(broker_leader_epoch)
    if end_offset is not None:
        tagged[1] = i64(end_offset)
    return framed(2, version, body + tags(tagged))


def segment_snapshot(version: int = 0, txn_index_empty: bool | None = None,
                     broker_leader_epoch: int | None = None) -> bytes:
    body = (uuid(SEGMENT_ID) + i64(0) + i64(99) + i32(1) + i64(TS) + i64(TS + 1) + leader_epochs((7, 0))
            + i32(1024) + blob(None, F) + i8(1))
    tagged = {}
    if txn_index_empty is not None:
        tagged[0] = boolean(txn_index_empty)
    if broker_leader_epoch is not None:
        tagged[1] = i32(broker_leader_epoch)
    return framed(3, version, body + tags(tagged))


TIP = {"name": "foo", "id": TOPIC_ID, "partition": 0}
TIP_TEXT = '{"name":"foo","id":"%s","partition":0}' % TOPIC_ID
SEG = {"topicIdPartition": TIP, "id": SEGMENT_ID}
SEG_TEXT = '{"topicIdPartition":%s,"id":"%s"}' % (TIP_TEXT, SEGMENT_ID)


# -- DumpLogSegmentsTest scenarios ----------------------------------------------------------

def test_dls_one_partition_delete_record():
    """testDumpRemoteLogMetadataOneRecordOneBatch: RemotePartitionDeleteMetadata, DELETE_PARTITION_MARKED."""
    decoded = rlm.decode(None, partition_delete())
    assert decoded == {"type": "REMOTE_PARTITION_DELETE_METADATA_RECORD", "type_id": 2, "version": 0, "key": None,
                       "value": {"topicIdPartition": TIP, "brokerId": 0, "eventTimestampMs": 0,
                                 "remotePartitionDeleteState": 0,
                                 "remotePartitionDeleteStateName": "DELETE_PARTITION_MARKED"}}
    assert rlm.text(decoded) == (None, (
        '{"type":"REMOTE_PARTITION_DELETE_METADATA_RECORD","version":0,"data":{"topicIdPartition":%s,'
        '"brokerId":0,"eventTimestampMs":0,"remotePartitionDeleteState":0}}' % TIP_TEXT))


def test_dls_update_with_custom_metadata():
    """testDumpRemoteLogMetadataMultipleRecordsOneBatch: an update with 4 bytes of custom metadata,
    COPY_SEGMENT_FINISHED (the batch's other record is the delete above)."""
    decoded = rlm.decode(None, segment_update(custom=bytes([0, 1, 2, 3])))
    assert decoded == {"type": "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD", "type_id": 1, "version": 0, "key": None,
                       "value": {"remoteLogSegmentId": SEG, "brokerId": 0, "eventTimestampMs": 0,
                                 "customMetadata": "AAECAw==", "remoteLogSegmentState": 1,
                                 "remoteLogSegmentStateName": "COPY_SEGMENT_FINISHED"}}
    assert rlm.text(decoded) == (None, (
        '{"type":"REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD","version":0,"data":{"remoteLogSegmentId":%s,'
        '"brokerId":0,"eventTimestampMs":0,"customMetadata":"AAECAw==","remoteLogSegmentState":1}}' % SEG_TEXT))


def test_dls_corrupted_value():
    """testDumpRemoteLogMetadataWithCorruption: b"corrupted" ('c' = frame version 99)."""
    with pytest.raises(DecodeError) as err:
        rlm.decode(None, b"corrupted")
    assert rlm.error_text(err.value, 0) == (
        "Error at offset 0, skipping. Could not deserialize metadata record due to unknown frame version 99 "
        "(only frame version 1 is supported)")


# -- each record type -----------------------------------------------------------------------

def test_segment_metadata_v0():
    decoded = rlm.decode(None, segment_metadata(custom=b"\xff\x00"))
    assert decoded["type"] == "REMOTE_LOG_SEGMENT_METADATA_RECORD" and decoded["type_id"] == 0
    assert decoded["value"] == {
        "remoteLogSegmentId": SEG, "startOffset": 100, "endOffset": 199, "brokerId": 3, "maxTimestampMs": TS + 5,
        "eventTimestampMs": TS, "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 100},
                                                        {"leaderEpoch": 2, "offset": 150}],
        "segmentSizeInBytes": 4096, "customMetadata": "/wA=", "remoteLogSegmentState": 0,
        "remoteLogSegmentStateName": "COPY_SEGMENT_STARTED"}
    assert rlm.text(decoded) == (None, (
        '{"type":"REMOTE_LOG_SEGMENT_METADATA_RECORD","version":0,"data":{"remoteLogSegmentId":%s,'
        '"startOffset":100,"endOffset":199,"brokerId":3,"maxTimestampMs":%d,"eventTimestampMs":%d,'
        '"segmentLeaderEpochs":[{"leaderEpoch":0,"offset":100},{"leaderEpoch":2,"offset":150}],'
        '"segmentSizeInBytes":4096,"customMetadata":"/wA=","remoteLogSegmentState":0}}' % (SEG_TEXT, TS + 5, TS)))


def test_segment_metadata_tagged_fields():
    # txnIndexEmpty (tag 0, v0+, default false); brokerLeaderEpoch (tag 1, v1+, default 0)
    v0 = rlm.decode(None, segment_metadata(txn_index_empty=True))["value"]
    assert v0["txnIndexEmpty"] is True and "brokerLeaderEpoch" not in v0
    assert list(v0)[-3:] == ["remoteLogSegmentState", "remoteLogSegmentStateName", "txnIndexEmpty"]
    v1 = rlm.decode(None, segment_metadata(1, state=3, txn_index_empty=True, broker_leader_epoch=12))
    assert v1["version"] == 1 and v1["value"]["brokerLeaderEpoch"] == 12
    assert v1["value"]["remoteLogSegmentStateName"] == "DELETE_SEGMENT_FINISHED"
    assert rlm.text(v1)[1].endswith('"customMetadata":null,"remoteLogSegmentState":3,"txnIndexEmpty":true,'
                                    '"brokerLeaderEpoch":12}}')
    # written at their defaults they are left out, as Kafka's JSON converters do
    same = rlm.decode(None, segment_metadata(1, txn_index_empty=False, broker_leader_epoch=0))["value"]
    assert "txnIndexEmpty" not in same and "brokerLeaderEpoch" not in same
    # a v1 field's tag in a v0 record is an unknown tag: kept in the JSON, not in the text
    odd = rlm.decode(None, segment_metadata(0, broker_leader_epoch=12))
    assert odd["value"]["_unknown_tags"] == {"1": "AAAADA=="} and "_unknown_tags" not in rlm.text(odd)[1]


def test_segment_update_v1_tags_default_to_minus_one():
    v = rlm.decode(None, segment_update(1, state=2, broker_id=4, ts=TS, broker_leader_epoch=6, end_offset=199))
    assert v["value"] == {"remoteLogSegmentId": SEG, "brokerId": 4, "eventTimestampMs": TS, "customMetadata": None,
                          "remoteLogSegmentState": 2, "remoteLogSegmentStateName": "DELETE_SEGMENT_STARTED",
                          "brokerLeaderEpoch": 6, "endOffset": 199}
    assert rlm.text(v)[1].endswith('"customMetadata":null,"remoteLogSegmentState":2,"brokerLeaderEpoch":6,'
                                   '"endOffset":199}}')
    assert "brokerLeaderEpoch" not in rlm.decode(None, segment_update(1, broker_leader_epoch=-1))["value"]
    zero = rlm.decode(None, segment_update(1, broker_leader_epoch=0, end_offset=0))["value"]
    assert zero["brokerLeaderEpoch"] == 0 and zero["endOffset"] == 0        # not the default (-1): printed


def test_partition_delete_v1():
    v = rlm.decode(None, partition_delete(1, state=2, broker_id=1, ts=TS, broker_leader_epoch=3, end_offset=500))
    assert v["value"] == {"topicIdPartition": TIP, "brokerId": 1, "eventTimestampMs": TS,
                          "remotePartitionDeleteState": 2,
                          "remotePartitionDeleteStateName": "DELETE_PARTITION_FINISHED",
                          "brokerLeaderEpoch": 3, "endOffset": 500}
    assert rlm.text(v) == (None, (
        '{"type":"REMOTE_PARTITION_DELETE_METADATA_RECORD","version":1,"data":{"topicIdPartition":%s,"brokerId":1,'
        '"eventTimestampMs":%d,"remotePartitionDeleteState":2,"brokerLeaderEpoch":3,"endOffset":500}}'
        % (TIP_TEXT, TS)))
    # these two tags have no declared default, so 0 is the default
    assert list(rlm.decode(None, partition_delete(1, broker_leader_epoch=0, end_offset=0))["value"]) == [
        "topicIdPartition", "brokerId", "eventTimestampMs", "remotePartitionDeleteState",
        "remotePartitionDeleteStateName"]


def test_segment_snapshot():
    decoded = rlm.decode(None, segment_snapshot(1, txn_index_empty=True, broker_leader_epoch=2))
    assert decoded["type"] == "REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD" and decoded["type_id"] == 3
    assert decoded["value"] == {
        "segmentId": SEGMENT_ID, "startOffset": 0, "endOffset": 99, "brokerId": 1, "maxTimestampMs": TS,
        "eventTimestampMs": TS + 1, "segmentLeaderEpochs": [{"leaderEpoch": 7, "offset": 0}],
        "segmentSizeInBytes": 1024, "customMetadata": None, "remoteLogSegmentState": 1,
        "remoteLogSegmentStateName": "COPY_SEGMENT_FINISHED", "txnIndexEmpty": True, "brokerLeaderEpoch": 2}
    assert rlm.text(decoded) == (None, (
        '{"type":"REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD","version":1,"data":{"segmentId":"%s",'
        '"startOffset":0,"endOffset":99,"brokerId":1,"maxTimestampMs":%d,"eventTimestampMs":%d,'
        '"segmentLeaderEpochs":[{"leaderEpoch":7,"offset":0}],"segmentSizeInBytes":1024,"customMetadata":null,'
        '"remoteLogSegmentState":1,"txnIndexEmpty":true,"brokerLeaderEpoch":2}}' % (SEGMENT_ID, TS, TS + 1)))


def test_undefined_state_codes_are_named_unknown():
    # Kafka's RemoteLogSegmentState.forId would fail on these; kdump shows the fields and says so.
    assert rlm.decode(None, segment_update(state=9))["value"]["remoteLogSegmentStateName"] == "Unknown(9)"
    assert rlm.decode(None, partition_delete(state=-1))["value"]["remotePartitionDeleteStateName"] == "Unknown(-1)"
    assert rlm.state_name("remoteLogSegmentState", 2) == "DELETE_SEGMENT_STARTED"


def test_the_key_is_ignored():
    assert rlm.decode(b"anything", partition_delete()) == rlm.decode(None, partition_delete())


def test_type_table():
    assert {t.id: t.name for t in rlm.types().values()} == {
        0: "REMOTE_LOG_SEGMENT_METADATA_RECORD", 1: "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD",
        2: "REMOTE_PARTITION_DELETE_METADATA_RECORD", 3: "REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD"}
    assert rlm.types() is frame.record_types(rlm.SCHEMA_FILE)
    for t in rlm.types().values():
        assert (t.message.lowest, t.message.highest) == (0, 1)


# -- malformed values -----------------------------------------------------------------------

ALL = [segment_metadata(1, custom=b"abc", txn_index_empty=True, broker_leader_epoch=5),
       segment_update(1, custom=b"\x00", broker_leader_epoch=1, end_offset=2),
       partition_delete(1, broker_leader_epoch=1, end_offset=2),
       segment_snapshot(1, txn_index_empty=True, broker_leader_epoch=1)]


@pytest.mark.parametrize("value", ALL, ids=["metadata", "update", "delete", "snapshot"])
def test_every_truncation_is_a_decode_error(value):
    rlm.decode(None, value)                                   # whole: fine
    for cut in range(len(value)):
        with pytest.raises(DecodeError):
            rlm.decode(None, value[:cut])


@pytest.mark.parametrize("value", ALL, ids=["metadata", "update", "delete", "snapshot"])
def test_trailing_bytes_are_a_decode_error(value):
    with pytest.raises(DecodeError, match=r"Found 1 byte\(s\) of garbage after Remote\w+Record") as err:
        rlm.decode(None, value + b"\x00")
    assert rlm.error_text(err.value, 9).startswith(
        "Error at offset 9, skipping. Failed to deserialize record with type ")


@pytest.mark.parametrize("api_key", [4, 5, 99, 0x7FFF])
def test_unknown_api_key(api_key):
    with pytest.raises(UnknownRecordTypeError) as err:
        rlm.decode(None, framed(api_key, 0, partition_delete()[3:]))
    assert err.value.type_id == api_key
    assert rlm.error_text(err.value, 3) == f"Error at offset 3, skipping. Unknown metadata id {api_key}"


@pytest.mark.parametrize("value, message", [
    (framed(2, 0, partition_delete()[3:], frame_version=0),
     "Could not deserialize metadata record with frame version 0"),
    (framed(2, 0, partition_delete()[3:], frame_version=2), r"unknown frame version 2 \(only frame version 1"),
    (b"", "Error reading frame version"),
    (uvarint(1) + uvarint(40000), "Value for type was too large."),
    (uvarint(1) + uvarint(2) + uvarint(40000), "Value for version was too large."),
    (framed(2, 2, partition_delete()[3:]), "Can't read version 2 of RemotePartitionDeleteMetadataRecord"),
    (framed(2, 0, string(None, F) + uuid(TOPIC_ID) + i32(0) + tags() + i32(0) + i64(0) + i8(0) + tags()),
     "non-nullable field name was serialized as null"),
    (framed(0, 0, segment_id() + i64(0) * 2 + i32(0) + i64(0) * 2 + count(10**6, F)),
     "Tried to allocate a collection of size 1000000"),
])
def test_malformed_values(value, message):
    with pytest.raises(DecodeError, match=message):
        rlm.decode(None, value)


def test_none_value_is_a_decode_error():
    with pytest.raises(DecodeError, match="no value") as err:
        rlm.decode(None, None)
    assert rlm.error_text(err.value, 4) == "Error at offset 4, skipping. metadata record has no value"


def test_error_lines_differ_from_cluster_metadata_as_in_kafka():
    with pytest.raises(DecodeError) as err:
        rlm.decode(None, b"corrupted")
    assert rlm.error_text(err.value, 7).startswith("Error at offset 7, skipping. ")
    assert cluster_metadata.error_text(err.value, 7).startswith("Error at 7, skipping. ")
    assert rlm.ERROR_IN_PAYLOAD and cluster_metadata.ERROR_IN_PAYLOAD


def test_a_cluster_metadata_record_is_not_a_remote_log_record():
    # the same frame, another table: TopicRecord's apiKey 2 reads as a partition-delete body and fails
    topic_record = framed(2, 0, string("foo", F) + uuid(TOPIC_ID) + tags())
    assert cluster_metadata.decode(None, topic_record)["type"] == "TOPIC_RECORD"
    with pytest.raises(DecodeError, match="Failed to deserialize record with type 2"):
        rlm.decode(None, topic_record)
