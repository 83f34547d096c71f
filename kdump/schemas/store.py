"""Schema Registry's ``_schemas`` topic replayed: id -> schema, subject/version -> schema.

Each record's key is JSON naming what it is about (``keytype``); the value is the new state,
null for a tombstone. A schema registry rebuilds its state by reading the topic from the
start, the last value of each key winning (the topic is compacted); so does ``SchemaStore``.

=============== ==================================================== =====================================
keytype         key (besides keytype, magic)                         value
=============== ==================================================== =====================================
SCHEMA          subject, version                                     subject, version, id, schema,
                                                                     schemaType (absent: AVRO), references,
                                                                     deleted (a soft delete)
CONFIG          subject (null: the global config)                    compatibilityLevel
MODE            subject                                              mode
DELETE_SUBJECT  subject                                              subject, version: versions up to it
                                                                     are soft-deleted
CLEAR_SUBJECT   subject                                              subject: soft-deleted versions go
NOOP            -                                                    null (a marker the registry waits on)
=============== ==================================================== =====================================

A schema id outlives a soft delete (the registry still serves ``/schemas/ids/{id}``), so a
record written before the delete still decodes. A record of the topic that is not this
(not JSON, an unknown keytype, a value missing a field) is kept in ``problems`` and skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import DecodeError

AVRO, PROTOBUF, JSON = "AVRO", "PROTOBUF", "JSON"
SCHEMA_TYPES = (AVRO, PROTOBUF, JSON)
DEFAULT_COMPATIBILITY = "BACKWARD"


MAX_REFERENCE_DEPTH = 32      # references resolved through at most this many levels


@dataclass(frozen=True)
class Reference:
    name: str          # how the schema names it: an Avro full name, a .proto import path, a $ref URL
    subject: str
    version: int


@dataclass
class Schema:
    id: int
    schema_type: str
    text: str
    references: tuple[Reference, ...] = ()
    subject: str | None = None
    version: int | None = None
    deleted: bool = False
    offset: int | None = None          # of its record in _schemas

    def describe(self) -> dict[str, Any]:
        """{id, type, subject, version}: made once (callers must not change it)."""
        out = self.__dict__.get("_described")
        if out is None:
            out = {"id": self.id, "type": self.schema_type}
            if self.subject is not None:
                out["subject"] = self.subject
                out["version"] = self.version
            self.__dict__["_described"] = out
        return out


@dataclass
class Problem:
    offset: int | None
    message: str


@dataclass
class SchemaStore:
    by_id: dict[int, Schema] = field(default_factory=dict)
    versions: dict[str, dict[int, Schema]] = field(default_factory=dict)
    config: dict[str | None, str] = field(default_factory=dict)       # subject (None: global) -> level
    problems: list[Problem] = field(default_factory=list)
    by_name: dict[str, Schema] = field(default_factory=dict)          # folder files by name, for references
    hard_deleted: dict[int, Schema] = field(default_factory=dict)     # ids whose last version a tombstone removed
    # A live registry's answer for an id no subject lists (``registry.IdFetcher``), asked on a miss.
    fetch: Callable[[int], Schema | None] | None = field(default=None, repr=False, compare=False)

    # -- replay -------------------------------------------------------------------------------

    def replay(self, key: bytes | None, value: bytes | None, offset: int | None = None) -> None:
        """Apply one record of ``_schemas``; a record that is not Schema Registry's is a problem."""
        try:
            k = _json_object(key, "key")
            v = None if value is None else _json_object(value, "value")
            self._apply(k, v, offset)
        except (ValueError, KeyError, TypeError) as e:
            self.problems.append(Problem(offset, f"not a Schema Registry record: {_why(e)}"))

    def _apply(self, k: dict, v: dict | None, offset: int | None) -> None:
        keytype = k["keytype"]
        if keytype == "SCHEMA":
            self._schema(k, v, offset)
        elif keytype == "CONFIG":
            level = None if v is None else (v.get("compatibilityLevel") or v.get("compatibility"))
            if level is None:
                self.config.pop(k.get("subject"), None)
            else:
                self.config[k.get("subject")] = str(level).upper()
        elif keytype == "DELETE_SUBJECT":
            if v is not None:
                upto = _int(v["version"], "version")
                for ver, s in self.versions.get(_str(v["subject"], "subject"), {}).items():
                    if ver <= upto:
                        s.deleted = True
        elif keytype == "CLEAR_SUBJECT":
            if v is not None:
                subject = _str(v["subject"], "subject")
                kept = {ver: s for ver, s in self.versions.get(subject, {}).items() if not s.deleted}
                self.versions[subject] = kept
        elif keytype not in ("NOOP", "MODE", "CONTEXT", "DELETE_CONTEXT"):
            raise ValueError(f"unknown keytype {keytype!r}")

    def _schema(self, k: dict, v: dict | None, offset: int | None) -> None:
        subject, version = _str(k["subject"], "subject"), _int(k["version"], "version")
        if v is None:                       # a tombstone: the version is gone (a hard delete)
            gone = self.versions.get(subject, {}).pop(version, None)
            if gone is not None and not any(x.id == gone.id for vs in self.versions.values() for x in vs.values()):
                # No subject holds the id any more: the registry no longer serves it.
                self.by_id.pop(gone.id, None)
                self.hard_deleted[gone.id] = gone
            return
        schema_type = v.get("schemaType") or AVRO
        if schema_type not in SCHEMA_TYPES:
            raise ValueError(f"unknown schemaType {schema_type!r}")
        refs = tuple(Reference(_str(r["name"], "reference name"), _str(r["subject"], "reference subject"),
                               _int(r["version"], "reference version")) for r in v.get("references") or ())
        s = Schema(_int(v["id"], "id"), schema_type, _str(v["schema"], "schema"), refs, subject, version,
                   bool(v.get("deleted", False)), offset)
        self.versions.setdefault(subject, {})[version] = s
        known = self.by_id.get(s.id)
        # An id shared by several subjects keeps its first holder; a live one wins over a deleted one.
        if known is None or (known.deleted and not s.deleted) or (known.subject, known.version) == (subject, version):
            self.by_id[s.id] = s

    # -- lookups ------------------------------------------------------------------------------

    def add(self, s: Schema) -> None:
        """A schema from a folder or a registry (not replayed from _schemas)."""
        self.by_id.setdefault(s.id, s)
        if s.subject is not None and s.version is not None:
            self.versions.setdefault(s.subject, {})[s.version] = s

    def had_subject(self, subject: str) -> bool:
        """Does (or did, before a hard delete) the store hold this subject?"""
        return bool(self.versions.get(subject)) or any(s.subject == subject for s in self.hard_deleted.values())

    def compatibility(self, subject: str | None) -> str:
        return self.config.get(subject) or self.config.get(None) or DEFAULT_COMPATIBILITY

    def get(self, schema_id: int) -> Schema | None:
        s = self.by_id.get(schema_id)
        if s is None and self.fetch is not None:
            s = self.fetch(schema_id)
            if s is not None:
                self.by_id[schema_id] = s
        return s

    def version(self, subject: str, version: int) -> Schema | None:
        s = self.versions.get(subject, {}).get(version)
        if s is None and version == -1 and self.versions.get(subject):       # "latest"
            s = self.versions[subject][max(self.versions[subject])]
        return s

    def reference(self, ref: Reference) -> Schema | None:
        found = self.version(ref.subject, ref.version)
        if found is None:
            found = self.by_name.get(ref.name) or self.by_name.get(ref.subject)
        return found

    def references_of(self, schema: Schema, root: int,
                      skip: Callable[[Reference], bool] = lambda ref: False) -> list[tuple[Reference, Schema]]:
        """The schemas ``schema`` references, transitively, each name once and each after the ones
        it references (a parser can take them in this order); DecodeError naming schema ``root``
        when one is not in the store or they nest more than MAX_REFERENCE_DEPTH deep."""
        out: list[tuple[Reference, Schema]] = []
        seen: set[str] = set()

        def walk(s: Schema, depth: int) -> None:
            if depth > MAX_REFERENCE_DEPTH:
                raise DecodeError(f"schema {root}: references nest more than {MAX_REFERENCE_DEPTH} deep")
            for ref in s.references:
                if ref.name in seen or skip(ref):
                    continue
                target = self.reference(ref)
                if target is None:
                    raise DecodeError(f"schema {root}: its reference {ref.name!r} (subject {ref.subject!r} "
                                      f"version {ref.version}) is not in the store")
                seen.add(ref.name)
                walk(target, depth + 1)
                out.append((ref, target))

        walk(schema, 0)
        return out

    def __len__(self) -> int:
        return len(self.by_id)


def _json_object(data: bytes | None, what: str) -> dict:
    if data is None:
        raise ValueError(f"no {what}")
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"the {what} is not JSON ({_why(e)})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"the {what} is not a JSON object")
    return obj


def _int(v: Any, what: str) -> int:
    if type(v) is not int:
        raise ValueError(f"{what} is not an integer: {v!r}")
    return v


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{what} is not a string: {v!r}")
    return v


def _why(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"no {e.args[0]!r} field"
    return str(e)[:200]
