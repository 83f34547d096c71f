"""__consumer_offsets: hand-built records, and DumpLogSegmentsTest.testOffsetsMessageParser (#20)."""

from __future__ import annotations

import base64

import pytest
from kafka_wire import blob, count, i8, i16, i32, i64, string, tags, uuid

from kdump.decoders import consumer_offsets as co
from kdump.decoders.coordinator import MissingKeyError, UnknownRecordTypeError
from kdump.errors import DecodeError

TS = 1_700_000_000_123


def offset_key(group="g", topic="t", partition=0, type_id=1):
    return i16(type_id) + string(group) + string(topic) + i32(partition)


# -- offset commits -------------------------------------------------------------------------

def test_offset_commit_v3():
    value = i16(3) + i64(42) + i32(7) + string("meta") + i64(TS)
    decoded = co.decode(offset_key(), value)
    assert decoded == {"type": "OFFSET_COMMIT", "type_id": 1, "version": 3,
                       "key": {"group": "g", "topic": "t", "partition": 0},
                       "value": {"offset": 42, "leaderEpoch": 7, "metadata": "meta", "commitTimestamp": TS}}
    assert co.text(decoded) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"meta","commitTimestamp":%d}}' % TS)


@pytest.mark.parametrize("version, body, expected", [
    (0, i64(5) + string("") + i64(TS), {"offset": 5, "metadata": "", "commitTimestamp": TS}),
    (1, i64(5) + string("m") + i64(TS) + i64(TS + 86_400_000),
     {"offset": 5, "metadata": "m", "commitTimestamp": TS, "expireTimestamp": TS + 86_400_000}),
    (2, i64(5) + string("") + i64(TS), {"offset": 5, "metadata": "", "commitTimestamp": TS}),
])
def test_offset_commit_old_versions(version, body, expected):
    decoded = co.decode(offset_key(), i16(version) + body)
    assert decoded["value"] == expected and decoded["version"] == version


def test_legacy_key_type_0_uses_the_same_layout():
    decoded = co.decode(offset_key(type_id=0), i16(0) + i64(9) + string("") + i64(TS))
    assert decoded["type"] == "LEGACY_OFFSET_COMMIT"
    assert decoded["key"] == {"group": "g", "topic": "t", "partition": 0}
    assert decoded["value"]["offset"] == 9


def test_offset_commit_v4_flexible_franz_go_example():
    # franz-go issue #1105: the first v4 value Kafka 4.1 wrote.
    value = bytes.fromhex("0004" "000000000021d4a8" "ffffffff" "01" "0000019964f2d836" "00")
    decoded = co.decode(offset_key(), value)
    assert decoded["version"] == 4
    assert decoded["value"] == {"offset": 0x21D4A8, "leaderEpoch": -1, "metadata": "",
                                "commitTimestamp": 0x19964F2D836}


def test_offset_commit_v4_keeps_unknown_tags_but_not_in_text():
    value = i16(4) + i64(1) + i32(-1) + string("", True) + i64(TS) + tags({7: b"\x01\x02"})
    decoded = co.decode(offset_key(), value)
    assert decoded["value"]["_unknown_tags"] == {"7": base64.b64encode(b"\x01\x02").decode()}
    assert "_unknown_tags" not in co.text(decoded)[1]


# -- classic group metadata -----------------------------------------------------------------

def subscription_v3(topics, owned, generation, rack, user_data=None):
    out = i16(3) + count(len(topics)) + b"".join(string(t) for t in topics) + blob(user_data)
    out += count(len(owned)) + b"".join(string(t) + count(len(ps)) + b"".join(i32(p) for p in ps) for t, ps in owned)
    return out + i32(generation) + string(rack)


def assignment(version, assigned, user_data=None):
    body = count(len(assigned)) + b"".join(string(t) + count(len(ps)) + b"".join(i32(p) for p in ps)
                                           for t, ps in assigned)
    return i16(version) + body + blob(user_data)


