"""Protobuf payloads: descriptors compiled from the stored .proto text by protoc (grpcio-tools),
the message picked by the frame's message indexes, parsed by Google's protobuf runtime.

Each schema gets its own descriptor pool, so two versions of one file never clash. protoc
runs in a child process: its errors (a .proto that does not parse) come back as text.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any

from kdump.errors import DecodeError, Fatal, MissingExtraError
from kdump.schemas import budget
from kdump.schemas.store import Schema, SchemaStore

PROTOC_TIMEOUT = 60


class Parsed:
    def __init__(self, file_proto: Any, pool: Any) -> None:
        self.file_proto = file_proto            # the FileDescriptorProto of the schema's own file
        self.pool = pool
        self.references: dict[str, tuple[str, int]] = {}     # import path -> (subject, version)
        self._classes: dict[tuple[int, ...], Any] = {}
        self.ratios: dict[tuple[int, ...], int] = {}         # message indexes -> _ratio of that message type

    def message_class(self, indexes: list[int]) -> Any:
        key = tuple(indexes)
        cls = self._classes.get(key)
        if cls is None:
            from google.protobuf import message_factory

            types = self.file_proto.message_type
            names = [self.file_proto.package] if self.file_proto.package else []
            for depth, i in enumerate(indexes):
                if i >= len(types):
                    where = "the file" if depth == 0 else ".".join(names[1 if self.file_proto.package else 0:])
                    raise DecodeError(f"message index {i} (position {depth} of {indexes}): {where} has "
                                      f"{len(types)} message types")
                names.append(types[i].name)
                types = types[i].nested_type
            desc = self.pool.FindMessageTypeByName(".".join(names))
            cls = self._classes[key] = message_factory.GetMessageClass(desc)
        return cls


def _well_known_dir() -> str:
    import grpc_tools

    return os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


def parse(s: Schema, store: SchemaStore) -> Parsed:
    """Compile the schema's .proto file and the files it imports (its references)."""
    try:
        import grpc_tools  # noqa: F401  (protoc)
        from google.protobuf import descriptor_pb2, descriptor_pool
    except ImportError as e:
        raise Fatal(MissingExtraError(f"Protobuf schemas need kdump's 'schemas' extra ({e})", "schemas")) from None
    with tempfile.TemporaryDirectory(prefix="kdump-proto-") as tmp:
        main = f"kdump_schema_{s.id}.proto"
        files: dict[str, str] = {}
        refs: dict[str, tuple[str, int]] = {}
        # google/protobuf/*.proto are protoc's own (the well-known types), never in a store
        for ref, target in store.references_of(s, s.id, skip=lambda r: r.name.startswith("google/protobuf/")):
            files[ref.name] = target.text
            refs[ref.name] = (ref.subject, ref.version)
        for name, text in [*files.items(), (main, s.text)]:
            path = os.path.join(tmp, "src", name)
            if not os.path.abspath(path).startswith(os.path.join(tmp, "src") + os.sep):
                raise DecodeError(f"schema {s.id}: a reference name {name!r} that leaves its folder")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "set.pb")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{os.path.join(tmp, 'src')}", f"-I{_well_known_dir()}",
               "--include_imports", f"--descriptor_set_out={out}", main]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=PROTOC_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DecodeError(f"schema {s.id}: protoc did not run: {e}") from None
        if done.returncode != 0:
            why = " ".join(line.replace(main + ":", "line ").strip()
                           for line in (done.stderr or done.stdout).splitlines() if line.strip())
            raise DecodeError(f"schema {s.id} does not parse: {why[:300]}")
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    own = None
    for fp in fds.file:
        pool.Add(fp)
        if fp.name == main:
            own = fp
    assert own is not None
    parsed = Parsed(own, pool)
    parsed.references = refs
    return parsed


def message(p: Parsed, data: bytes, indexes: list[int], pos: int) -> Any:
    """The message object (Google's runtime) at ``pos``."""
    from google.protobuf.message import DecodeError as PbDecodeError

    cls = p.message_class(indexes)
    try:
        return cls.FromString(bytes(memoryview(data)[pos:]))
    except (PbDecodeError, RuntimeError, ValueError) as e:
        raise DecodeError(locate(cls.DESCRIPTOR, data, pos) or f"Protobuf bytes do not parse: {e}") from None


def decode(p: Parsed, data: bytes, indexes: list[int], pos: int) -> Any:
    """The message as protobuf's JSON mapping, within the output budget: a message whose bytes
    could spell more than the limit (``len * ratio``) is measured once built."""
    import json

    from google.protobuf.json_format import MessageToDict

    msg = message(p, data, indexes, pos)
    value = MessageToDict(msg, preserving_proto_field_name=True)
    ratio = p.ratios.get(tuple(indexes))
    if ratio is None:
        ratio = p.ratios[tuple(indexes)] = _ratio(msg.DESCRIPTOR)
    if (len(data) - pos) * ratio > budget.Limits.output_bytes:
        size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
        if size > budget.Limits.output_bytes:
            raise budget.output_error(size, f"the value at byte {pos}")
    return value


def _ratio(desc: Any) -> int:
    """The most JSON bytes one byte of a message of this type can give (a field's name for
    its 2-byte key and value, an enum's name for its one byte, 6 for a string's byte)."""
    longest, seen, stack = 6, set(), [desc]
    while stack:
        d = stack.pop()
        if d.full_name in seen:
            continue
        seen.add(d.full_name)
        for f in d.fields:
            longest = max(longest, len(f.name) + 8)
            if f.enum_type is not None:
                longest = max(longest, max((len(v.name) + 2 for v in f.enum_type.values), default=0))
            if f.message_type is not None:
                stack.append(f.message_type)
    return longest


# Wire types: 0 varint, 1 64-bit, 2 length-delimited, 3/4 group start/end (deprecated), 5 32-bit.
def locate(desc: Any, data: bytes, pos: int) -> str | None:
    """Walk the top-level fields on the wire; the first byte where they stop making sense."""
    end = len(data)
    while pos < end:
        start = pos
        key, pos = _uvarint(data, pos)
        if key is None:
            return f"Protobuf bytes do not parse at byte {start}: a field key runs past the end"
        number, wire = key >> 3, key & 7
        field = desc.fields_by_number.get(number)
        name = field.name if field is not None else f"#{number}"
        if number == 0:
            return f"Protobuf bytes do not parse at byte {start}: field number 0"
        if wire == 0:
            v, pos = _uvarint(data, pos)
            if v is None:
                return f"Protobuf bytes do not parse at byte {start} (field {name}): a varint runs past the end"
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > end:
                return f"Protobuf bytes do not parse at byte {start} (field {name}): a fixed value runs past the end"
        elif wire == 2:
            n, pos = _uvarint(data, pos)
            if n is None or n > end - pos:
                return (f"Protobuf bytes do not parse at byte {start} (field {name}): a length of {n} bytes, "
                        f"{end - pos} are left")
            pos += n
        elif wire in (3, 4):
            return None            # groups: leave the message to the runtime
        else:
            return f"Protobuf bytes do not parse at byte {start} (field {name}): wire type {wire} does not exist"
    return None


def _uvarint(data: bytes, pos: int) -> tuple[int | None, int]:
    shift = n = 0
    while pos < len(data) and shift < 70:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7
    return None, pos
