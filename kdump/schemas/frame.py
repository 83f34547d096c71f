"""The Schema Registry wire frame: magic byte 0, a big-endian 4-byte schema id, the payload.

Confluent's serializers (and Karapace's, Apicurio's in its Confluent mode) write it. A
Protobuf payload starts with the message indexes: which message of the .proto file, as a
path through nested messages. They are a count then that many indexes, all zigzag varints;
the common case, the file's first message, is written as the single count 0 (meaning [0]).
"""

from __future__ import annotations

import struct

from kdump.errors import DecodeError, KdumpError, TruncatedError
from kdump.format.varint import read_varlong

MAGIC = 0
HEADER_SIZE = 5
_ID = struct.Struct(">I")


def is_framed(data: bytes | None) -> bool:
    return data is not None and len(data) >= HEADER_SIZE and data[0] == MAGIC


def schema_id(data: bytes) -> int:
    """The schema id of a frame; DecodeError for bytes that are not one."""
    if not data:
        raise DecodeError("not a Schema Registry frame: no bytes")
    if data[0] != MAGIC:
        raise DecodeError(f"not a Schema Registry frame: byte 0 is 0x{data[0]:02x}, not the magic byte 0")
    if len(data) < HEADER_SIZE:
        raise DecodeError(f"truncated frame: {len(data)} bytes, the header alone is {HEADER_SIZE}")
    return _ID.unpack_from(data, 1)[0]


def read_zigzag(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """One zigzag varint (at most 10 bytes, 64 bits: Kafka's and Avro's long) at ``pos``:
    (value, next position)."""
    try:
        return read_varlong(data, pos)
    except TruncatedError:
        raise DecodeError(f"truncated {what} at byte {pos}: the varint runs past the end ({len(data)} bytes)") from None
    except KdumpError as e:
        raise DecodeError(f"{what} at byte {pos}: {e.message}") from None



def message_indexes(data: bytes, pos: int = HEADER_SIZE) -> tuple[list[int], int]:
    """Protobuf's message-index array after the header: (indexes, position of the message)."""
    count, pos = read_zigzag(data, pos, "message-index count")
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data) - pos:
        raise DecodeError(f"message-index count {count} at byte {HEADER_SIZE} does not fit the "
                          f"{len(data) - pos} bytes left")
    indexes = []
    for _ in range(count):
        i, pos = read_zigzag(data, pos, "message index")
        if i < 0:
            raise DecodeError(f"negative message index {i} before byte {pos}")
        indexes.append(i)
    return indexes, pos