def group_value_v4(subscription: bytes, assignment_bytes: bytes, protocol_type="consumer"):
    f = True
    member = (string("member", f) + string("instance", f) + string("client", f) + string("host", f)
              + i32(1000) + i32(100) + blob(subscription, f) + blob(assignment_bytes, f) + tags())
    return (i16(4) + string(protocol_type, f) + i32(10) + string("range", f) + string("member", f) + i64(-1)
            + count(1, f) + member + tags())


GROUP_KEY_TEXT = '{"type":"2","data":{"group":"group"}}'
GROUP_HEAD = ('{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
              '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
              '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
              '"rebalanceTimeout":1000,"sessionTimeout":100,')


def test_dls20_group_metadata_with_embedded_consumer_protocol():
    value = group_value_v4(subscription_v3(["foo"], [("foo", [0])], 0, "rack"), assignment(3, [("foo", [0])]))
    decoded = co.decode(i16(2) + string("group"), value)
    assert co.text(decoded) == (GROUP_KEY_TEXT, GROUP_HEAD + (
        '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"userData":null}}]}}'))


def test_dls20_malformed_embedded_protocol_stays_base64():
    decoded = co.decode(i16(2) + string("group"), group_value_v4(b"Subscription", b"Assignment"))
    assert co.text(decoded) == (GROUP_KEY_TEXT, GROUP_HEAD + (
        '"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}]}}'))


def test_group_metadata_v0_with_subscription_v0_and_user_data():
    sub = i16(0) + count(2) + string("a") + string("b") + blob(b"\xca\xfe")
    asg = assignment(0, [("a", [0, 1]), ("b", [2])], b"\x01")
    member = string("m1") + string("cid") + string("/10.0.0.1") + i32(30000) + blob(sub) + blob(asg)
    value = i16(0) + string("consumer") + i32(3) + string("range") + string("m1") + count(1) + member
    decoded = co.decode(i16(2) + string("grp"), value)
    group = decoded["value"]
    assert "currentStateTimestamp" not in group                      # v2+
    (m,) = group["members"]
    assert list(m) == ["memberId", "clientId", "clientHost", "sessionTimeout", "subscription", "assignment"]
    assert m["subscription"] == {"topics": ["a", "b"], "userData": "yv4="}
    assert m["assignment"] == {"assignedPartitions": [{"topic": "a", "partitions": [0, 1]},
                                                      {"topic": "b", "partitions": [2]}], "userData": "AQ=="}


@pytest.mark.parametrize("version, extra, expected_keys", [
    (1, b"", ["topics", "userData", "ownedPartitions"]),
    (2, i32(5), ["topics", "userData", "ownedPartitions", "generationId"]),
])
def test_subscription_versions(version, extra, expected_keys):
    sub = i16(version) + count(1) + string("t") + blob(None) + count(1) + string("t") + count(1) + i32(3) + extra
    member = (string("m") + string("c") + string("h") + i32(1) + i32(2) + blob(sub) + blob(assignment(1, [])))
    value = i16(1) + string("consumer") + i32(1) + string("range") + string("m") + count(1) + member
    m = co.decode(i16(2) + string("g"), value)["value"]["members"][0]
    assert list(m["subscription"]) == expected_keys
    assert m["subscription"]["ownedPartitions"] == [{"topic": "t", "partitions": [3]}]


def test_newer_subscription_version_is_read_with_the_newest_schema():
    sub = subscription_v3(["x"], [], 9, None)
    sub = i16(7) + sub[2:] + b"future-field"                          # v7, appended unknown data
    member = string("m") + string("c") + string("h") + i32(1) + i32(2) + blob(sub) + blob(assignment(9, []))
    value = i16(1) + string("consumer") + i32(1) + string("range") + string("m") + count(1) + member
    m = co.decode(i16(2) + string("g"), value)["value"]["members"][0]
    assert m["subscription"] == {"topics": ["x"], "userData": None, "ownedPartitions": [], "generationId": 9,
                                 "rackId": None}
    assert m["assignment"] == {"assignedPartitions": [], "userData": None}


