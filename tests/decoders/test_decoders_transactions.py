"""__transaction_state: DumpLogSegmentsTest.testTransactionLogMessageParser (#21) and more."""

from __future__ import annotations

import pytest
from kafka_wire import count, i8, i16, i32, i64, string, tags

from kdump.decoders import transaction_state as ts
from kdump.decoders.coordinator import MissingKeyError, UnknownRecordTypeError
from kdump.decoders.kafka_lines import KafkaLine
from kdump.errors import DecodeError

KEY = i16(0) + string("txnId")
KEY_TEXT = '{"type":"0","data":{"transactionalId":"txnId"}}'


def value_v0(producer_id=123, status=0, partitions=(), epoch=0, timeout=0, last=0, start=0):
    body = i64(producer_id) + i16(epoch) + i32(timeout) + i8(status)
    if partitions is None:
        body += count(None)
    else:
        body += count(len(partitions)) + b"".join(
            string(t) + count(len(ps)) + b"".join(i32(p) for p in ps) for t, ps in partitions)
    return i16(0) + body + i64(last) + i64(start)


def test_dls21_v0_value():
    decoded = ts.decode(KEY, value_v0())
    assert ts.text(decoded) == (KEY_TEXT, (
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,"transactionTimeoutMs":0,'
        '"transactionStatus":"Empty","transactionPartitions":[],"transactionLastUpdateTimestampMs":0,'
        '"transactionStartTimestampMs":0}}'))
    # Kafka 4.3 printed the id (KAFKA-20712 made it the name in 4.4)
    assert ts.text(decoded, KafkaLine("4.3"))[1] == (
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,"transactionTimeoutMs":0,'
        '"transactionStatus":0,"transactionPartitions":[],"transactionLastUpdateTimestampMs":0,'
        '"transactionStartTimestampMs":0}}')
    assert decoded["type"] == "TRANSACTION_LOG" and decoded["key"] == {"transactionalId": "txnId"}
    assert decoded["value"]["transactionStatusName"] == "Empty"


def test_dls21_v1_value_with_tagged_fields():
    f = True
    partitions = count(2, f) + b"".join(
        string(t, f) + count(3, f) + b"".join(i32(p) for p in ps) + tags()
        for t, ps in (("topic1", (0, 1, 2)), ("topic2", (3, 4, 5))))
    # clientTransactionVersion is written explicitly as 0 (its default): Kafka's JSON leaves it out.
    value = (i16(1) + i64(12) + i16(2) + i32(14) + i8(0) + partitions + i64(123) + i64(13)
             + tags({0: i64(11), 1: i64(10), 2: i16(0)}))
    decoded = ts.decode(KEY, value)
    assert ts.text(decoded) == (KEY_TEXT, (
        '{"version":"1","data":{"producerId":12,"previousProducerId":11,"nextProducerId":10,'
        '"producerEpoch":2,"transactionTimeoutMs":14,"transactionStatus":"Empty",'
        '"transactionPartitions":[{"topic":"topic1","partitionIds":[0,1,2]},'
        '{"topic":"topic2","partitionIds":[3,4,5]}],"transactionLastUpdateTimestampMs":123,'
        '"transactionStartTimestampMs":13}}'))


def test_v1_client_transaction_version_2_is_shown():
    value = i16(1) + i64(1) + i16(0) + i32(60000) + i8(1) + count(0, True) + i64(5) + i64(4) + tags({2: i16(2)})
    decoded = ts.decode(KEY, value)
    assert decoded["value"]["clientTransactionVersion"] == 2
    assert "previousProducerId" not in decoded["value"]          # absent tag = default -1, omitted
    assert decoded["value"]["transactionStatusName"] == "Ongoing"


def test_dls21_tombstone_unknown_type_and_missing_key():
    assert ts.text(ts.decode(KEY, None)) == (KEY_TEXT, "<DELETE>")
    with pytest.raises(UnknownRecordTypeError) as err:
        ts.decode(i16(0x7FFF), b"")
    assert ts.error_text(err.value, 0) == "Unknown record type 32767 at offset 0, skipping."
    with pytest.raises(MissingKeyError):
        ts.decode(None, value_v0())


@pytest.mark.parametrize("status, name", [(0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"),
                                          (4, "CompleteCommit"), (5, "CompleteAbort"), (6, "Dead"),
                                          (7, "PrepareEpochFence"), (9, "Unknown(9)")])
def test_status_names(status, name):
    decoded = ts.decode(KEY, value_v0(status=status, partitions=[("t", [0])]))
    value = decoded["value"]
    assert value["transactionStatusName"] == name
    assert list(value).index("transactionStatusName") == list(value).index("transactionStatus") + 1
    assert "transactionStatusName" not in ts.text(decoded)[1]
    # 4.4 prints the name where 4.3 printed the id; an id Kafka does not know as its number, quoted
    assert f'"transactionStatus":"{name if status < 8 else status}"' in ts.text(decoded)[1]
    assert f'"transactionStatus":{status},' in ts.text(decoded, KafkaLine("4.3"))[1]


def test_null_partitions():
    assert ts.decode(KEY, value_v0(partitions=None))["value"]["transactionPartitions"] is None


def test_bad_tagged_fields():
    base = i16(1) + i64(1) + i16(0) + i32(1) + i8(0) + count(0, True) + i64(0) + i64(0)
    with pytest.raises(DecodeError, match="int64"):                   # tag 0 holds 3 bytes, needs 8
        ts.decode(KEY, base + tags({0: b"\x00\x00\x01"}))
    with pytest.raises(DecodeError, match=r"declares 9 byte\(s\) but its value takes 8"):
        ts.decode(KEY, base + tags({0: i64(5) + b"\x00"}))
    with pytest.raises(DecodeError, match="tagged field"):          # count says 200 fields
        ts.decode(KEY, base + b"\xc8\x01")
    with pytest.raises(DecodeError, match="varint"):                 # tag varint never ends
        ts.decode(KEY, base + b"\x01\xff\xff\xff\xff\xff\xff")


def test_v0_has_no_tagged_section():
    with pytest.raises(DecodeError, match="garbage"):
        ts.decode(KEY, value_v0() + b"\x00")
