"""Reading bytes in Kafka's generated-message encoding, against specs from ``message_spec``.

Kafka describes its internal records (``__consumer_offsets``, ``__transaction_state``,
KRaft metadata, KRaft control records) in JSON message specs and generates Java readers
from them; kdump keeps the same facts as data (``kdump.format.message_spec``) and reads
bytes against them here.

Encoding rules, as Kafka's ``ByteBufferAccessor`` and generated readers apply them:
non-flexible versions use int16 string lengths and int32 bytes/array lengths (-1 = null);
flexible versions use unsigned varint N+1 lengths (0 = null) and end every struct with a
tagged-field section (count, then tag/size/bytes per field). Every length or count is
checked against the bytes left *before* anything is allocated.

Decoded values are JSON-ready, as Kafka's JSON converters print them: bytes as standard
base64, uuids as url-safe base64 without padding (``Uuid.toString``), tagged fields only
when they differ from their default, fields absent from the version left out. Unknown
tags are kept under ``_unknown_tags`` (tag -> base64) so nothing read is lost.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from kdump.errors import DecodeError

MAX_VERSION = 0x7FFF
UNKNOWN_TAGS = "_unknown_tags"

# Fixed-width primitives: struct format and byte size.
_FIXED = {
    "bool": (struct.Struct(">?"), 1),
    "int8": (struct.Struct(">b"), 1),
    "int16": (struct.Struct(">h"), 2),
    "uint16": (struct.Struct(">H"), 2),
    "int32": (struct.Struct(">i"), 4),
    "uint32": (struct.Struct(">I"), 4),
    "int64": (struct.Struct(">q"), 8),
    "float64": (struct.Struct(">d"), 8),
}
_VARIABLE = ("string", "bytes", "records")
PRIMITIVES = frozenset(_FIXED) | frozenset(_VARIABLE) | {"uuid"}
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"   # Uuid.ZERO_UUID.toString()


class SchemaError(DecodeError):
    """The bytes do not follow the schema; ``payload_position`` is where reading failed.

    ``detail`` is the message without the position, worded like Kafka's readers so
    callers can wrap it the way Kafka does.
    """

    def __init__(self, detail: str, payload_position: int | None = None, where: str = "") -> None:
        self.detail = detail
        self.payload_position = payload_position
        at = f" [at {where + ' ' if where else ''}byte {payload_position}]" if payload_position is not None else ""
        super().__init__(detail + at)

    def rewrap(self, detail: str, where: str) -> SchemaError:
        """The same failure, reworded by an outer layer (keeps the position)."""
        return SchemaError(detail, self.payload_position, where)


# -- version ranges -------------------------------------------------------------------------

def parse_versions(text: str | None) -> tuple[int, int] | None:
    """``"3+"`` -> (3, 32767), ``"1"`` -> (1, 1), ``"0-2"`` -> (0, 2), ``"none"``/None -> None."""
    if text is None or text == "none":
        return None
    text = str(text)
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    if "-" in text:
        lo, hi = text.split("-", 1)
        return int(lo), int(hi)
    return int(text), int(text)


def within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def min_field_size(f, version: int, flexible: bool) -> int:
    if f.array:
        return 1 if flexible else 4
    return min_element_size(f, version, flexible)


def min_element_size(f, version: int, flexible: bool) -> int:
    if f.kind in _FIXED:
        return _FIXED[f.kind][1]
    if f.kind == "uuid":
        return 16
    if f.kind == "string":
        return 1 if flexible else 2
    if f.kind in ("bytes", "records"):
        return 1 if flexible else 4
    if f.nullable is not None and within(f.nullable, version):
        return 1                                              # the null marker byte
    return f.struct.min_size(version, flexible)


# -- the reader -----------------------------------------------------------------------------

def uuid_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: url-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


class Reader:
    """A cursor over ``data[start:end]``; ``st`` and ``f`` are message_spec Structs and Fields."""

    __slots__ = ("data", "pos", "end", "generated")

    def __init__(self, data: bytes, start: int, end: int, generated: bool = False) -> None:
        self.data = data
        self.pos = start
        self.end = end
        # ``generated``: fail as Kafka's generated readers do (an older line's classes, whose
        # text DumpLogSegments prints): a short read is Java's BufferUnderflowException, whose
        # message is "null", and a tagged-field count is not checked against the bytes first.
        self.generated = generated

    def fail(self, detail: str, at: int | None = None) -> SchemaError:
        return SchemaError(detail, self.pos if at is None else at)

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise self.fail(f"Error reading {what} of {n} byte(s): only {self.end - self.pos} byte(s) available")
        raw = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return raw

    def fixed(self, kind: str) -> Any:
        fmt, size = _FIXED[kind]
        if size > self.end - self.pos:
            raise self.fail("null" if self.generated else
                            f"Error reading {kind}: need {size} byte(s), only {self.end - self.pos} available")
        value = fmt.unpack_from(self.data, self.pos)[0]
        self.pos += size
        return value

    def uvarint(self, what: str) -> int:
        """Unsigned varint of at most 5 bytes (an int32), as ``ByteUtils.readUnsignedVarint``."""
        start = self.pos
        value = 0
        for i in range(5):
            if self.pos >= self.end:
                raise self.fail("null" if self.generated else
                                f"Error reading {what}: unsigned varint runs past the end of the data.", start)
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if value > 0xFFFFFFFF:
                    break
                return value
        raise self.fail(f"Error reading {what}: unsigned varint is longer than 5 bytes or too large.", start)

    # length prefixes: return -1 for null
    def length(self, flexible: bool, short: bool, what: str) -> int:
        if flexible:
            return self.uvarint(f"{what} length") - 1
        if short:
            return self.fixed("int16")
        return self.fixed("int32")

    def read_struct(self, st: Any, version: int, flexible: bool) -> dict[str, Any]:
        present, plain, tagged = st.plan(version)
        values = {f.name: self.read_field(f, version, flexible) for f in plain}
        if not flexible:
            return values
        unknown = self.read_tags(tagged, values, version)
        if tagged:
            # Kafka's converters print fields in declaration order and leave out tagged
            # fields that equal their default.
            out = {}
            for f in present:
                if f.tag in tagged and f.struct is not None and not f.array:
                    # A tagged struct is left out only when it equals a struct of defaults;
                    # null (its usual default, also when absent) is printed.
                    value = values.get(f.name, f.default_value(version, flexible))
                    if value is None or value != f.struct.default_value(version, flexible):
                        out[f.name] = value
                elif f.name in values and not (f.tag in tagged
                                               and values[f.name] == f.default_value(version, flexible)):
                    out[f.name] = values[f.name]
            values = out
        if unknown:
            values[UNKNOWN_TAGS] = unknown
        return values

    def read_tags(self, known: dict[int, Any], values: dict[str, Any], version: int) -> dict[str, str]:
        unknown: dict[str, str] = {}
        count_at = self.pos
        count = self.uvarint("tagged field count")
        # Each tagged field takes at least 2 bytes (tag and size).
        if count * 2 > self.remaining() and not self.generated:
            raise self.fail(f"Tried to read {count} tagged field(s), but there are only "
                            f"{self.remaining()} bytes remaining.", count_at)
        for _ in range(count):
            tag = self.uvarint("tag")
            size_at = self.pos
            size = self.uvarint("tagged field size")
            if size > self.remaining():
                raise self.fail(f"Error reading byte array of {size} byte(s): only {self.remaining()} "
                                f"byte(s) available", size_at)
            start, stop = self.pos, self.pos + size
            f = known.get(tag)
            if f is None:
                unknown[str(tag)] = b64(self.take(size, "byte array"))
                continue
            sub = Reader(self.data, start, stop, self.generated)
            values[f.name] = sub.read_field(f, version, True, tagged=True)
            if sub.pos != stop:
                raise self.fail(f"tagged field {f.name} (tag {tag}) declares {size} byte(s) but its value "
                                f"takes {sub.pos - start}", start)
            self.pos = stop
        return unknown

    def read_field(self, f: Any, version: int, flexible: bool, tagged: bool = False) -> Any:
        if f.array:
            at = self.pos
            n = self.length(flexible, False, f"array {f.name}")
            if n < 0:
                if n == -1 and within(f.nullable, version):
                    return None
                if n == -1:
                    raise self.fail(f"non-nullable field {f.name} was serialized as null", at)
                raise self.fail(f"array field {f.name} had invalid length {n}", at)
            per = max(1, min_element_size(f, version, flexible))
            if n * per > self.remaining():
                raise self.fail(f"Tried to allocate a collection of size {n}, but there are only "
                                f"{self.remaining()} bytes remaining.", at)
            return [self.read_element(f, version, flexible) for _ in range(n)]
        return self.read_element(f, version, flexible, tagged)

    def sized(self, f: Any, version: int, flexible: bool, what: str) -> int | None:
        """The length of a string or bytes element (``what``), None where it is a null the
        field allows; a null it does not allow or a negative length is an error."""
        at = self.pos
        n = self.length(flexible, what == "string", f"{what} {f.name}")
        if n >= 0:
            return n
        if n == -1 and not f.array and within(f.nullable, version):
            return None
        if n == -1:
            raise self.fail(f"non-nullable field {f.name} was serialized as null", at)
        raise self.fail(f"{what} field {f.name} had invalid length {n}", at)

    def read_element(self, f: Any, version: int, flexible: bool, tagged: bool = False) -> Any:
        kind = f.kind
        if kind in _FIXED:
            return self.fixed(kind)
        if kind == "uuid":
            return uuid_text(self.take(16, "uuid"))
        if kind == "string":
            at = self.pos
            n = self.sized(f, version, flexible, "string")
            if n is None:
                return None
            if n > 0x7FFF:
                raise self.fail(f"string field {f.name} had invalid length {n}", at)
            return self.take(n, "string").decode("utf-8", "replace")
        if kind in ("bytes", "records"):
            n = self.sized(f, version, flexible, "bytes")
            return None if n is None else b64(self.take(n, "byte array"))
        # struct: nullable structs carry a marker (KIP-893): a byte (-1 null, 1 present), or
        # as a tagged field an unsigned varint (0 null, above 0 present).
        if not f.array and within(f.nullable, version):
            if tagged:
                if self.uvarint(f"struct {f.name} marker") <= 0:
                    return None
            elif self.fixed("int8") < 0:
                return None
        return self.read_struct(f.struct, version, flexible)


def read_uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """One unsigned varint at ``pos``: (value, next position); raises SchemaError."""
    reader = Reader(data, pos, len(data))
    value = reader.uvarint(what)
    return value, reader.pos
