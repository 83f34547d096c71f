"""Decoder for ``__consumer_offsets`` (offset commits, classic group metadata, KIP-848
consumer groups, share groups and streams groups); record types are the ``records``
table of ``schemas/consumer_offsets.json``.

For a classic group whose ``protocolType`` is ``consumer``, each member's
``subscription`` and ``assignment`` bytes hold a version-prefixed
ConsumerProtocolSubscription/Assignment; like DumpLogSegments, kdump expands them into
nested objects and leaves them as base64 when they do not parse. Versions newer than
kdump knows are read with the newest schema: the consumer protocol promises that new
versions only append fields.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from kdump.decoders import coordinator
from kdump.decoders.kafka_lines import NEWEST_LINE, OFFSETS_JSON, KafkaLine
from kdump.decoders.kafka_text import to_json
from kdump.decoders.transaction_state import java_hash, scala_hash_order
from kdump.format.message_reader import SchemaError

SCHEMA_FILE = "consumer_offsets.json"
GROUP_METADATA = 2
CONSUMER_PROTOCOL = "consumer"
_VERSION = struct.Struct(">h")

def table() -> coordinator.RecordTable:
    return coordinator.record_table(SCHEMA_FILE)


def decode(key: bytes | None, value: bytes | None, kafka: KafkaLine = NEWEST_LINE) -> dict[str, Any]:
    decoded = coordinator.decode(table(), key, value, kafka, "offsets")
    if decoded["type_id"] == GROUP_METADATA and decoded["value"] is not None:
        _expand_consumer_protocol(decoded["value"])
    return decoded


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
    if not kafka.has(OFFSETS_JSON):
        return _scala_text(decoded)
    return coordinator.text(decoded, kafka, "offsets")


error_text = coordinator.error_text


def _scala_text(decoded: dict[str, Any]) -> tuple[str | None, str | None]:
    """GroupMetadataManager.formatRecordKeyAndValue (Kafka up to 3.7): its own key and value text."""
    key, value = decoded["key"], decoded["value"]
    if decoded["type_id"] in (0, 1):
        text = "<DELETE>" if value is None else f"offset={value['offset']}" + (
            f",metadata={value['metadata']}" if value.get("metadata") else "")
        return f"offset_commit::group={key['group']},partition={key['topic']}-{key['partition']}", text
    if decoded["type_id"] != GROUP_METADATA:
        return f"unknown::version={decoded['type_id']}", None
    if value is None:
        return f"group_metadata::group={key['group']}", "<DELETE>"
    protocol_type = value.get("protocolType") or ""
    members = {m["memberId"]: _assignment_text(m["assignment"], protocol_type) for m in value.get("members") or ()}
    assignment = ",".join(f"{m}={members[m]}" for m in scala_hash_order(list(members), java_hash))
    return f"group_metadata::group={key['group']}", to_json(
        {"protocolType": protocol_type, "protocol": value.get("protocol"), "generationId": value["generation"],
         "assignment": "{" + assignment + "}"})


def _hex(data: bytes) -> str:
    """Scala's "%X".format(BigInt(1, bytes)): no leading zeros; nothing for no bytes."""
    return f"{int.from_bytes(data, 'big'):X}" if data else ""


def _assignment_text(assignment: Any, protocol_type: str) -> str:
    if protocol_type != CONSUMER_PROTOCOL or not isinstance(assignment, dict):
        return _hex(base64.b64decode(assignment)) if isinstance(assignment, str) else ""
    partitions = ", ".join(f"{t['topic']}-{p}" for t in assignment.get("assignedPartitions") or ()
                           for p in t["partitions"])
    user_data = _hex(base64.b64decode(assignment["userData"])) if assignment.get("userData") else ""
    return f"[{partitions}]" + (f":{user_data}" if user_data else "")


def _expand_consumer_protocol(group: dict[str, Any]) -> None:
    if group.get("protocolType") != CONSUMER_PROTOCOL:
        return
    schemas = table().schemas
    for member in group.get("members") or ():
        member["subscription"] = _embedded(schemas["ConsumerProtocolSubscription"], member["subscription"])
        member["assignment"] = _embedded(schemas["ConsumerProtocolAssignment"], member["assignment"])


def _embedded(message, encoded: str) -> Any:
    """Decode version-prefixed consumer-protocol bytes, or give back the base64 unchanged."""
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return encoded
    if len(raw) < _VERSION.size:
        return encoded
    (version,) = _VERSION.unpack_from(raw)
    if version < message.lowest:
        return encoded
    try:
        return message.decode(raw, min(version, message.highest), start=_VERSION.size, exact=False)
    except SchemaError:
        return encoded
