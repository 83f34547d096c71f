"""Protobuf-style zigzag varints, as Kafka's ``ByteUtils.readVarint/readVarlong`` read them.

A varint is at most 5 bytes (int32) and a varlong at most 10 (int64); longer encodings
are rejected, as Kafka does ("Varint is too long"). The record decoder reads one and two
bytes itself (``records._varint``); these functions are the general case and the encoders.
"""

from __future__ import annotations

from kdump.errors import InvalidRecordError, TruncatedError


def _read_raw(data: bytes, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    """The 7-bit groups of a varint at ``pos`` as one number (no zigzag); (value, next position)."""
    result = 0
    shift = 0
    end = len(data)
    for i in range(max_bytes):
        if pos + i >= end:
            raise TruncatedError(f"{what} runs past the end of its data at byte {pos}")
        b = data[pos + i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + i + 1
        shift += 7
    raise InvalidRecordError(f"{what} at byte {pos} is longer than {max_bytes} bytes")


def read_varint(data: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode a zigzag varint at ``pos``; return (value, next position)."""
    result, nxt = _read_raw(data, pos, max_bytes, "varint")
    # The last byte may carry bits past the type's width: reject, never widen.
    bits = 32 if max_bytes <= 5 else 64
    if result >> bits:
        raise InvalidRecordError(f"varint at byte {pos} does not fit in {bits} bits")
    return (result >> 1) ^ -(result & 1), nxt


def read_varlong(data: bytes, pos: int) -> tuple[int, int]:
    return read_varint(data, pos, 10)


def read_uvarint(data: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Unsigned varint (no zigzag), as in the generated-message protocol."""
    return _read_raw(data, pos, max_bytes, "unsigned varint")


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError("unsigned varint must be >= 0")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zigzag-encode a signed int32/int64."""
    return encode_uvarint((value << 1) ^ (value >> 63))


encode_varlong = encode_varint


def size_of_varint(value: int) -> int:
    return len(encode_varint(value))