def test_other_protocol_types_keep_base64():
    value = group_value_v4(b"\x00\x01", b"\x00\x02", protocol_type="connect")
    m = co.decode(i16(2) + string("g"), value)["value"]["members"][0]
    assert m["subscription"] == "AAE=" and m["assignment"] == "AAI="


def test_group_with_null_protocol_and_no_members():
    value = i16(3) + string("consumer") + i32(0) + string(None) + string(None) + i64(TS) + count(0)
    decoded = co.decode(i16(2) + string("g"), value)
    assert decoded["value"] == {"protocolType": "consumer", "generation": 0, "protocol": None, "leader": None,
                                "currentStateTimestamp": TS, "members": []}


# -- DumpLogSegmentsTest #20, the remaining cases -------------------------------------------

def test_dls20_consumer_group_metadata_and_tombstone():
    key = i16(3) + string("group")
    decoded = co.decode(key, i16(0) + i32(10) + tags())
    assert co.text(decoded) == ('{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')
    tomb = co.decode(key, None)
    assert tomb == {"type": "CONSUMER_GROUP_METADATA", "type_id": 3, "version": None,
                    "key": {"groupId": "group"}, "value": None}
    assert co.text(tomb) == ('{"type":"3","data":{"groupId":"group"}}', "<DELETE>")


def test_dls20_unknown_record_type():
    with pytest.raises(UnknownRecordTypeError) as err:
        co.decode(i16(0x7FFF), b"")
    assert err.value.type_id == 32767
    assert co.error_text(err.value, 0) == "Unknown record type 32767 at offset 0, skipping."


def test_dls20_bad_value_message():
    # A ConsumerGroupMemberMetadataValue v0 with default fields, read as ConsumerGroupMetadataValue v0.
    member_defaults = string("", True) * 4 + count(0, True) + string("", True) + i32(-1) + string("", True) + tags()
    with pytest.raises(DecodeError) as err:
        co.decode(i16(3) + string("group"), i16(0) + member_defaults)
    assert co.error_text(err.value, 0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.")
    assert err.value.payload_position == 8 and "[at value byte 8]" in str(err.value)   # the size varint


def test_dls20_missing_key():
    with pytest.raises(MissingKeyError) as err:
        co.decode(None, None)
    assert co.error_text(err.value, 0) == (
        "Failed to decode message at offset 0 using the specified decoder (message had a missing key)")


# -- KIP-848 consumer-group records ---------------------------------------------------------

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def test_consumer_group_member_metadata_with_classic_member():
    f = True
    classic = i8(1) + i32(45000) + count(1, f) + string("range", f) + blob(b"\x00\x03", f) + tags() + tags()
    value = (i16(0) + string(None, f) + string("rack-a", f) + string("cid", f) + string("/1.2.3.4", f)
             + count(2, f) + string("x", f) + string("y", f) + string(None, f) + i32(30000)
             + string("uniform", f) + tags({0: classic}))
    decoded = co.decode(i16(5) + string("g") + string("m-1"), value)
    assert decoded["type"] == "CONSUMER_GROUP_MEMBER_METADATA"
    assert decoded["key"] == {"groupId": "g", "memberId": "m-1"}
    assert decoded["value"] == {
        "instanceId": None, "rackId": "rack-a", "clientId": "cid", "clientHost": "/1.2.3.4",
        "subscribedTopicNames": ["x", "y"], "subscribedTopicRegex": None, "rebalanceTimeoutMs": 30000,
        "serverAssignor": "uniform",
        "classicMemberMetadata": {"sessionTimeoutMs": 45000,
                                  "supportedProtocols": [{"name": "range", "metadata": "AAM="}]}}


def test_consumer_group_current_assignment_uuid_and_tagged_epochs():
    f = True
    tp = uuid(TOPIC_ID) + count(2, f) + i32(0) + i32(1)
    assigned = tp + tags({0: count(2, f) + i32(4) + i32(5)})
    value = i16(0) + i32(5) + i32(4) + i8(0) + count(1, f) + assigned + count(0, f) + tags()
    decoded = co.decode(i16(8) + string("g") + string("m"), value)
    assert decoded["value"] == {
        "memberEpoch": 5, "previousMemberEpoch": 4, "state": 0,
        "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": [0, 1], "assignmentEpochs": [4, 5]}],
        "partitionsPendingRevocation": []}


