"""Bodies of KRaft control records: LeaderChange (2), SnapshotHeader (3),
SnapshotFooter (4), KRaftVersion (5) and KRaftVoters (6).

Each body is a flexible message whose first field is ``Version int16``. Kafka reads them
at a fixed "current" version; kdump reads the Version field first and uses it as the
schema version, so a LeaderChangeMessage v1 (voter directory ids, KIP-853) decodes too.
``kdump.format.control`` imports ``decode_control_value`` lazily.
"""

from __future__ import annotations

import struct
from typing import Any

from kdump.errors import DecodeError
from kdump.format.message_reader import SchemaError
from kdump.format.message_spec import load

SCHEMA_FILE = "kraft_control.json"
_VERSION = struct.Struct(">h")


def _controls() -> dict[int, dict[str, Any]]:
    return {entry["type"]: entry for entry in load(SCHEMA_FILE).raw["controls"]}


def control_name(ctype: int) -> str | None:
    """DumpLogSegments' name for a control body (``LeaderChange``, ``KRaftVoters``...)."""
    entry = _controls().get(ctype)
    return entry["name"] if entry else None


def decode_control_value(ctype: int, value: bytes) -> dict[str, Any]:
    """Decode the value of a KRaft control record of type ``ctype``; raises DecodeError."""
    entry = _controls().get(ctype)
    if entry is None:
        raise DecodeError(f"control record type {ctype} has no known body")
    if value is None:
        raise DecodeError(f"{entry['name']} control record has no value")
    if len(value) < _VERSION.size:
        raise DecodeError(f"{entry['name']} control record value has {len(value)} byte(s); "
                          f"its version needs {_VERSION.size}")
    (version,) = _VERSION.unpack_from(value)
    message = load(SCHEMA_FILE)[entry["message"]]
    try:
        return message.decode(value, version)
    except SchemaError as e:
        raise e.rewrap(f"Could not read {entry['name']} control record: {e.detail}", "value") from None
