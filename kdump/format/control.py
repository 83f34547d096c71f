"""Control records (``ControlRecordType``, ``EndTransactionMarker``, ``ControlRecordUtils``).

A control batch carries records whose key is ``version int16 | type int16``. COMMIT and
ABORT markers have the value ``version int16 | coordinatorEpoch int32``; the KRaft
control types (2-6) carry a flexible-version message whose body ``kdump.format.kraft_control``
decodes with the generated-message reader.
"""

from __future__ import annotations

import struct
from typing import Any

from kdump.errors import InvalidRecordError
from kdump.model import Control

CONTROL_KEY = struct.Struct(">hh")       # version => int16, type => int16
MARKER_VALUE = struct.Struct(">hi")      # version => int16, coordinatorEpoch => int32
ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)


def parse_control(key: bytes | None, value: bytes | None) -> Control:
    """Decode a control record's key, and its value where kdump knows the type."""
    if key is None or len(key) < CONTROL_KEY.size:
        raise InvalidRecordError(f"control record key has {0 if key is None else len(key)} bytes; at least 4 expected")
    version, ctype = CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(f"control record key has invalid version {version}")
    if ctype in (ABORT, COMMIT):
        if value is None or len(value) < MARKER_VALUE.size:
            raise InvalidRecordError("end transaction marker value is shorter than 6 bytes")
        _, coordinator_epoch = MARKER_VALUE.unpack_from(value)
        return Control(ctype, version, coordinator_epoch)
    if LEADER_CHANGE <= ctype <= KRAFT_VOTERS and value is not None:
        data, error = _decode_kraft_control(ctype, value)
        return Control(ctype, version, None, data, error)
    return Control(ctype, version, None)


def _decode_kraft_control(ctype: int, value: bytes) -> tuple[dict[str, Any] | None, str | None]:
    # Imported here: loading the message specs costs start-up time a dump without
    # KRaft control records does not need to pay.
    from kdump.format.kraft_control import decode_control_value

    try:
        return decode_control_value(ctype, value), None
    except Exception as e:  # noqa: BLE001 - a bad body is reported on the record, never fatal
        return None, str(e)


def encode_control_key(ctype: int, version: int = 0) -> bytes:
    return CONTROL_KEY.pack(version, ctype)


def encode_marker_value(coordinator_epoch: int, version: int = 0) -> bytes:
    return MARKER_VALUE.pack(version, coordinator_epoch)
