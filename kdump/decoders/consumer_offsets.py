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
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine
from kdump.format.message_reader import SchemaError

SCHEMA_FILE = "consumer_offsets.json"
GROUP_METADATA = 2
CONSUMER_PROTOCOL = "consumer"
_VERSION = struct.Struct(">h")

def table() -> coordinator.RecordTable:
    return coordinator.record_table(SCHEMA_FILE)


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    decoded = coordinator.decode(table(), key, value)
    if decoded["type_id"] == GROUP_METADATA and decoded["value"] is not None:
        _expand_consumer_protocol(decoded["value"])
    return decoded


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
    return coordinator.text(decoded, kafka, "offsets")


error_text = coordinator.error_text


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
