"""The table of DumpLogSegments' text per Kafka line (kdump.decoders.kafka_lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kdump.decoders import consumer_offsets, kafka_lines, share_group_state
from kdump.decoders.kafka_lines import RULES, TRANSACTION_STATUS_NAME, KafkaLine
from kdump.errors import DecodeError
from kdump.format.walk import Walker, decode_records

README = Path(__file__).resolve().parents[2] / "README.md"


def test_each_rule_names_its_line_and_kafkas_change():
    for rule in RULES:
        assert rule.since in kafka_lines.LINES[1:], rule      # the oldest line has every rule off
        assert re.match(r"(KAFKA-\d+ \(apache/kafka#\d+|KIP-\d+ \(KAFKA-\d+)", rule.change), rule
        assert rule.before


def test_a_line_has_the_rules_of_its_line_and_before():
    assert KafkaLine().line == kafka_lines.NEWEST == "4.4"
    assert KafkaLine("4.4").has(TRANSACTION_STATUS_NAME)
    assert not KafkaLine("4.3").has(TRANSACTION_STATUS_NAME)
    assert kafka_lines.LINES == ("3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
    assert KafkaLine("4.2").has(kafka_lines.TRANSACTION_LOG_JSON) and not KafkaLine("4.0").has(
        kafka_lines.TRANSACTION_LOG_JSON)
    with pytest.raises(ValueError, match="Kafka 3.5: kdump prints the text of Kafka 3.6, 3.7, "):
        KafkaLine("3.5")


def test_schema_rules_drop_rename_and_refuse_per_line():
    data = {"brokerId": 1, "cordonedLogDirs": [], "brokerEpoch": 15}
    assert KafkaLine("4.2").schema_text("cluster-metadata", "BROKER_REGISTRATION_CHANGE_RECORD", 3, data) == {
        "brokerId": 1, "brokerEpoch": 15}
    assert KafkaLine("4.3").schema_text("cluster-metadata", "BROKER_REGISTRATION_CHANGE_RECORD", 3, data) == data
    change = {"partitionId": 0, "eligibleLeaderReplicas": [1], "lastKnownElr": [2]}
    assert list(KafkaLine("3.7").schema_text("cluster-metadata", "PARTITION_CHANGE_RECORD", 0, change)) == [
        "partitionId", "eligibleLeaderReplicas", "lastKnownELR"]
    assert list(KafkaLine("3.6").schema_text("cluster-metadata", "PARTITION_CHANGE_RECORD", 0, change)) == [
        "partitionId"]
    nested = {"assignedPartitions": [{"topicId": "x", "partitions": [0], "assignmentEpochs": [2]}]}
    assert KafkaLine("4.2").schema_text("offsets", "8", 0, nested) == {
        "assignedPartitions": [{"topicId": "x", "partitions": [0]}]}
    with pytest.raises(kafka_lines.SchemaError):
        KafkaLine("4.2").schema_text("cluster-metadata", "REGISTER_BROKER_RECORD", 4, {})
    KafkaLine("4.2").schema_text("cluster-metadata", "REGISTER_BROKER_RECORD", 3, {})
    with pytest.raises(kafka_lines.SchemaError) as e:
        KafkaLine("3.9").schema_text("offsets", "12", 0, {})
    assert e.value.unknown_type


def test_an_option_the_line_lacks_is_refused():
    assert KafkaLine("3.8").refused({"--remote-log-metadata-decoder": True}) == (
        "--remote-log-metadata-decoder: Kafka 3.8's kafka-dump-log.sh has none (it came in 3.9: KAFKA-16228 "
        "(apache/kafka#16475))")
    assert KafkaLine("3.9").refused({"--remote-log-metadata-decoder": True, "--share-group-state-decoder": False,
                                     "--key-decoder-class": "org.apache.kafka.tools.api.LongDecoder"}) is None
    assert "3.7's kafka-dump-log.sh has none" in KafkaLine("3.7").refused(
        {"--key-decoder-class": None, "--value-decoder-class": "org.apache.kafka.tools.api.IntegerDecoder"})


def test_readme_lists_each_rule_under_its_line():
    text = README.read_text()
    table = text[text.index("### Text of older Kafka lines"):text.index("### Departures from kafka-dump-log.sh")]
    for rule in RULES:
        assert re.search(rf"^\| {re.escape(rule.since)} \|.*{rule.change.split()[0]}", table, re.M), rule


def test_kafka_40_reads_the_share_records_with_its_own_layouts():
    # ShareGroupMetadataValue: 4.0 knows epoch only, leaves metadataHash's bytes unread; a
    # ShareSnapshotValue of today, read with 4.0's uint16 snapshotEpoch, fails as 4.0 does.
    key = b"\x00\x0b" + b"\x00\x01g"
    value = b"\x00\x00" + (4).to_bytes(4, "big") + (0).to_bytes(8, "big") + b"\x00"
    assert KafkaLine("4.0").old_schema("offsets", "11") == "ShareGroupMetadataValue@4.0"
    assert KafkaLine("4.1").old_schema("offsets", "11") is None
    assert KafkaLine("3.9").old_schema("offsets", "11") is None         # no share groups at all
    old = consumer_offsets.decode(key, value, KafkaLine("4.0"))
    assert consumer_offsets.text(old, KafkaLine("4.0"))[1] == '{"version":"0","data":{"epoch":4}}'
    assert consumer_offsets.decode(key, value)["value"] == {"epoch": 4, "metadataHash": 0}
    log = Path(__file__).resolve().parents[2] / "fixtures/generated/__share_group_state-0/00000000000000000000.log"
    buf = log.read_bytes()
    r = decode_records(buf, next(iter(Walker(buf))))[0]
    with pytest.raises(DecodeError) as e:
        share_group_state.decode(r.key, r.value, KafkaLine("4.0"))
    assert share_group_state.error_text(e.value, 0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "non-nullable field stateBatches was serialized as null.")
    share_group_state.decode(r.key, r.value, KafkaLine("4.1"))