def test_regular_expression_record():
    f = True
    value = i16(0) + count(1, f) + string("orders", f) + i64(3) + i64(TS) + tags()
    decoded = co.decode(i16(16) + string("g") + string("ord.*"), value)
    assert decoded["type"] == "CONSUMER_GROUP_REGULAR_EXPRESSION"
    assert decoded["key"] == {"groupId": "g", "regularExpression": "ord.*"}
    assert decoded["value"] == {"topics": ["orders"], "version": 3, "timestamp": TS}


# -- malformed input ------------------------------------------------------------------------

GOOD_V3 = i16(3) + i64(42) + i32(7) + string("meta") + i64(TS)


@pytest.mark.parametrize("cut", range(0, len(GOOD_V3)))
def test_truncated_values_raise_decode_error(cut):
    with pytest.raises(DecodeError):
        co.decode(offset_key(), GOOD_V3[:cut])


@pytest.mark.parametrize("cut", range(0, len(offset_key())))
def test_truncated_keys_raise_decode_error(cut):
    with pytest.raises(DecodeError):
        co.decode(offset_key()[:cut], GOOD_V3)


def test_unknown_value_version():
    with pytest.raises(DecodeError, match="Can't read version 5 of OffsetCommitValue"):
        co.decode(offset_key(), i16(5) + GOOD_V3[2:])
    with pytest.raises(DecodeError, match="Can't read version -1 of OffsetCommitValue"):
        co.decode(offset_key(), i16(-1) + GOOD_V3[2:])


def test_trailing_garbage_is_reported():
    with pytest.raises(DecodeError, match=r"Found 3 byte\(s\) of garbage after OffsetCommitValue"):
        co.decode(offset_key(), GOOD_V3 + b"xyz")


def test_huge_length_fields():
    with pytest.raises(DecodeError, match="string field metadata had invalid length -2"):
        co.decode(offset_key(), i16(3) + i64(1) + i32(0) + i16(-2) + b"abc")
    with pytest.raises(DecodeError, match=r"Error reading string of 30000 byte\(s\)"):
        co.decode(offset_key(), i16(3) + i64(1) + i32(0) + i16(30000) + b"abc")
    # 2^31-1 members on a 10-byte remainder: an error, not a huge loop or allocation
    value = i16(0) + string("consumer") + i32(1) + string("r") + string("m") + i32(0x7FFFFFFF) + b"\x00" * 10
    with pytest.raises(DecodeError, match="Tried to allocate a collection of size 2147483647"):
        co.decode(i16(2) + string("g"), value)


def test_non_nullable_null():
    with pytest.raises(DecodeError, match="non-nullable field metadata was serialized as null"):
        co.decode(offset_key(), i16(3) + i64(1) + i32(0) + i16(-1) + i64(TS))


def test_bad_tagged_field_size():
    value = i16(4) + i64(1) + i32(-1) + string("", True) + i64(TS) + b"\x01\x05\x20\x00"
    with pytest.raises(DecodeError, match=r"Error reading byte array of 32 byte\(s\): only 1 byte\(s\)"):
        co.decode(offset_key(), value)


def test_key_decode_error_names_the_key():
    with pytest.raises(DecodeError, match="from key's buffer"):
        co.decode(i16(1) + string("g") + i16(40), GOOD_V3)


def test_empty_value_is_not_a_tombstone():
    with pytest.raises(DecodeError, match="Could not read version from value's buffer"):
        co.decode(offset_key(), b"")
