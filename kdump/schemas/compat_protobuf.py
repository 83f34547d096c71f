"""Schema Registry's compatibility rules for Protobuf, on the descriptors protoc built
(``protobuf.parse``): which differences between an ``original`` schema (the writer) and an
``update`` (the reader) make the registry refuse the update.

The registry compares the two .proto files element by element and lets through what the wire
format tolerates:

- allowed: a message or enum added, moved or reordered (message indexes are per schema id),
  enums and enum constants changed in any way, a field added or removed (not ``required``), a
  field renamed, ``string`` <-> ``bytes``, a field moved out of a oneof, a oneof added or
  removed, a field added to a oneof;
- refused: the file's package changed; a message removed; a ``required`` field added or
  removed; a field whose kind changed (scalar, message, map; an enum counts as a scalar);
  a scalar moved to a type of another wire group (int32/int64/uint32/uint64/bool/enums,
  sint32/sint64, string/bytes, fixed32/sfixed32, fixed64/sfixed64, float, double); a number
  field whose explicit label changed (optional, required, repeated: packed encodings
  differ); a field's message type renamed, or changed incompatibly; a field removed from a
  oneof (unless the whole oneof went); fields that were independent put into one oneof.

Fields are matched by number, messages and oneofs by name. A message type taken from the
same referenced subject and version on both sides is not compared again. A proto3 field
without a label and a map field have no label to compare (as in the registry, whose parser
leaves them unlabelled).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# FieldDescriptorProto.Type numbers -> names, and the wire groups a value may move within.
_SCALARS = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32", 8: "bool",
            9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
_GROUPS = {"int32": "varint", "int64": "varint", "uint32": "varint", "uint64": "varint", "bool": "varint",
           "enum": "varint", "sint32": "zigzag", "sint64": "zigzag", "string": "length", "bytes": "length",
           "fixed32": "fixed32", "sfixed32": "fixed32", "fixed64": "fixed64", "sfixed64": "fixed64",
           "float": "float", "double": "double"}
TYPE_GROUP, TYPE_MESSAGE, TYPE_ENUM = 10, 11, 14
LABEL_OPTIONAL, LABEL_REQUIRED, LABEL_REPEATED = 1, 2, 3


@dataclass
class _Type:
    proto: Any                       # DescriptorProto or EnumDescriptorProto
    is_enum: bool
    package: str
    file: str


@dataclass
class Side:
    """One schema's file, and every type it can name (its own and its imports'), by full name."""
    file: Any                        # the FileDescriptorProto of the schema itself
    types: dict[str, _Type] = field(default_factory=dict)
    references: dict[str, tuple[str, int]] = field(default_factory=dict)     # import path -> (subject, version)
    syntax: str = "proto2"

    @classmethod
    def of(cls, parsed) -> Side:
        from google.protobuf import descriptor_pb2

        side = cls(parsed.file_proto, references=dict(getattr(parsed, "references", {}) or {}),
                   syntax=parsed.file_proto.syntax or "proto2")
        todo, seen = [parsed.file_proto], set()
        while todo:
            fp = todo.pop()
            if fp.name in seen:
                continue
            seen.add(fp.name)
            prefix = f".{fp.package}" if fp.package else ""
            side._index(fp.message_type, fp.enum_type, prefix, fp)
            for dep in fp.dependency:
                try:
                    todo.append(descriptor_pb2.FileDescriptorProto.FromString(
                        parsed.pool.FindFileByName(dep).serialized_pb))
                except KeyError:
                    pass
        return side

    def _index(self, messages, enums, prefix: str, fp) -> None:
        for m in messages:
            name = f"{prefix}.{m.name}"
            self.types[name] = _Type(m, False, fp.package, fp.name)
            self._index(m.nested_type, m.enum_type, name, fp)
        for e in enums:
            self.types[f"{prefix}.{e.name}"] = _Type(e, True, fp.package, fp.name)

    def label(self, f) -> str | None:
        """The label as the .proto text spells it: None for a proto3 field without one, a oneof
        member, or a map."""
        if f.label == LABEL_REPEATED:
            return "repeated"
        if f.label == LABEL_REQUIRED:
            return "required"
        if f.HasField("oneof_index") and not f.proto3_optional:
            return None
        return "optional" if f.proto3_optional or self.syntax == "proto2" else None

    def type_of(self, f) -> tuple:
        """("scalar", name) | ("enum", full name) | ("message", full name) | ("map", key, value)."""
        if f.type in (TYPE_MESSAGE, TYPE_GROUP):
            t = self.types.get(f.type_name)
            if t is not None and not t.is_enum and t.proto.options.map_entry:
                key, value = sorted(t.proto.field, key=lambda x: x.number)[:2]
                return ("map", self.type_of(key), self.type_of(value))
            return ("message", f.type_name)
        if f.type == TYPE_ENUM:
            return ("enum", f.type_name)
        return ("scalar", _SCALARS.get(f.type, str(f.type)))

    def local_name(self, full: str) -> str:
        t = self.types.get(full)
        name = full.lstrip(".")
        if t is not None and t.package and name.startswith(t.package + "."):
            return name[len(t.package) + 1:]
        return name


class _Diff:
    def __init__(self, original: Side, update: Side) -> None:
        self.o, self.u = original, update
        self.out: list[str] = []
        self.stack: set[tuple[str, str]] = set()

    def file(self) -> list[str]:
        if self.o.file.package != self.u.file.package:
            self.out.append(f"the package changed from {self.o.file.package or '(none)'!r} to "
                            f"{self.u.file.package or '(none)'!r}")
        prefix = f".{self.o.file.package}" if self.o.file.package else ""
        uprefix = f".{self.u.file.package}" if self.u.file.package else ""
        self.types(self.o.file.message_type, self.u.file.message_type, prefix, uprefix)
        return self.out

    def types(self, original, update, oprefix: str, uprefix: str) -> None:
        """Messages matched by name (enums: any change is allowed; map entries are fields' types)."""
        theirs = {m.name: m for m in update if not m.options.map_entry}
        for m in original:
            if m.options.map_entry:
                continue
            name = f"{oprefix}.{m.name}"
            if m.name not in theirs:
                self.out.append(f"message {name.lstrip('.')} was removed")
            else:
                self.message(m, theirs[m.name], name, f"{uprefix}.{m.name}")

    def message(self, o, u, oname: str, uname: str) -> None:
        key = (oname, uname)
        if key in self.stack:            # a recursive type already being compared
            return
        self.stack.add(key)
        try:
            self._message(o, u, oname, uname)
        finally:
            self.stack.discard(key)

    def _message(self, o, u, oname: str, uname: str) -> None:
        where = f"message {oname.lstrip('.')}"
        o_fields, o_oneof = _fields(o)
        u_fields, u_oneof = _fields(u)
        # a oneof gone with all its fields is a whole deletion (allowed), not fields taken from it
        gone_oneofs = {n for n in set(o_oneof.values()) if n not in set(u_oneof.values())
                       and not any(t in u_fields for t, g in o_oneof.items() if g == n)}
        for name in sorted(set(u_oneof.values())):
            groups = set()
            for tag in sorted(t for t, g in u_oneof.items() if g == name):
                if tag in o_oneof:
                    groups.add("oneof " + o_oneof[tag])
                elif tag in o_fields:
                    groups.add(f"field {tag}")
            if len(groups) > 1:          # data that set both would now lose one of them
                self.out.append(f"{where}: oneof {name} makes exclusive what was independent "
                                f"({', '.join(sorted(groups))})")
        for tag in sorted(set(o_fields) | set(u_fields)):
            of, uf = o_fields.get(tag), u_fields.get(tag)
            if uf is None:
                if tag in o_oneof:
                    if o_oneof[tag] not in gone_oneofs:
                        self.out.append(f"{where}: field {tag} ({of.name}) was removed from oneof {o_oneof[tag]}")
                elif of.label == LABEL_REQUIRED:
                    self.out.append(f"{where}: required field {tag} ({of.name}) was removed")
            elif of is None:
                if tag not in u_oneof and uf.label == LABEL_REQUIRED:
                    self.out.append(f"{where}: required field {tag} ({uf.name}) was added")
            else:
                self.field(f"{where}: field {tag} ({uf.name})", self.o.label(of), self.u.label(uf),
                           self.o.type_of(of), self.u.type_of(uf))
        self.types(o.nested_type, u.nested_type, oname, uname)

    def field(self, where: str, olabel, ulabel, otype: tuple, utype: tuple) -> None:
        okind, ukind = _kind(otype), _kind(utype)
        if okind != ukind:
            self.out.append(f"{where}: a {okind} became a {ukind} ({_show(otype)} -> {_show(utype)})")
        elif okind == "scalar":
            oname, uname = _scalar(otype), _scalar(utype)
            if _GROUPS.get(oname) != _GROUPS.get(uname):
                self.out.append(f"{where}: {_show(otype)} -> {_show(utype)} changes its wire encoding")
            elif olabel and ulabel and olabel != ulabel and _GROUPS.get(oname) != "length":
                self.out.append(f"{where}: its label changed from {olabel} to {ulabel} (a number's encoding "
                                f"differs)")
        elif okind == "map":
            self.field(where + " key", None, None, otype[1], utype[1])
            self.field(where + " value", None, None, otype[2], utype[2])
        else:
            self.named(where, otype[1], utype[1])

    def named(self, where: str, ofull: str, ufull: str) -> None:
        olocal, ulocal = self.o.local_name(ofull), self.u.local_name(ufull)
        if olocal != ulocal:
            self.out.append(f"{where}: its message type changed from {olocal} to {ulocal}")
            return
        ot, ut = self.o.types.get(ofull), self.u.types.get(ufull)
        if ot is None or ut is None or ot.is_enum or ut.is_enum:
            return
        oref, uref = self.o.references.get(ot.file), self.u.references.get(ut.file)
        if oref is not None and oref == uref:
            return                       # the same subject and version on both sides
        before = len(self.out)
        self.message(ot.proto, ut.proto, ofull, ufull)
        if len(self.out) > before:
            self.out.insert(before, f"{where}: its message type {olocal} changed incompatibly")


def _fields(m) -> tuple[dict[int, Any], dict[int, str]]:
    """Every field by number, and the (real, not proto3-optional) oneof of those in one."""
    by_tag = {f.number: f for f in m.field}
    oneof = {f.number: m.oneof_decl[f.oneof_index].name for f in m.field
             if f.HasField("oneof_index") and not f.proto3_optional}
    return by_tag, oneof


def _kind(t: tuple) -> str:
    return "scalar" if t[0] in ("scalar", "enum") else t[0]


def _scalar(t: tuple) -> str:
    return "enum" if t[0] == "enum" else t[1]


def _show(t: tuple) -> str:
    if t[0] == "map":
        return f"map<{_show(t[1])}, {_show(t[2])}>"
    return t[1].lstrip(".") if t[0] in ("enum", "message") else t[1]


def breaks(original, update) -> list[str]:
    """What makes the registry refuse ``update`` (the reader) after ``original`` (the writer):
    empty when it accepts it. Both are ``protobuf.Parsed``."""
    return _Diff(Side.of(original), Side.of(update)).file()
