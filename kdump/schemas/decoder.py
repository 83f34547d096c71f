"""What a command hands to ``PayloadView`` for --key-decoder/--value-decoder avro, protobuf,
jsonschema, connect or auto: bytes in, (decoded value, the schema it was read with) out.

Each schema is parsed once, on first use, and kept (a schema that does not parse keeps its
error, which every record framed with it then reports).
"""

from __future__ import annotations

from typing import Any

from kdump.errors import DecodeError, Fatal, MissingExtraError
from kdump.schemas import budget, connect, frame
from kdump.schemas.store import AVRO, JSON, PROTOBUF, Schema, SchemaStore

SCHEMA_DECODERS = ("avro", "protobuf", "jsonschema", "connect", "auto")
_TYPE_OF = {"avro": AVRO, "protobuf": PROTOBUF, "jsonschema": JSON}


class NotFramed(DecodeError):
    """``auto`` met bytes that are neither a known frame nor a Connect envelope: shown as they are."""

    show_raw = True


class UnknownSchemaId(DecodeError):
    def __init__(self, schema_id: int, gone: Schema | None = None) -> None:
        why = ""
        if gone is not None:
            why = f" (permanently deleted: it was {gone.subject} version {gone.version}, offset {gone.offset})"
        super().__init__(f"schema id {schema_id} is not in the schema store{why}")
        self.schema_id = schema_id


class SchemaDecoder:
    def __init__(self, kind: str, store: SchemaStore, validate: bool = False) -> None:
        assert kind in SCHEMA_DECODERS, kind
        self.kind = kind
        self.store = store
        self.validate = validate
        self._parsed: dict[int, Any] = {}
        self._fast: dict[bytes, tuple] = {}       # the 4 id bytes -> (compiled Avro reader, description, JsonText)

    def __call__(self, data: bytes) -> Any:
        return self.decode(data)[0]

    def decode(self, data: bytes, as_text: bool = False) -> tuple[Any, dict[str, Any] | None]:
        """(value, what the schema is: id, type, subject, version); DecodeError otherwise.
        ``as_text``: an Avro value may come as its JSON text (``avro_text.JsonText``)."""
        if as_text and data[:1] == b"\x00":
            hit = self._fast.get(data[1:frame.HEADER_SIZE])
            if hit is not None:              # an Avro schema seen before: its compiled reader, at once
                reader, info, json_text = hit
                try:
                    text, end = reader(data, frame.HEADER_SIZE)
                except Exception:            # noqa: BLE001 - the full path below says what is wrong
                    pass
                else:
                    if end == len(data) and len(text) <= budget.Limits.output_bytes:
                        return json_text(text), info
        kind = self.kind
        if kind == "connect" or (kind == "auto" and not frame.is_framed(data)):
            if kind == "auto" and not connect.looks_like_envelope(data):
                raise NotFramed("not a Schema Registry frame or a Connect envelope")
            value, name = connect.decode(data)
            return value, {"type": "CONNECT_JSON", **({"name": name} if name else {})}
        schema_id = frame.schema_id(data)
        s = self.store.get(schema_id)
        if s is None:
            if kind == "auto":
                raise NotFramed(f"schema id {schema_id} is not in the schema store")
            raise UnknownSchemaId(schema_id, self.store.hard_deleted.get(schema_id))
        if kind != "auto" and s.schema_type != _TYPE_OF[kind]:
            raise DecodeError(f"schema {schema_id} is {s.schema_type}, not {_TYPE_OF[kind]}")
        return self.decode_with(s, data, as_text), s.describe()

    def parsed(self, s: Schema) -> Any:
        p = self._parsed.get(s.id)
        if p is None:
            try:
                if s.schema_type == AVRO:
                    from kdump.schemas import avro as mod
                elif s.schema_type == PROTOBUF:
                    from kdump.schemas import protobuf as mod
                else:
                    from kdump.schemas import json_schema as mod
                p = mod.parse(s, self.store)
            except ImportError as e:
                missing = MissingExtraError(f"{s.schema_type} schemas need kdump's 'schemas' extra ({e})", "schemas")
                raise Fatal(missing) from None
            except DecodeError as e:
                p = e
            self._parsed[s.id] = p
        if isinstance(p, budget.BudgetError):
            raise budget.BudgetError(p.budget, p.detail)
        if isinstance(p, DecodeError):
            raise DecodeError(p.message)
        return p

    def decode_with(self, s: Schema, data: bytes, as_text: bool = False) -> Any:
        p = self.parsed(s)
        if s.schema_type == AVRO:
            if as_text:
                from kdump.schemas import avro_text

                text = avro_text.decode_text(p, data, frame.HEADER_SIZE)
                reader = p.__dict__.get("fast_reader")
                if reader is not None:
                    self._fast[data[1:frame.HEADER_SIZE]] = (reader, s.describe(), avro_text.JsonText)
                return text
            from kdump.schemas import avro

            return avro.decode(p, data, frame.HEADER_SIZE)
        if s.schema_type == PROTOBUF:
            from kdump.schemas import protobuf

            indexes, pos = frame.message_indexes(data)
            return protobuf.decode(p, data, indexes, pos)
        from kdump.schemas import json_schema

        return json_schema.decode(p, data, frame.HEADER_SIZE, self.validate)
