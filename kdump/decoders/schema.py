"""A data-driven reader for Kafka's generated-message encoding.

Kafka describes its internal records (``__consumer_offsets``, ``__transaction_state``,
KRaft metadata, KRaft control records) in JSON message specs and generates Java readers
from them. kdump keeps the same facts as data, in a compact JSON of its own
(``decoders/schemas/*.json``), and this module reads bytes against that data, so a new
record type is a table entry rather than new code.

Schema format (one message)::

    {"versions": "0-4", "flexible": "4+",
     "fields": [{"name": "offset", "type": "int64"},
                {"name": "leaderEpoch", "type": "int32", "v": "3+", "default": -1},
                {"name": "members", "type": "[]Member"}],
     "structs": {"Member": [ ...fields... ]}}

Field keys: ``name`` (the camelCase JSON name Kafka's converters print), ``type``
(a primitive, ``[]primitive``, ``Struct`` or ``[]Struct``; a struct is given inline by
``fields`` or by name in the message's ``structs``), ``v`` versions (default ``0+``),
``null`` nullable versions, ``tag`` and ``tv`` (tagged versions; default: ``v``) and
``default``. Version ranges are ``"N"``, ``"N+"``, ``"N-M"`` or ``"none"``.

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
import json
import math
import struct
from decimal import Decimal
from functools import lru_cache
from importlib import resources
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


def _within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


# -- schema objects -------------------------------------------------------------------------

class Field:
    __slots__ = ("name", "kind", "array", "struct", "versions", "nullable", "tag", "tagged", "default")

    def __init__(self, spec: dict[str, Any], structs: dict[str, Any], owner: str) -> None:
        self.name: str = spec["name"]
        ftype: str = spec["type"]
        self.array = ftype.startswith("[]")
        base = ftype[2:] if self.array else ftype
        self.struct: Struct | None = None
        if base in PRIMITIVES:
            self.kind = base
        else:
            self.kind = "struct"
            inline = spec.get("fields")
            if inline is None:
                if base not in structs:
                    raise ValueError(f"{owner}.{self.name}: unknown type {ftype!r}")
                inline = structs[base]
            self.struct = Struct(base, inline, structs)
        self.versions = parse_versions(spec.get("v", "0+"))
        self.nullable = parse_versions(spec.get("null"))
        self.tag: int | None = spec.get("tag")
        self.tagged = parse_versions(spec.get("tv", spec.get("v", "0+"))) if self.tag is not None else None
        self.default = spec.get("default", _MISSING)

    def present(self, version: int) -> bool:
        return _within(self.versions, version)

    def is_tagged(self, version: int) -> bool:
        return self.tag is not None and _within(self.tagged, version)

    def default_value(self, version: int, flexible: bool) -> Any:
        """The value Kafka's generated class holds when the field is not set."""
        if self.default is not _MISSING:
            return self.default
        if self.array:
            return []
        if self.kind == "struct":
            return self.struct.default_value(version, flexible) if self.struct else None
        if self.kind == "bool":
            return False
        if self.kind in ("string", "bytes", "records"):
            return ""
        if self.kind == "uuid":
            return ZERO_UUID
        if self.kind == "float64":
            return 0.0
        return 0


_MISSING = object()


class Struct:
    __slots__ = ("name", "fields", "_min_cache", "_plans")

    def __init__(self, name: str, fields: list[dict[str, Any]], structs: dict[str, Any]) -> None:
        self.name = name
        self.fields = [Field(f, structs, name) for f in fields]
        self._min_cache: dict[tuple[int, bool], int] = {}
        self._plans: dict[int, tuple[list[Field], list[Field], dict[int, Field]]] = {}

    def plan(self, version: int) -> tuple[list[Field], list[Field], dict[int, Field]]:
        """(fields in the version, those read in order, tag -> tagged field), cached per version."""
        plan = self._plans.get(version)
        if plan is None:
            present = [f for f in self.fields if f.present(version)]
            plain = [f for f in present if not f.is_tagged(version)]
            tagged = {f.tag: f for f in present if f.is_tagged(version)}
            plan = self._plans[version] = (present, plain, tagged)
        return plan

    def default_value(self, version: int, flexible: bool) -> dict[str, Any]:
        return {f.name: f.default_value(version, flexible) for f in self.fields
                if f.present(version) and not f.is_tagged(version)}

    def min_size(self, version: int, flexible: bool) -> int:
        """Fewest bytes one instance can take (used to bound array counts)."""
        key = (version, flexible)
        if key not in self._min_cache:
            total = 1 if flexible else 0                      # the tagged-field count
            for f in self.fields:
                if f.present(version) and not f.is_tagged(version):
                    total += _min_field_size(f, version, flexible)
            self._min_cache[key] = total
        return self._min_cache[key]


