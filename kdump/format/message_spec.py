"""Kafka's generated-message specs as data: the schemas kdump reads internal records with.

Kafka describes its internal records (``__consumer_offsets``, ``__transaction_state``,
KRaft metadata, KRaft control records) in JSON message specs and generates Java readers
from them. kdump keeps the same facts as data, in a compact JSON of its own
(``format/schemas/*.json``), and ``kdump.format.message_reader`` reads bytes against that
data, so a new record type is a table entry rather than new code.

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
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from kdump.format.message_reader import (
    PRIMITIVES,
    ZERO_UUID,
    Reader,
    SchemaError,
    min_field_size,
    parse_versions,
    within,
)

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
        return within(self.versions, version)

    def is_tagged(self, version: int) -> bool:
        return self.tag is not None and within(self.tagged, version)

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
            tagged = {f.tag: f for f in present if f.tag is not None and f.is_tagged(version)}
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
                    total += min_field_size(f, version, flexible)
            self._min_cache[key] = total
        return self._min_cache[key]


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
        return within(self.valid, version)

    def decode(self, data: bytes, version: int, start: int = 0, end: int | None = None,
               exact: bool = True, generated: bool = False) -> dict[str, Any]:
        """Decode ``data[start:end]`` as this message at ``version``.

        With ``exact`` bytes left over are an error; otherwise they are ignored (the
        consumer protocol's forward-compatibility rule). ``generated``: fail with the texts
        of Kafka's generated readers (``Reader``). Raises SchemaError.
        """
        if not self.supports(version):
            raise SchemaError(f"Can't read version {version} of {self.name}")
        reader = Reader(data, start, len(data) if end is None else end, generated)
        out = reader.read_struct(self.root, version, within(self.flexible, version))
        if exact and reader.pos != reader.end:
            raise SchemaError(f"Found {reader.end - reader.pos} byte(s) of garbage after {self.name}", reader.pos)
        return out


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
    """Load ``format/schemas/<filename>`` (cached: each file is parsed once per process)."""
    text = resources.files("kdump.format").joinpath("schemas").joinpath(filename).read_text(encoding="utf-8")
    return SchemaSet(json.loads(text))
