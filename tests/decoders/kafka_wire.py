"""Byte builders for decoder tests: Kafka's primitive encodings written out by hand.

``encode()`` walks a kdump schema and writes a value dict the way Kafka's generated
writers would; it shares no code with the reader in ``kdump.format.message_reader``, so a
round trip through both checks one against the other.
"""

from __future__ import annotations

import base64
import struct


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def f64(v: float) -> bytes:
    return struct.pack(">d", v)


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(s: str | None, flexible: bool = False) -> bytes:
    if s is None:
        return uvarint(0) if flexible else i16(-1)
    raw = s.encode("utf-8")
    return (uvarint(len(raw) + 1) if flexible else i16(len(raw))) + raw


def blob(b: bytes | None, flexible: bool = False) -> bytes:
    if b is None:
        return uvarint(0) if flexible else i32(-1)
    return (uvarint(len(b) + 1) if flexible else i32(len(b))) + b


def count(n: int | None, flexible: bool = False) -> bytes:
    """An array length prefix (None = null array)."""
    if n is None:
        return uvarint(0) if flexible else i32(-1)
    return uvarint(n + 1) if flexible else i32(n)


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section: count, then tag, size, data (tags in ascending order)."""
    fields = fields or {}
    out = uvarint(len(fields))
    for tag in sorted(fields):
        out += uvarint(tag) + uvarint(len(fields[tag])) + fields[tag]
    return out


# -- generic writer over a kdump schema (for round trips) ------------------------------------

def _within(rng, v):
    return rng is not None and rng[0] <= v <= rng[1]


def encode(message, version: int, data: dict) -> bytes:
    flexible = _within(message.flexible, version)
    return _struct(message.root, version, flexible, data)


def _struct(st, version, flexible, data) -> bytes:
    out = b""
    tagged = {}
    for f in st.fields:
        if not _within(f.versions, version):
            continue
        if f.tag is not None and _within(f.tagged, version):
            if f.name in data:
                tagged[f.tag] = _field(f, version, True, data[f.name], tagged=True)
            continue
        out += _field(f, version, flexible, data[f.name])
    if flexible:
        unknown = {int(k): base64.b64decode(v) for k, v in data.get("_unknown_tags", {}).items()}
        out += tags({**tagged, **unknown})
    return out


def _field(f, version, flexible, value, tagged=False) -> bytes:
    if f.array:
        if value is None:
            return count(None, flexible)
        return count(len(value), flexible) + b"".join(_element(f, version, flexible, v) for v in value)
    return _element(f, version, flexible, value, tagged)


_FIXED = {"bool": boolean, "int8": i8, "int16": i16, "uint16": u16, "int32": i32, "uint32": u32,
          "int64": i64, "float64": f64}


def _element(f, version, flexible, value, tagged=False) -> bytes:
    if f.kind in _FIXED:
        return _FIXED[f.kind](value)
    if f.kind == "uuid":
        return uuid(value)
    if f.kind == "string":
        return string(value, flexible)
    if f.kind in ("bytes", "records"):
        return blob(None if value is None else base64.b64decode(value), flexible)
    nullable = not f.array and _within(f.nullable, version)
    # The null marker: a byte (-1/1), or as a tagged field an unsigned varint (0/1).
    absent, present = (uvarint(0), uvarint(1)) if tagged else (i8(-1), i8(1))
    if nullable and value is None:
        return absent
    body = _struct(f.struct, version, flexible, value)
    return (present + body) if nullable else body