def _min_field_size(f: Field, version: int, flexible: bool) -> int:
    if f.array:
        return 1 if flexible else 4
    return _min_element_size(f, version, flexible)


def _min_element_size(f: Field, version: int, flexible: bool) -> int:
    if f.kind in _FIXED:
        return _FIXED[f.kind][1]
    if f.kind == "uuid":
        return 16
    if f.kind == "string":
        return 1 if flexible else 2
    if f.kind in ("bytes", "records"):
        return 1 if flexible else 4
    if f.nullable is not None and _within(f.nullable, version):
        return 1                                              # the null marker byte
    return f.struct.min_size(version, flexible)


class Message:
    """One message spec: valid versions, flexible versions and the root struct."""

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        self.name = name
        self.valid = parse_versions(spec.get("versions", "0"))
        self.flexible = parse_versions(spec.get("flexible", "none"))
        self.root = Struct(name, spec.get("fields", []), spec.get("structs", {}))

    @property
    def lowest(self) -> int:
        return self.valid[0] if self.valid else 0

    @property
    def highest(self) -> int:
        return self.valid[1] if self.valid else -1

    def supports(self, version: int) -> bool:
        return _within(self.valid, version)

    def decode(self, data: bytes, version: int, start: int = 0, end: int | None = None,
               exact: bool = True) -> dict[str, Any]:
        """Decode ``data[start:end]`` as this message at ``version``.

        With ``exact`` bytes left over are an error; otherwise they are ignored (the
        consumer protocol's forward-compatibility rule). Raises SchemaError.
        """
        if not self.supports(version):
            raise SchemaError(f"Can't read version {version} of {self.name}")
        reader = _Reader(data, start, len(data) if end is None else end)
        out = reader.read_struct(self.root, version, _within(self.flexible, version))
        if exact and reader.pos != reader.end:
            raise SchemaError(f"Found {reader.end - reader.pos} byte(s) of garbage after {self.name}", reader.pos)
        return out


# -- the reader -----------------------------------------------------------------------------

def uuid_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: url-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


