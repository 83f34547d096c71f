"""The framed-message value shared by ``__cluster_metadata`` and ``__remote_log_metadata``.

Both topics write each record value as ``uvarint frameVersion | uvarint apiKey |
uvarint version | body`` (Kafka's ``AbstractApiMessageSerde``, which both
``MetadataRecordSerde`` and the remote-log ``BytesApiMessageSerde`` extend). Only frame
version 1 exists; each of the three header numbers must fit a Java short. The apiKey picks
a message from a schema file whose ``records`` table lists ``{"id", "name"}`` entries, the
message being ``<name>Record``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from kdump.decoders.coordinator import UnknownRecordTypeError, unknown_version
from kdump.decoders.kafka_text import snake_name
from kdump.errors import DecodeError, UnknownSchemaError
from kdump.format.message_reader import SchemaError, read_uvarint
from kdump.format.message_spec import Message, load

FRAME_VERSION = 1
SHORT_MAX = 0x7FFF


class FramedType(NamedTuple):
    id: int
    name: str          # Kafka's MetadataRecordType name, e.g. TOPIC_RECORD
    message: Message
    note: str | None


@lru_cache(maxsize=None)
def record_types(schema_file: str) -> dict[int, FramedType]:
    """apiKey -> record type, from the ``records`` table of a schema file (built once)."""
    schemas = load(schema_file)
    table = {}
    for entry in schemas.raw["records"]:
        message = entry["name"] + "Record"
        table[entry["id"]] = FramedType(entry["id"], snake_name(message), schemas[message], entry.get("note"))
    return table


def _header_field(value: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        number, pos = read_uvarint(value, pos, entity)
    except SchemaError as e:
        raise e.rewrap(e.detail, "value") from None
    if number > SHORT_MAX:
        raise DecodeError(f"Value for {entity} was too large.")
    return number, pos


def decode(value: bytes | None, types: dict[int, FramedType]) -> tuple[FramedType, int, dict[str, Any]]:
    """Read one framed value: (its record type, its version, the decoded body).

    Raises DecodeError (UnknownRecordTypeError for an apiKey missing from ``types``,
    SchemaError for a body that does not follow its schema, leftover bytes included).
    """
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
    rtype = types.get(api_key)
    if rtype is None:
        raise UnknownRecordTypeError(api_key, f"Unknown metadata id {api_key}", version)
    beyond = unknown_version(rtype.message, version)
    if beyond is not None:
        raise UnknownSchemaError(f"Failed to deserialize record with type {api_key}: {beyond}", api_key, version)
    try:
        data = rtype.message.decode(value, version, start=pos)
    except SchemaError as e:
        raise e.rewrap(f"Failed to deserialize record with type {api_key}: {e.detail}", "value") from None
    return rtype, version, data
