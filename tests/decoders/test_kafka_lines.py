"""The table of DumpLogSegments' text per Kafka line (kdump.decoders.kafka_lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kdump.decoders import kafka_lines
from kdump.decoders.kafka_lines import RULES, TRANSACTION_STATUS_NAME, KafkaLine

README = Path(__file__).resolve().parents[2] / "README.md"


def test_each_rule_names_its_line_and_kafkas_change():
    for rule in RULES:
        assert rule.since in kafka_lines.LINES[1:], rule      # the oldest line has every rule off
        assert re.match(r"KAFKA-\d+ \(apache/kafka#\d+\)$", rule.change), rule
        assert rule.before


def test_a_line_has_the_rules_of_its_line_and_before():
    assert KafkaLine().line == kafka_lines.NEWEST == "4.4"
    assert KafkaLine("4.4").has(TRANSACTION_STATUS_NAME)
    assert not KafkaLine("4.3").has(TRANSACTION_STATUS_NAME)
    with pytest.raises(ValueError, match="Kafka 3.9: kdump prints the text of Kafka 4.3, 4.4"):
        KafkaLine("3.9")


def test_readme_lists_each_rule_under_its_line():
    text = README.read_text()
    table = text[text.index("### Text of older Kafka lines"):text.index("### Departures from kafka-dump-log.sh")]
    for rule in RULES:
        assert re.search(rf"^\| {re.escape(rule.since)} \|.*{rule.change.split()[0]}", table, re.M), rule
