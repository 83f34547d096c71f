"""How keys, values and headers are shown: --encoding, --key/--value-decoder, internal decoders.

One ``PayloadView`` is built per command from its options and handed to every renderer
and to the export's rows, so text, table and JSON agree on what a value looks like.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from kdump.decoders import basic
from kdump.errors import KdumpError
from kdump.model import Record


# The text view is line-oriented: control characters in a value would break it (and a
# terminal), so they are shown escaped; --json carries the exact bytes.
_CONTROL_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}
_CONTROL_ESCAPES.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_ESCAPE_OF = {chr(c): text for c, text in _CONTROL_ESCAPES.items()}


def _escape_match(m: re.Match) -> str:
    return _ESCAPE_OF[m.group()]


def escape_controls(text: str) -> str:
    # A regex finds the few control characters; str.translate looks up every character.
    return _CONTROL.sub(_escape_match, text)


class PayloadView:
    def __init__(self, encoding: str = "utf8", key_decoder: str | None = None, value_decoder: str | None = None,
                 internal: str | None = None, escape: bool = True) -> None:
        self.encoding = encoding
        # False (--escape none): the text view prints keys and values as kafka-dump-log.sh
        # does, control characters raw (a newline in a value then breaks its record's line).
        self.escape = escape
        self.encode = basic.get(encoding)
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self._key_fn = basic.get(key_decoder) if key_decoder else None
        self._value_fn = basic.get(value_decoder) if value_decoder else None
        self.internal = internal
        self._internal_mod = None
        if internal is not None:
            from kdump.decoders import INTERNAL_DECODERS

            self._internal_mod = importlib.import_module(INTERNAL_DECODERS[internal])

    @property
    def plain(self) -> bool:
        """No decoder at all: the JSON writer may take its fast path."""
        return self._key_fn is None and self._value_fn is None and self._internal_mod is None

    def with_internal(self, internal: str | None) -> PayloadView:
        """The same view with another internal-topic decoder (chosen per partition by topic name)."""
        if internal == self.internal:
            return self
        return PayloadView(self.encoding, self.key_decoder, self.value_decoder, internal, self.escape)

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
        return out

    # -- text -------------------------------------------------------------------------------------

    def text(self, r: Record) -> tuple[str | None, str | None]:
        """(key text, payload text) for the DumpLogSegments-style record line."""
        if self._internal_mod is not None:
            try:
                return self._internal_mod.text(self._internal_mod.decode(r.key, r.value))
            except KdumpError as e:
                # DumpLogSegments' wording: in the key for coordinator records, in the payload
                # for keyless metadata-style records (the module says ERROR_IN_PAYLOAD).
                line = self._internal_mod.error_text(e, r.offset)
                if getattr(self._internal_mod, "ERROR_IN_PAYLOAD", False):
                    return None, line
                return line, None
        return self._one_text(r.key, self._key_fn), self._one_text(r.value, self._value_fn)

    def _one_text(self, data: bytes | None, fn) -> str | None:
        if data is None:
            return None
        if fn is not None:
            try:
                text = basic.as_text(fn(data))
            except KdumpError as e:
                # kafka-dump-log.sh dies here (BufferUnderflowException); say so and go on.
                return f"<decode failed: {e.message}>"
        else:
            text = self.encode(data)
        return escape_controls(text) if self.escape else text

    def short(self, data: bytes | None, width: int = 40) -> str:
        """A one-cell rendering for tables: escaped, cut to ``width`` characters."""
        if data is None:
            return "∅"
        text = self.encode(data)
        if self.encoding == "utf8" and not text.isprintable():
            # Escape only what cannot be shown; invalid UTF-8 stays the replacement character.
            text = "".join(c if c.isprintable() else _CONTROL_ESCAPES.get(ord(c)) or f"\\u{ord(c):04x}"
                           for c in text)
        return text if len(text) <= width else text[: width - 1] + "…"
