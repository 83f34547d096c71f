"""Decoder for ``__share_group_state`` (KIP-932 share-coordinator records, Kafka 4.0+).

Type 0 is a ShareSnapshot (the full delivery state of one share-partition), type 1 a
ShareUpdate (the state batches changed since); both keys are {groupId, topicId,
partition}. Each state batch gets kdump's ``deliveryStateName`` next to its
``deliveryState`` code (RecordState: Available, Acquired, Acknowledged, Archived); the
DumpLogSegments-style text leaves it out so that text stays identical to Kafka's.
"""

from __future__ import annotations

from typing import Any

from kdump.decoders import coordinator
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine

SCHEMA_FILE = "share_group_state.json"
BATCHES = "stateBatches"
STATE = "deliveryState"
STATE_NAME = "deliveryStateName"


def table() -> coordinator.RecordTable:
    return coordinator.record_table(SCHEMA_FILE)


def state_name(state: int) -> str:
    return table().schemas.raw["delivery_states"].get(str(state), f"Unknown({state})")


def decode(key: bytes | None, value: bytes | None, kafka: KafkaLine = NEWEST_LINE) -> dict[str, Any]:
    decoded = coordinator.decode(table(), key, value, kafka, "share-group-state")
    share = decoded["value"]
    if share is not None and share.get(BATCHES):
        batches = [coordinator.insert_after(b, STATE, STATE_NAME, state_name(b[STATE])) for b in share[BATCHES]]
        decoded["value"] = {**share, BATCHES: batches}
    return decoded


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
    share = decoded["value"]
    if share is not None and share.get(BATCHES):
        batches = [coordinator.without(b, STATE_NAME) for b in share[BATCHES]]
        decoded = {**decoded, "value": {**share, BATCHES: batches}}
    return coordinator.text(decoded, kafka, "share-group-state")


error_text = coordinator.error_text