class _Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.data = data
        self.pos = start
        self.end = end

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
            raise self.fail(f"Error reading {kind}: need {size} byte(s), only {self.end - self.pos} available")
        value = fmt.unpack_from(self.data, self.pos)[0]
        self.pos += size
        return value

    def uvarint(self, what: str) -> int:
        """Unsigned varint of at most 5 bytes (an int32), as ``ByteUtils.readUnsignedVarint``."""
        start = self.pos
        value = 0
        for i in range(5):
            if self.pos >= self.end:
                raise self.fail(f"Error reading {what}: unsigned varint runs past the end of the data.", start)
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

    def read_struct(self, st: Struct, version: int, flexible: bool) -> dict[str, Any]:
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

    def read_tags(self, known: dict[int, Field], values: dict[str, Any], version: int) -> dict[str, str]:
        unknown: dict[str, str] = {}
        count_at = self.pos
        count = self.uvarint("tagged field count")
        # Each tagged field takes at least 2 bytes (tag and size).
        if count * 2 > self.remaining():
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
            sub = _Reader(self.data, start, stop)
            values[f.name] = sub.read_field(f, version, True, tagged=True)
            if sub.pos != stop:
                raise self.fail(f"tagged field {f.name} (tag {tag}) declares {size} byte(s) but its value "
                                f"takes {sub.pos - start}", start)
            self.pos = stop
        return unknown

    def read_field(self, f: Field, version: int, flexible: bool, tagged: bool = False) -> Any:
        if f.array:
            at = self.pos
            n = self.length(flexible, False, f"array {f.name}")
            if n < 0:
                if n == -1 and _within(f.nullable, version):
                    return None
                if n == -1:
                    raise self.fail(f"non-nullable field {f.name} was serialized as null", at)
                raise self.fail(f"array field {f.name} had invalid length {n}", at)
            per = max(1, _min_element_size(f, version, flexible))
            if n * per > self.remaining():
                raise self.fail(f"Tried to allocate a collection of size {n}, but there are only "
                                f"{self.remaining()} bytes remaining.", at)
            return [self.read_element(f, version, flexible) for _ in range(n)]
        return self.read_element(f, version, flexible, tagged)

    def read_element(self, f: Field, version: int, flexible: bool, tagged: bool = False) -> Any:
        kind = f.kind
        if kind in _FIXED:
            return self.fixed(kind)
        if kind == "uuid":
            return uuid_text(self.take(16, "uuid"))
        if kind == "string":
            at = self.pos
            n = self.length(flexible, True, f"string {f.name}")
            if n < 0:
                if n == -1 and not f.array and _within(f.nullable, version):
                    return None
                if n == -1:
                    raise self.fail(f"non-nullable field {f.name} was serialized as null", at)
                raise self.fail(f"string field {f.name} had invalid length {n}", at)
            if n > 0x7FFF:
                raise self.fail(f"string field {f.name} had invalid length {n}", at)
            return self.take(n, "string").decode("utf-8", "replace")
        if kind in ("bytes", "records"):
            at = self.pos
            n = self.length(flexible, False, f"bytes {f.name}")
            if n < 0:
                if n == -1 and not f.array and _within(f.nullable, version):
                    return None
                if n == -1:
                    raise self.fail(f"non-nullable field {f.name} was serialized as null", at)
                raise self.fail(f"bytes field {f.name} had invalid length {n}", at)
            return b64(self.take(n, "byte array"))
        # struct: nullable structs carry a marker (KIP-893): a byte (-1 null, 1 present), or
        # as a tagged field an unsigned varint (0 null, above 0 present).
        if not f.array and _within(f.nullable, version):
            if tagged:
                if self.uvarint(f"struct {f.name} marker") <= 0:
                    return None
            elif self.fixed("int8") < 0:
                return None
        return self.read_struct(f.struct, version, flexible)


def read_uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """One unsigned varint at ``pos``: (value, next position); raises SchemaError."""
    reader = _Reader(data, pos, len(data))
    value = reader.uvarint(what)
    return value, reader.pos


# -- loading schema files -------------------------------------------------------------------

class SchemaSet:
    """The messages of one schema file, plus the file's other tables (``raw``)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.messages = {name: Message(name, spec) for name, spec in raw.get("messages", {}).items()}

    def __getitem__(self, name: str) -> Message:
        return self.messages[name]


@lru_cache(maxsize=None)
def load(filename: str) -> SchemaSet:
    """Load ``decoders/schemas/<filename>`` (cached: each file is parsed once per process)."""
    text = resources.files("kdump.decoders").joinpath("schemas").joinpath(filename).read_text(encoding="utf-8")
    return SchemaSet(json.loads(text))


def snake_name(camel: str) -> str:
    """``RegisterBrokerRecord`` -> ``REGISTER_BROKER_RECORD`` (Kafka's enum naming)."""
    out = []
    for i, c in enumerate(camel):
        if c.isupper() and i and (camel[i - 1].islower() or camel[i - 1].isdigit()):
            out.append("_")
        out.append(c.upper())
    return "".join(out)


# -- JSON text as Kafka's Jackson-based converters print it ---------------------------------

def java_double(value: float) -> str:
    """``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE±n`` (shortest digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    exact = Decimal(repr(abs(value))).normalize()     # repr: shortest round-trip digits
    if 1e-3 <= abs(value) < 1e7:
        text = format(exact, "f")
        return sign + (text if "." in text else text + ".0")
    _, digits, exponent = exact.as_tuple()
    head, tail = str(digits[0]), "".join(map(str, digits[1:])) or "0"
    return f"{sign}{head}.{tail}E{len(digits) - 1 + exponent}"


def to_json(obj: Any) -> str:
    """Compact one-line JSON (no spaces, non-ASCII kept, Java-style doubles)."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return java_double(obj)
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    if isinstance(obj, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{to_json(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in obj) + "]"
    raise TypeError(f"cannot render {type(obj).__name__} as JSON")


def strip_private(obj: Any) -> Any:
    """Drop kdump's own keys (``_unknown_tags`` and friends) for Kafka-identical text."""
    if isinstance(obj, dict):
        return {k: strip_private(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [strip_private(v) for v in obj]
    return obj
