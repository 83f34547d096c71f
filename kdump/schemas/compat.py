"""Schema Registry's compatibility levels: would the registry have refused a subject's
version, given the versions before it?

BACKWARD: the new schema reads data written with the previous one; FORWARD: the previous one
reads the new one's data; FULL: both. The _TRANSITIVE levels check every earlier version, not
only the previous one; NONE checks nothing. A version of another schema type than an earlier
one is refused under every level but NONE. What "reads" means is each type's own rules: Avro's
schema resolution here, Protobuf's in ``compat_protobuf``, JSON Schema's in ``compat_json``.
"""

from __future__ import annotations

from typing import Any

from kdump.errors import DecodeError
from kdump.schemas.store import AVRO, PROTOBUF, Schema, SchemaStore

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
_PROMOTIONS = {"int": {"int", "long", "float", "double"}, "long": {"long", "float", "double"},
               "float": {"float", "double"}, "double": {"double"}, "string": {"string", "bytes"},
               "bytes": {"bytes", "string"}, "null": {"null"}, "boolean": {"boolean"}}


def _resolve(s: Any, named: dict[str, Any]) -> Any:
    while isinstance(s, str) and s in named:
        s = named[s]
    if isinstance(s, dict) and s.get("type") not in ("record", "error", "enum", "fixed", "array", "map") \
            and not isinstance(s.get("type"), (list, dict)):
        return s["type"]                 # {"type": "long", "logicalType": ...} reads as a long
    if isinstance(s, dict) and isinstance(s.get("type"), (list, dict)):
        return _resolve(s["type"], named)
    return s


def _kind(s: Any) -> str:
    if isinstance(s, list):
        return "union"
    if isinstance(s, str):
        return s
    return "record" if s["type"] == "error" else s["type"]


def _name(s: Any) -> str:
    return s.get("name", "") if isinstance(s, dict) else ""


def _names(s: Any) -> set[str]:
    n = _name(s)
    short = n.rsplit(".", 1)[-1]
    aliases = set(s.get("aliases") or ()) if isinstance(s, dict) else set()
    return {n, short} | aliases | {a.rsplit(".", 1)[-1] for a in aliases}


def can_read(reader: Any, writer: Any, rn: dict, wn: dict, path: str = "", seen: set | None = None) -> str | None:
    """None when ``reader`` reads all data written with ``writer``; else the first reason why not."""
    seen = set() if seen is None else seen
    r, w = _resolve(reader, rn), _resolve(writer, wn)
    key = (id(r), id(w))
    if key in seen:
        return None                      # a recursive type already being compared
    seen.add(key)
    at = path or "the top level"
    rk, wk = _kind(r), _kind(w)
    if wk == "union":
        for i, branch in enumerate(w):
            why = can_read(r, branch, rn, wn, path, seen)
            if why is not None:
                return why
        return None
    if rk == "union":
        for branch in r:
            if can_read(branch, w, rn, wn, path, set(seen)) is None:
                return None
        return f"{at}: the reader's union has no branch for the writer's {wk}"
    if wk in _PROMOTIONS:
        return None if rk in _PROMOTIONS[wk] else f"{at}: a {wk} cannot be read as {rk}"
    if rk != wk:
        return f"{at}: a {wk} cannot be read as {rk}"
    if rk in ("record", "enum", "fixed") and not (_names(r) & _names(w)):
        return f"{at}: the reader's {rk} {_name(r)} is not the writer's {_name(w)}"
    if rk == "array":
        return can_read(r["items"], w["items"], rn, wn, path + "[]", seen)
    if rk == "map":
        return can_read(r["values"], w["values"], rn, wn, path + "{}", seen)
    if rk == "fixed":
        return None if r["size"] == w["size"] else f"{at}: fixed of {w['size']} bytes read as {r['size']}"
    if rk == "enum":
        missing = [x for x in w["symbols"] if x not in r["symbols"]]
        if missing and "default" not in r:
            return f"{at}: the reader's enum {_name(r)} lacks the symbols {missing} and has no default"
        return None
    wf = {f["name"]: f for f in w["fields"]}
    for f in w["fields"]:
        for a in f.get("aliases") or ():
            wf.setdefault(a, f)
    for f in r["fields"]:
        src = wf.get(f["name"]) or next((wf[a] for a in f.get("aliases") or () if a in wf), None)
        where = f"{path}.{f['name']}" if path else f["name"]
        if src is None:
            if "default" not in f:
                return f"field {where}: the reader has it without a default, the writer does not write it"
            continue
        why = can_read(f["type"], src["type"], rn, wn, where, seen)
        if why is not None:
            return why
    return None


def reads(reader: Schema, writer: Schema, parsed) -> str | None:
    """None when Schema Registry deems ``reader`` able to read ``writer``'s data; else the first
    reason why not (and how many more there are)."""
    p_reader, p_writer = parsed(reader), parsed(writer)
    if reader.schema_type == AVRO:
        return can_read(p_reader.schema, p_writer.schema, p_reader.named, p_writer.named)
    if reader.schema_type == PROTOBUF:
        from kdump.schemas import compat_protobuf as rules
    else:
        from kdump.schemas import compat_json as rules
    why = rules.breaks(p_writer, p_reader)
    if not why:
        return None
    return why[0] + (f" (and {len(why) - 1} more)" if len(why) > 1 else "")


def check(level: str, new: Schema, earlier: list[Schema], parsed) -> str | None:
    """Would Schema Registry have refused ``new`` after ``earlier`` (oldest first) under
    ``level``? ``parsed(schema)`` gives the schema's parsed form. The reason, or None."""
    level = level.upper()
    if level not in LEVELS or level == "NONE" or not earlier:
        return None
    against = earlier if level.endswith("_TRANSITIVE") else earlier[-1:]
    for old in reversed(against):
        if old.schema_type != new.schema_type:
            return (f"version {new.version} is {new.schema_type}, version {old.version} was {old.schema_type} "
                    f"({level}): the schema type cannot change")
        if level.startswith(("BACKWARD", "FULL")):
            why = reads(new, old, parsed)
            if why:
                return f"version {new.version} cannot read version {old.version}'s data ({level}): {why}"
        if level.startswith(("FORWARD", "FULL")):
            why = reads(old, new, parsed)
            if why:
                return f"version {old.version} cannot read version {new.version}'s data ({level}): {why}"
    return None


def subject_breaks(store: SchemaStore, parsed) -> list[tuple[Schema, str, str]]:
    """(schema, level, reason) for each live version that breaks its subject's declared level
    against the live versions before it."""
    out = []
    for subject, versions in store.versions.items():
        live = [versions[n] for n in sorted(versions) if not versions[n].deleted]
        level = store.compatibility(subject)
        for i, s in enumerate(live[1:], 1):
            try:
                why = check(level, s, live[:i], parsed)
            except (DecodeError, RecursionError):     # a schema that does not parse: the decode check says so
                why = None
            if why:
                out.append((s, level, why))
    return out
