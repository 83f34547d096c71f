"""KRaft __cluster_metadata: DumpLogSegmentsTest.testDumpMetadataRecords (#15) and each record type."""

from __future__ import annotations

import pytest
from kafka_wire import blob, boolean, count, f64, i8, i16, i32, i64, string, tags, u16, uuid, uvarint

from kdump.decoders import cluster_metadata as cm
from kdump.decoders.coordinator import UnknownRecordTypeError
from kdump.errors import DecodeError

F = True
TOPIC_ID = "_yRFwjuwQ5yqFI4kjQyApQ"
DIR_ID = "surWMNpmXk5bl_Ry5tk_EA"


def frame(api_key: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def register_broker(version: int, broker_id=1) -> bytes:
    body = i32(broker_id)
    if version >= 2:
        body += boolean(False)
    body += uuid(DIR_ID) + i64(7)
    body += count(1, F) + string("PLAINTEXT", F) + string("localhost", F) + u16(9092) + i16(0) + tags()
    body += count(1, F) + string("metadata.version", F) + i16(1) + i16(21) + tags()
    body += string("r1", F) + boolean(True)
    if version >= 1:
        body += boolean(False)
    body += tags({0: count(1, F) + uuid(DIR_ID)} if version >= 3 else None)
    return frame(0, version, body)


def test_dls15_topic_record_text():
    decoded = cm.decode(None, frame(2, 0, string("foo", F) + uuid(TOPIC_ID) + tags()))
    assert decoded == {"type": "TOPIC_RECORD", "type_id": 2, "version": 0, "key": None,
                       "value": {"name": "foo", "topicId": TOPIC_ID}}
    assert cm.text(decoded) == (None, '{"type":"TOPIC_RECORD","version":0,"data":{"name":"foo","topicId":"%s"}}'
                                % TOPIC_ID)


@pytest.mark.parametrize("version", range(4))
def test_dls15_register_broker_versions(version):
    decoded = cm.decode(None, register_broker(version))
    assert decoded["type"] == "REGISTER_BROKER_RECORD" and "BROKER_RECORD" in cm.text(decoded)[1]
    value = decoded["value"]
    assert value["endPoints"] == [{"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}]
    assert value["fenced"] is True and value["rack"] == "r1"
    assert ("isMigratingZkBroker" in value) == (version >= 2)
    assert ("inControlledShutdown" in value) == (version >= 1)
    assert value.get("logDirs") == ([DIR_ID] if version >= 3 else None)


def test_dls15_partition_change_tags():
    body = i32(0) + uuid(TOPIC_ID) + tags({0: count(2, F) + i32(1) + i32(2), 1: i32(2)})
    decoded = cm.decode(None, frame(5, 0, body))
    # leader -2, replicas null, recovery state -1: defaults, left out as Kafka does
    assert decoded["value"] == {"partitionId": 0, "topicId": TOPIC_ID, "isr": [1, 2], "leader": 2}


def test_partition_change_v2_elr_and_directories():
    body = i32(3) + uuid(TOPIC_ID) + tags({6: count(1, F) + i32(4), 7: count(0, F), 8: count(1, F) + uuid(DIR_ID)})
    value = cm.decode(None, frame(5, 2, body))["value"]
    assert list(value) == ["partitionId", "topicId", "directories", "eligibleLeaderReplicas", "lastKnownElr"]
    assert value["eligibleLeaderReplicas"] == [4] and value["lastKnownElr"] == [] and value["directories"] == [DIR_ID]


@pytest.mark.parametrize("version", range(3))
def test_partition_record_versions(version):
    body = i32(0) + uuid(TOPIC_ID) + count(3, F) + i32(1) + i32(2) + i32(3) + count(2, F) + i32(1) + i32(2)
    body += count(0, F) + count(0, F) + i32(1) + i32(5) + i32(6)
    if version >= 1:
        body += count(3, F) + uuid(DIR_ID) * 3
    body += tags({1: count(1, F) + i32(3)} if version >= 2 else None)
    value = cm.decode(None, frame(3, version, body))["value"]
    assert value["replicas"] == [1, 2, 3] and value["leaderEpoch"] == 5 and value["partitionEpoch"] == 6
    assert "leaderRecoveryState" not in value
    assert value.get("eligibleLeaderReplicas") == ([3] if version >= 2 else None)


def test_dls15_bogus_record_is_an_error():
    with pytest.raises(DecodeError) as err:
        cm.decode(None, uvarint(10000) + uvarint(10000))
    assert "skipping" in cm.error_text(err.value, 5)
    assert cm.error_text(err.value, 5).startswith("Error at 5, skipping. ")
    assert "unknown frame version 10000" in err.value.message


@pytest.mark.parametrize("value, message", [
    (b"", "Error reading frame version"),
    (uvarint(0) + uvarint(2) + uvarint(0), "frame version 0"),
    (uvarint(40000), "Value for frame version was too large."),
    (uvarint(1) + uvarint(40000), "Value for type was too large."),
    (uvarint(1) + uvarint(2), "Error reading version"),
    (frame(99, 0, b""), "Unknown metadata id 99"),
    (frame(2, 1, string("foo", F) + uuid(TOPIC_ID) + tags()), "Can't read version 1 of TopicRecord"),
    (frame(2, 0, string("foo", F) + uuid(TOPIC_ID) + tags() + b"\x00\x00"),
     r"Found 2 byte\(s\) of garbage after TopicRecord"),
    (frame(2, 0, string("foo", F) + b"\x00" * 10), "Failed to deserialize record with type 2"),
    (frame(2, 0, string(None, F) + uuid(TOPIC_ID) + tags()), "non-nullable field name was serialized as null"),
])
def test_malformed_values(value, message):
    with pytest.raises(DecodeError, match=message):
        cm.decode(None, value)


def test_unknown_type_is_its_own_error_class_and_none_value_is_an_error():
    with pytest.raises(UnknownRecordTypeError):
        cm.decode(None, frame(6, 0, b"\x00"))                      # apiKey 6 is not used by Kafka
    with pytest.raises(DecodeError, match="no value"):
        cm.decode(b"k", None)


# -- the other record types -----------------------------------------------------------------

CASES = [
    (1, 0, i32(4) + i64(9) + tags(), "UNREGISTER_BROKER_RECORD", {"brokerId": 4, "brokerEpoch": 9}),
    (4, 0, i8(2) + string("foo", F) + string("retention.ms", F) + string(None, F) + tags(), "CONFIG_RECORD",
     {"resourceType": 2, "resourceName": "foo", "name": "retention.ms", "value": None}),
    (7, 0, i32(1) + i64(2) + tags(), "FENCE_BROKER_RECORD", {"id": 1, "epoch": 2}),
    (8, 0, i32(1) + i64(3) + tags(), "UNFENCE_BROKER_RECORD", {"id": 1, "epoch": 3}),
    (9, 0, uuid(TOPIC_ID) + tags(), "REMOVE_TOPIC_RECORD", {"topicId": TOPIC_ID}),
    (10, 0, string("User:a", F) + string("User:b", F) + count(1, F) + string("User:c", F) + i64(1) + i64(2)
     + i64(3) + string("tok", F) + tags(), "DELEGATION_TOKEN_RECORD",
     {"owner": "User:a", "requester": "User:b", "renewers": ["User:c"], "issueTimestamp": 1, "maxTimestamp": 2,
      "expirationTimestamp": 3, "tokenId": "tok"}),
    (11, 0, string("alice", F) + i8(1) + blob(b"s", F) + blob(b"k", F) + blob(b"v", F) + i32(4096) + tags(),
     "USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice", "mechanism": 1, "salt": "cw==", "storedKey": "aw==",
                                      "serverKey": "dg==", "iterations": 4096}),
    (12, 0, string("metadata.version", F) + i16(21) + tags(), "FEATURE_LEVEL_RECORD",
     {"name": "metadata.version", "featureLevel": 21}),
    (14, 0, count(1, F) + string("user", F) + string(None, F) + tags() + string("producer_byte_rate", F)
     + f64(1048576.0) + boolean(False) + tags(), "CLIENT_QUOTA_RECORD",
     {"entity": [{"entityType": "user", "entityName": None}], "key": "producer_byte_rate", "value": 1048576.0,
      "remove": False}),
    (15, 0, i32(1) + i64(5) + i64(4000) + tags(), "PRODUCER_IDS_RECORD",
     {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 4000}),
    (17, 2, i32(1) + i64(5) + tags({0: i8(-1), 2: count(1, F) + uuid(DIR_ID)}), "BROKER_REGISTRATION_CHANGE_RECORD",
     {"brokerId": 1, "brokerEpoch": 5, "fenced": -1, "logDirs": [DIR_ID]}),
    (18, 0, uuid(TOPIC_ID) + i8(2) + string("foo", F) + i8(3) + string("User:x", F) + string("*", F) + i8(2) + i8(3)
     + tags(), "ACCESS_CONTROL_ENTRY_RECORD",
     {"id": TOPIC_ID, "resourceType": 2, "resourceName": "foo", "patternType": 3, "principal": "User:x",
      "host": "*", "operation": 2, "permissionType": 3}),
    (19, 0, uuid(TOPIC_ID) + tags(), "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", {"id": TOPIC_ID}),
    (20, 0, tags(), "NO_OP_RECORD", {}),
    (21, 0, i8(3) + tags(), "ZK_MIGRATION_STATE_RECORD", {"zkMigrationState": 3}),
    (22, 0, string("alice", F) + i8(2) + tags(), "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
     {"name": "alice", "mechanism": 2}),
    (23, 0, tags({0: string("bulk", F)}), "BEGIN_TRANSACTION_RECORD", {"name": "bulk"}),
    (24, 0, tags(), "END_TRANSACTION_RECORD", {}),
    (25, 0, tags(), "ABORT_TRANSACTION_RECORD", {}),
    (26, 0, string("tok", F) + tags(), "REMOVE_DELEGATION_TOKEN_RECORD", {"tokenId": "tok"}),
    (27, 0, i32(3000) + uuid(DIR_ID) + boolean(False) + count(1, F) + string("CONTROLLER", F) + string("c1", F)
     + u16(9093) + i16(0) + tags() + count(0, F) + tags(), "REGISTER_CONTROLLER_RECORD",
     {"controllerId": 3000, "incarnationId": DIR_ID, "zkMigrationReady": False,
      "endPoints": [{"name": "CONTROLLER", "host": "c1", "port": 9093, "securityProtocol": 0}], "features": []}),
    (28, 0, string("", F) + tags(), "CLEAR_ELR_RECORD", {"topicName": ""}),
]


@pytest.mark.parametrize("api_key, version, body, name, expected", CASES, ids=[c[3] for c in CASES])
def test_record_types(api_key, version, body, name, expected):
    decoded = cm.decode(None, frame(api_key, version, body))
    assert (decoded["type"], decoded["type_id"], decoded["version"], decoded["value"]) == (
        name, api_key, version, expected)


def test_doubles_print_like_java():
    body = count(0, F) + string("k", F) + f64(1e7) + boolean(False) + tags()
    assert '"value":1.0E7' in cm.text(cm.decode(None, frame(14, 0, body)))[1]


def test_every_listed_type_has_a_schema():
    names = {t.name for t in cm.types().values()}
    for required in ("REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD",
                     "PARTITION_CHANGE_RECORD", "CONFIG_RECORD", "FEATURE_LEVEL_RECORD", "PRODUCER_IDS_RECORD",
                     "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
                     "REMOVE_TOPIC_RECORD", "CLIENT_QUOTA_RECORD", "ACCESS_CONTROL_ENTRY_RECORD",
                     "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "NO_OP_RECORD", "BEGIN_TRANSACTION_RECORD",
                     "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD", "REGISTER_CONTROLLER_RECORD"):
        assert required in names
