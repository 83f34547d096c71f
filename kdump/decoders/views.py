"""How keys, values and headers are shown: --encoding, --key/--value-decoder, internal decoders.

One ``PayloadView`` is built per command from its options and handed to every renderer
and to the export's rows, so text, table and JSON agree on what a value looks like.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

from kdump.decoders import plain
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine
from kdump.errors import KdumpError, UnknownSchemaError
from kdump.model import Record
from kdump.words import CONTROL_ESCAPES

# The text view is line-oriented: control characters in a value would break it (and a
# terminal), so they are shown escaped as in every line for people (words.CONTROL_ESCAPES),
# newline, carriage return and tab by their usual names; --json carries the exact bytes.
_CONTROL_ESCAPES = {**CONTROL_ESCAPES, 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_CONTROL = re.compile("[" + "".join(f"\\u{c:04x}" for c in sorted(_CONTROL_ESCAPES)) + "]")
_ESCAPE_OF = {chr(c): text for c, text in _CONTROL_ESCAPES.items()}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _escape_match(m: re.Match) -> str:
    return _ESCAPE_OF[m.group()]


def escape_controls(text: str) -> str:
    # A regex finds the few control characters; str.translate looks up every character.
    return _CONTROL.sub(_escape_match, text)


class PayloadView:
    def __init__(self, encoding: str = "utf8", key_decoder: str | None = None, value_decoder: str | None = None,
                 internal: str | None = None, schemas: dict[str, Any] | None = None,
                 escape: bool = True, kafka: KafkaLine = NEWEST_LINE, notices: tuple[str, ...] = ()) -> None:
        self.encoding = encoding
        # Lines the text view prints after a segment's "Dumping" line when no internal decoder
        # is at work (KafkaLine.decoder_notices: a deprecated decoder class named).
        self.notices = notices
        # The Kafka line whose DumpLogSegments text the text view prints (--kafka-version).
        self.kafka = kafka
        # False (--escape none): the text view prints keys and values as kafka-dump-log.sh
        # does, control characters raw (a newline in a value then breaks its record's line).
        self.escape = escape
        self.encode = plain.get(encoding)
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        # Schema Registry decoders (kdump.schemas.decoder.SchemaDecoder, made by the command):
        # "key"/"value" -> an object whose decode(bytes) gives (value, schema description).
        self.schemas = schemas or {}
        self._key_schema = self.schemas.get("key")
        self._value_schema = self.schemas.get("value")
        # (side, decoder, the side's index in a Record: key 3, value 4)
        self._sides = tuple((side, dec, i) for side, dec, i in (("key", self._key_schema, 3),
                                                                 ("value", self._value_schema, 4)) if dec is not None)
        self._info_texts: dict[int, str] = {}
        self._info_keep: list[Any] = []         # keeps the ids of _info_texts' keys unique
        self._key_fn = plain.get(key_decoder) if key_decoder and self._key_schema is None else None
        self._value_fn = plain.get(value_decoder) if value_decoder and self._value_schema is None else None
        self.internal = internal
        # (offset, UnknownSchemaError) of each record the internal decoder had no schema for,
        # gathered where a command asks (dump sets a list, and takes them batch by batch).
        self.unknown: list[tuple[int, UnknownSchemaError]] | None = None
        self._internal_mod = None
        if internal is not None:
            from kdump.decoders import INTERNAL_DECODERS

            self._internal_mod = importlib.import_module(INTERNAL_DECODERS[internal])

    @property
    def plain(self) -> bool:
        """No decoder at all: the JSON writer may take its fast path."""
        return self._key_fn is None and self._value_fn is None and self._internal_mod is None and not self.schemas

    def with_internal(self, internal: str | None) -> PayloadView:
        """The same view with another internal-topic decoder (chosen per partition by topic name)."""
        if internal == self.internal:
            return self
        return PayloadView(self.encoding, self.key_decoder, self.value_decoder, internal, self.schemas,
                           self.escape, self.kafka, self.notices)

    # -- JSON -----------------------------------------------------------------------------------

    def record_extras(self, r: Record) -> dict[str, Any]:
        """Fields a decoder adds to a record's JSON object."""
        out: dict[str, Any] = {}
        if self._key_fn is not None and r.key is not None:
            try:
                out["key_decoded"] = self._key_fn(r.key)
            except KdumpError as e:
                out["key_decode_error"] = e.message
        if self._value_fn is not None and r.value is not None:
            try:
                out["value_decoded"] = self._value_fn(r.value)
            except KdumpError as e:
                out["value_decode_error"] = e.message
        if self._internal_mod is not None and r.control is None:
            try:
                out["decoded"] = self._internal_mod.decode(r.key, r.value)
            except KdumpError as e:
                out["decode_error"] = e.message
                if isinstance(e, UnknownSchemaError) and self.unknown is not None:
                    self.unknown.append((r.offset, e))
        elif self.schemas and r.control is None:
            self._schema_extras(r, out)
        return out

    def _schema_extras(self, r: Record, out: dict[str, Any], as_text: bool = False) -> None:
        """``decoded``: {key, value, key_schema, value_schema}; ``decode_error``: why one did not.
        ``as_text``: a value may be its JSON text already (``is_json_text``)."""
        decoded: dict[str, Any] = {}
        errors = []
        for side, dec, data in (("key", self._key_schema, r.key), ("value", self._value_schema, r.value)):
            if dec is None or data is None:
                continue
            try:
                decoded[side], info = dec.decode(data, as_text)
            except KdumpError as e:
                if not getattr(e, "show_raw", False):
                    errors.append(f"{side}: {e.message}")
                continue
            decoded[side + "_schema"] = info
        if decoded:
            out["decoded"] = decoded
        if errors:
            out["decode_error"] = "; ".join(errors)

    def extras_json(self, r: Record) -> str:
        """``record_extras`` as JSON object members (``,"decoded":{...}``), or ""; a decoder's
        value that is JSON text already goes in as it is (the hot path of dump --json)."""
        if not (self.schemas and self._internal_mod is None and r.control is None):
            extras = self.record_extras(r)
            return "," + _dumps(extras)[1:-1] if extras else ""
        members = []
        errors = []
        texts = self._info_texts
        for side, dec, i in self._sides:
            data = r[i]
            if data is None:
                continue
            try:
                value, info = dec.decode(data, True)
            except KdumpError as e:
                if not getattr(e, "show_raw", False):
                    errors.append(f"{side}: {e.message}")
                continue
            text = value if type(value) is not dict and getattr(value, "is_json_text", False) else _dumps(value)
            info_text = texts.get(id(info))
            if info_text is None:           # the decoder hands out one description per schema
                info_text = texts[id(info)] = _dumps(info)
                self._info_keep.append(info)
            members.append(f'"{side}":{text},"{side}_schema":{info_text}')
        out = ',"decoded":{' + ",".join(members) + "}" if members else ""
        if errors:
            out += ',"decode_error":' + _dumps("; ".join(errors))
        return out

    # -- text -------------------------------------------------------------------------------------

    def text(self, r: Record) -> tuple[str | None, str | None]:
        """(key text, payload text) for the DumpLogSegments-style record line."""
        if self._internal_mod is not None:
            try:
                decoded = self._internal_mod.decode(r.key, r.value, self.kafka)
            except KdumpError as e:
                if isinstance(e, UnknownSchemaError) and self.unknown is not None:
                    self.unknown.append((r.offset, e))
                return self._error_text(e, r)
            try:
                key, payload = self._internal_mod.text(decoded, self.kafka)
            except KdumpError as e:         # what the --kafka-version line's classes cannot read
                return self._error_text(e, r)
            if not self.escape:
                return key, payload
            # JSON escapes C0 controls but neither C1 nor bidi nor zero-width characters, which
            # a client's names (a group id, a topic) carry as they are.
            return (None if key is None else escape_controls(key),
                    None if payload is None else escape_controls(payload))
        return (self._one_text(r.key, self._key_fn, self._key_schema),
                self._one_text(r.value, self._value_fn, self._value_schema))

    def _error_text(self, e: KdumpError, r: Record) -> tuple[str | None, str | None]:
        # DumpLogSegments' wording: in the key for coordinator records, in the payload for
        # keyless metadata-style records (the module says ERROR_IN_PAYLOAD).
        line = self._internal_mod.error_text(e, r.offset)
        if getattr(self._internal_mod, "ERROR_IN_PAYLOAD", False):
            return None, line
        return line, None

    def _one_text(self, data: bytes | None, fn, schema=None) -> str | None:
        if data is None:
            return None
        if schema is not None:
            try:
                value = schema.decode(data, True)[0]
                if getattr(value, "is_json_text", False) and value[:1] == '"':
                    value = json.loads(value)            # a string prints as it is, as other decoders do
                return escape_controls(plain.as_text(value))
            except KdumpError as e:
                if getattr(e, "show_raw", False):       # auto: not a frame it knows; the bytes as they are
                    return escape_controls(self.encode(data))
                return f"<decode failed: {e.message}>"
        if fn is not None:
            try:
                text = plain.as_text(fn(data))
            except KdumpError as e:
                # kafka-dump-log.sh dies here (BufferUnderflowException); say so and go on.
                return f"<decode failed: {e.message}>"
        else:
            text = self.encode(data)
        return escape_controls(text) if self.escape else text

    def cells(self, r: Record, key_width: int, value_width: int) -> tuple[str, str]:
        """(key, value) cells of a table row, decoded as the text view decodes them (an internal
        topic's records, --key-decoder/--value-decoder): a table on a terminal shows what a
        pipe shows, cut to the widths."""
        if self._internal_mod is None and self._key_fn is None and self._value_fn is None:
            return self.short(r.key, key_width, "key"), self.short(r.value, value_width, "value")
        key, value = self.text(r)
        return _cut("∅" if key is None else key, key_width), _cut("∅" if value is None else value, value_width)

    def short(self, data: bytes | None, width: int = 40, side: str | None = None) -> str:
        """A one-cell rendering for tables: escaped, cut to ``width`` characters (``side``:
        "key" or "value", decoded as the text view decodes it)."""
        if data is None:
            return "∅"
        schema = self.schemas.get(side) if side else None
        if schema is not None:
            text = self._one_text(data, None, schema)
            return text if len(text) <= width else text[: width - 1] + "…"
        text = self.encode(data)
        if self.encoding == "utf8" and not text.isprintable():
            # Escape only what cannot be shown; invalid UTF-8 stays the replacement character.
            text = "".join(c if c.isprintable() else _CONTROL_ESCAPES.get(ord(c)) or f"\\u{ord(c):04x}"
                           for c in text)
        return text if len(text) <= width else text[: width - 1] + "…"


def _cut(text: str, width: int) -> str:
    text = escape_controls(text)
    return text if len(text) <= width else text[: width - 1] + "…"
