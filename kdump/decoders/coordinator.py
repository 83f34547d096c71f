"""Framing shared by the group and transaction coordinators' records.

Both ``__consumer_offsets`` and ``__transaction_state`` store
``key = int16 record type | key body`` and ``value = int16 version | value body``, with a
null value meaning a tombstone (``CoordinatorRecordSerde``). Keys have one schema version
(0); values carry theirs. Which schemas a type id uses comes from the ``records`` table of
the topic's schema file.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import Any, NamedTuple

from kdump.decoders import kafka_lines
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine
from kdump.decoders.kafka_text import snake_name, strip_private, to_json
from kdump.errors import DecodeError, UnknownSchemaError
from kdump.format.message_reader import SchemaError
from kdump.format.message_spec import Message, load

PREFIX = struct.Struct(">h")     # key: record type; value: value version
DELETE = "<DELETE>"              # DumpLogSegments' text for a tombstone


class MissingKeyError(DecodeError):
    """The record has no key, so its type is unknown (DumpLogSegments aborts on this)."""


class UnknownRecordTypeError(UnknownSchemaError):
    """The key names a record type kdump has no schema for (perhaps a newer Kafka)."""

    def __init__(self, type_id: int, message: str | None = None, version: int | None = None) -> None:
        super().__init__(message or f"Unknown record type {type_id}", type_id, version)
        self.type_id = type_id


def unknown_version(message: Message, version: int) -> str | None:
    """Why ``message`` has no schema for ``version`` (a newer one than kdump knows), or None."""
    return None if message.supports(version) else f"Can't read version {version} of {message.name}"


class RecordType(NamedTuple):
    id: int
    name: str          # UPPER_SNAKE_CASE, as Kafka's CoordinatorRecordType names it
    key: Message
    value: Message
    note: str | None


class RecordTable:
    """Type id -> schemas, from a schema file's ``records`` list."""

    def __init__(self, filename: str) -> None:
        schemas = load(filename)
        self.types: dict[int, RecordType] = {}
        for entry in schemas.raw["records"]:
            self.types[entry["id"]] = RecordType(entry["id"], snake_name(entry["name"]), schemas[entry["key"]],
                                                 schemas[entry["value"]], entry.get("note"))
        self.schemas = schemas

    def get(self, type_id: int) -> RecordType:
        try:
            return self.types[type_id]
        except KeyError:
            raise UnknownRecordTypeError(type_id) from None


@cache
def record_table(filename: str) -> RecordTable:
    """The table of one schema file, loaded on first use and kept."""
    return RecordTable(filename)


def decode(table: RecordTable, key: bytes | None, value: bytes | None, kafka: KafkaLine = NEWEST_LINE,
           topic: str | None = None) -> dict[str, Any]:
    """Decode one coordinator record; raises DecodeError (or a subclass) on anything malformed.

    ``kafka``/``topic``: read the value as that line's classes read ``topic``'s records, where
    its layout has changed since (kafka_lines' ``schema`` rules)."""
    if key is None:
        raise MissingKeyError("message had a missing key")
    if len(key) < PREFIX.size:
        raise DecodeError("Could not read version from key's buffer.")
    (type_id,) = PREFIX.unpack_from(key)
    if type_id not in table.types:
        version = PREFIX.unpack_from(value)[0] if value is not None and len(value) >= PREFIX.size else None
        raise UnknownRecordTypeError(type_id, version=version)
    rtype = table.types[type_id]
    try:
        key_data = rtype.key.decode(key, 0, start=PREFIX.size)
    except SchemaError as e:
        raise e.rewrap(f"Could not read record with version 0 from key's buffer due to: {e.detail}.", "key") from None
    out: dict[str, Any] = {"type": rtype.name, "type_id": type_id, "version": None, "key": key_data, "value": None}
    if value is None:
        return out
    if len(value) < PREFIX.size:
        raise DecodeError("Could not read version from value's buffer.")
    (version,) = PREFIX.unpack_from(value)
    beyond = unknown_version(rtype.value, version)
    if beyond is not None:
        raise UnknownSchemaError(f"Could not read record with version {version} from value's buffer due to: "
                                 f"{beyond}.", type_id, version)
    old = None if topic is None else kafka.old_schema(topic, str(type_id))
    try:
        if old is None:
            out["value"] = rtype.value.decode(value, version, start=PREFIX.size)
        else:       # as the line's generated class reads it: bytes left over are not looked at
            out["value"] = table.schemas[old].decode(value, version, start=PREFIX.size, exact=False, generated=True)
    except SchemaError as e:
        raise e.rewrap(f"Could not read record with version {version} from value's buffer due to: {e.detail}.",
                       "value") from None
    out["version"] = version
    return out


def insert_after(fields: dict[str, Any], after: str, name: str, value: Any) -> dict[str, Any]:
    """A copy of ``fields`` with ``name: value`` placed right after ``after`` (kdump's
    readable names sit next to the code they explain)."""
    out: dict[str, Any] = {}
    for k, v in fields.items():
        out[k] = v
        if k == after:
            out[name] = value
    return out


def without(fields: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k != name}


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE,
         topic: str | None = None) -> tuple[str | None, str | None]:
    """DumpLogSegments' (key, payload) texts: ``{"type":"<id>","data":{…}}`` and
    ``{"version":"<v>","data":{…}}`` or ``<DELETE>``, as the ``kafka`` line's classes read
    ``topic``'s records (kafka_lines.SCHEMA_RULES)."""
    value = decoded["value"]
    if topic is not None:
        try:
            value = kafka.schema_text(topic, str(decoded["type_id"]), decoded["version"], value)
        except kafka_lines.SchemaError as e:
            if e.unknown_type:
                raise UnknownRecordTypeError(decoded["type_id"]) from None
            raise DecodeError(f"Could not read record with {e.text} from value's buffer.") from None
    key_text = to_json({"type": str(decoded["type_id"]), "data": strip_private(decoded["key"])})
    if value is None:
        return key_text, DELETE
    return key_text, to_json({"version": str(decoded["version"]), "data": strip_private(value)})


def error_text(error: DecodeError, offset: int) -> str:
    """The line DumpLogSegments prints instead of a record it could not decode."""
    if isinstance(error, UnknownRecordTypeError):
        return f"Unknown record type {error.type_id} at offset {offset}, skipping."
    if isinstance(error, MissingKeyError):
        return (f"Failed to decode message at offset {offset} using the specified decoder "
                f"(message had a missing key)")
    return f"Error at offset {offset}, skipping. {getattr(error, 'detail', error.message)}"
