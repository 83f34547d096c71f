"""Decoder for KRaft ``__cluster_metadata`` records (logs and ``.checkpoint`` snapshots).

A value is ``uvarint frameVersion | uvarint apiKey | uvarint version | body``
(``AbstractApiMessageSerde``); only frame version 1 exists (0 was the 2.8 preview, whose
records were not flexible). Keys are unused. Record types are the ``records`` table of
``schemas/cluster_metadata.json``; a type's name is DumpLogSegments' (``TOPIC_RECORD``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import DecodeError
from .coordinator import UnknownRecordTypeError
from .schema import Message, SchemaError, load, read_uvarint, snake_name, strip_private, to_json

SCHEMA_FILE = "cluster_metadata.json"
FRAME_VERSION = 1
SHORT_MAX = 0x7FFF


class MetadataType(NamedTuple):
    id: int
    name: str          # e.g. TOPIC_RECORD
    message: Message
    note: str | None


_types: dict[int, MetadataType] | None = None


def types() -> dict[int, MetadataType]:
    global _types
    if _types is None:
        schemas = load(SCHEMA_FILE)
        table = {}
        for entry in schemas.raw["records"]:
            message = entry["name"] + "Record"
            table[entry["id"]] = MetadataType(entry["id"], snake_name(message), schemas[message], entry.get("note"))
        _types = table
    return _types


def _header_field(value: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        number, pos = read_uvarint(value, pos, entity)
    except SchemaError as e:
        raise e.rewrap(e.detail, "value") from None
    if number > SHORT_MAX:
        raise DecodeError(f"Value for {entity} was too large.")
    return number, pos


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """Decode one metadata record value (the key is ignored, as Kafka does)."""
    if value is None:
        raise DecodeError("metadata record has no value")
    frame, pos = _header_field(value, 0, "frame version")
    if frame == 0:
        raise DecodeError("Could not deserialize metadata record with frame version 0. Note that upgrades "
                          "from the preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame != FRAME_VERSION:
        raise DecodeError(f"Could not deserialize metadata record due to unknown frame version {frame} "
                          f"(only frame version {FRAME_VERSION} is supported)")
    api_key, pos = _header_field(value, pos, "type")
    version, pos = _header_field(value, pos, "version")
    mtype = types().get(api_key)
    if mtype is None:
        raise UnknownRecordTypeError(api_key, f"Unknown metadata id {api_key}")
    try:
        data = mtype.message.decode(value, version, start=pos)
    except SchemaError as e:
        raise e.rewrap(f"Failed to deserialize record with type {api_key}: {e.detail}", "value") from None
    return {"type": mtype.name, "type_id": api_key, "version": version, "key": None, "value": data}


def text(decoded: dict[str, Any]) -> tuple[str | None, str | None]:
    """DumpLogSegments' payload: ``{"type":"TOPIC_RECORD","version":0,"data":{…}}``; no key."""
    return None, to_json({"type": decoded["type"], "version": decoded["version"],
                          "data": strip_private(decoded["value"])})


def error_text(error: DecodeError, offset: int) -> str:
    """The line DumpLogSegments prints for a metadata record it could not decode."""
    return f"Error at {offset}, skipping. {getattr(error, 'detail', error.message)}"
