"""__share_group_state: DumpLogSegmentsTest.testShareGroupStateMessageParser (#22) and more.

The records are written out by hand from Kafka's share-coordinator message specs
(ShareSnapshotKey/Value, ShareUpdateKey/Value), not from kdump's schema file.
"""

from __future__ import annotations

import pytest
from kafka_wire import count, i8, i16, i32, i64, string, tags, uuid

from kdump.decoders import coordinator
from kdump.decoders import share_group_state as sgs
from kdump.decoders.coordinator import MissingKeyError, UnknownRecordTypeError
from kdump.errors import DecodeError

TOPIC_ID = "Uj5wn_FqTXirEASvVZRY1w"
TS = 1_732_000_000_123
F = True    # share-state values are flexible from v0


def key(type_id: int, group: str = "gs1", partition: int = 0) -> bytes:
    return i16(type_id) + string(group) + uuid(TOPIC_ID) + i32(partition)


def batches(*rows) -> bytes:
    return count(len(rows), F) + b"".join(i64(a) + i64(b) + i8(s) + i16(c) + tags() for a, b, s, c in rows)


def snapshot_value(rows=((0, 4, 2, 1),), complete: int | None = None, snapshot_epoch=0, state_epoch=0,
                   leader_epoch=0, start=0, create=TS, write=TS) -> bytes:
    body = (i32(snapshot_epoch) + i32(state_epoch) + i32(leader_epoch) + i64(start) + i64(create) + i64(write)
            + batches(*rows))
    return i16(0) + body + tags({0: i32(complete)} if complete is not None else None)


def update_value(rows=((0, 4, 2, 1),), complete: int | None = None, snapshot_epoch=0, leader_epoch=0,
                 start=0) -> bytes:
    body = i32(snapshot_epoch) + i32(leader_epoch) + i64(start) + batches(*rows)
    return i16(0) + body + tags({0: i32(complete)} if complete is not None else None)


KEY_TEXT_SNAPSHOT = '{"type":"0","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}'
KEY_TEXT_UPDATE = '{"type":"1","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}'


def test_dls22_missing_key():
    with pytest.raises(MissingKeyError) as err:
        sgs.decode(None, None)
    assert sgs.error_text(err.value, 0) == (
        "Failed to decode message at offset 0 using the specified decoder (message had a missing key)")


def test_dls22_share_snapshot():
    decoded = sgs.decode(key(0), snapshot_value())
    assert sgs.text(decoded) == (KEY_TEXT_SNAPSHOT, (
        '{"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":0,"startOffset":0,'
        f'"createTimestamp":{TS},"writeTimestamp":{TS},"stateBatches":[{{'
        '"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}'))
    assert decoded["type"] == "SHARE_SNAPSHOT" and decoded["type_id"] == 0
    assert decoded["key"] == {"groupId": "gs1", "topicId": TOPIC_ID, "partition": 0}
    # kdump's JSON names the delivery state next to its code; Kafka's text does not
    assert decoded["value"]["stateBatches"] == [
        {"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryStateName": "Acknowledged",
         "deliveryCount": 1}]


def test_dls22_share_update():
    decoded = sgs.decode(key(1), update_value())
    assert sgs.text(decoded) == (KEY_TEXT_UPDATE, (
        '{"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}'))
    assert decoded["type"] == "SHARE_UPDATE"


def test_dls22_tombstone():
    decoded = sgs.decode(key(0), None)
    assert sgs.text(decoded) == (KEY_TEXT_SNAPSHOT, "<DELETE>")
    assert decoded["value"] is None and decoded["version"] is None


def test_dls22_unknown_record_type():
    with pytest.raises(UnknownRecordTypeError) as err:
        sgs.decode(key(0x7FFF), snapshot_value())
    assert sgs.error_text(err.value, 0) == "Unknown record type 32767 at offset 0, skipping."


def test_dls22_snapshot_value_under_an_update_key():
    # A ShareSnapshotValue with every field at its default, read as the ShareUpdateValue its
    # key promises: the array count lands on a zero byte, i.e. a null array.
    value = i16(0) + i32(0) * 3 + i64(0) * 3 + count(0, F) + tags()
    with pytest.raises(DecodeError) as err:
        sgs.decode(key(1, "group"), value)
    assert sgs.error_text(err.value, 0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "non-nullable field stateBatches was serialized as null.")


def test_delivery_complete_count_tag_kip_1226():
    decoded = sgs.decode(key(1), update_value(complete=7, start=100))
    assert decoded["value"]["deliveryCompleteCount"] == 7
    assert list(decoded["value"]) == ["snapshotEpoch", "leaderEpoch", "startOffset", "deliveryCompleteCount",
                                      "stateBatches"]
    assert '"startOffset":100,"deliveryCompleteCount":7,"stateBatches"' in sgs.text(decoded)[1]
    # written with its default (-1) it is left out, as Kafka's JSON converter does
    assert "deliveryCompleteCount" not in sgs.decode(key(0), snapshot_value(complete=-1))["value"]


def test_field_values_and_state_names():
    rows = ((10, 19, 0, 0), (20, 20, 1, 3), (21, 30, 4, 5), (31, 31, 3, 1))
    decoded = sgs.decode(key(0, "orders-share", 7), snapshot_value(rows, snapshot_epoch=3, state_epoch=2,
                                                                   leader_epoch=9, start=10, create=1, write=2))
    v = decoded["value"]
    assert (v["snapshotEpoch"], v["stateEpoch"], v["leaderEpoch"], v["startOffset"]) == (3, 2, 9, 10)
    assert (v["createTimestamp"], v["writeTimestamp"]) == (1, 2)
    assert [b["deliveryStateName"] for b in v["stateBatches"]] == ["Available", "Acquired", "Archived", "Unknown(3)"]
    assert decoded["key"] == {"groupId": "orders-share", "topicId": TOPIC_ID, "partition": 7}


@pytest.mark.parametrize("cut", [1, 2, 5, 20, 40])
def test_truncated_values_are_decode_errors(cut):
    value = snapshot_value(((0, 4, 2, 1), (5, 9, 0, 2)))
    with pytest.raises(DecodeError):
        sgs.decode(key(0), value[:-cut])


def test_unknown_value_version_is_a_decode_error():
    with pytest.raises(DecodeError):
        sgs.decode(key(0), i16(1) + snapshot_value()[2:])


def test_same_table_object_is_reused():
    assert sgs.table() is coordinator.record_table(sgs.SCHEMA_FILE)
