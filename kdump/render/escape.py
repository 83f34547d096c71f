"""Human-readable lines stay one line each: control characters in names and messages escaped.

A file name may hold any byte but ``/`` and NUL, and a client names its groups, topics,
transactional ids and header keys as it likes: a newline in one would split a one-line error
in two, an ESC (or U+009B) would drive the terminal (``ESC ] 0 ; … BEL`` sets its title), a
bidi control would show a name as another. Every line kdump writes for people (errors,
notes, reports, listings, table cells) passes its names and messages through ``printable``;
JSON output keeps them exact (its encoder escapes them its own way).

Behind those, a terminal gets two guards, so that a name a renderer forgot still reaches it
escaped: ``TerminalStream`` around stdout (text and JSON views), and ``console_class`` for
Rich (tables), which escapes every string and Text before Rich renders it. On a pipe or a
file stdout is not wrapped: the text view's ``--escape none`` writes Kafka's bytes there.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kdump.words import CONTROL_ESCAPES as _ESCAPES

# Lines of several lines (a cell, a block of text): every escape but the line break's.
_KEEP_LINES = {c: text for c, text in _ESCAPES.items() if c != 0x0A}
# JSON on a terminal: each such character as its JSON escape (the same data once parsed).
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in _ESCAPES if c != 0x0A}


def printable(text: str) -> str:
    """``text`` with its control characters escaped (idempotent: an escape has none)."""
    # Every character CONTROL_ESCAPES names is one isprintable() refuses: most names need no translate.
    return text if text.isprintable() else text.translate(_ESCAPES)


def printable_lines(text: str) -> str:
    """``printable`` for text of several lines: its line breaks kept."""
    return text if text.isprintable() else text.translate(_KEEP_LINES)


def printable_obj(obj: Any, keep: tuple[str, ...] = ()) -> Any:
    """A copy of a dict, list or tuple (nested) with every string in it ``printable`` (keys
    in ``keep`` left as they are): the names of a command's objects, for its text and table
    views (the --json view writes the objects themselves)."""
    if isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, dict):
        # keys too: a config's names are a client's (kdump's own keys are left as they are)
        return {printable_obj(k): v if k in keep else printable_obj(v, keep) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(printable_obj(v, keep) for v in obj)
    return obj


def printable_cell(cell: Any) -> Any:
    """A table cell for people: a string escaped (its line breaks kept), a Rich Text escaped
    with its styles kept; anything else as it is."""
    if isinstance(cell, str):
        return printable_lines(cell)
    plain = getattr(cell, "plain", None)
    if isinstance(plain, str) and not plain.isprintable() and plain.translate(_KEEP_LINES) != plain:
        return _escaped_text(cell)
    return cell


def printable_row(row: Any) -> tuple:
    return tuple(printable_cell(c) for c in row)


def _escaped_text(text: Any) -> Any:
    """A copy of a Rich Text with its characters escaped and each span moved to match."""
    from rich.text import Span, Text

    plain = text.plain
    starts = [0] * (len(plain) + 1)         # where each character starts in the escaped text
    pieces = []
    at = 0
    for i, c in enumerate(plain):
        starts[i] = at
        piece = _KEEP_LINES.get(ord(c), c)
        pieces.append(piece)
        at += len(piece)
    starts[len(plain)] = at
    out = Text("".join(pieces), style=text.style, justify=text.justify, overflow=text.overflow,
               no_wrap=text.no_wrap, end=text.end)
    out.spans = [Span(starts[s.start], starts[s.end], s.style) for s in text.spans]
    return out


class TerminalStream:
    """stdout on a terminal: every control, bidi and zero-width character written is escaped
    (``json``: as its JSON escape, so the line stays the same JSON), the line breaks kept."""

    # What would let bytes past: the binary buffer, a -j worker capture's write_bytes.
    _HIDDEN = frozenset({"buffer", "write_bytes"})

    def __init__(self, stream: Any, json: bool = False) -> None:
        self.raw = stream               # for Rich, which escapes what it is given itself
        self.json = json
        self._table = _JSON_ESCAPES if json else _KEEP_LINES

    def write(self, text: str) -> int:
        if not text.isprintable():
            text = text.translate(self._table)
        return self.raw.write(text)

    def around(self, stream: Any) -> TerminalStream:
        """The same guard around another stream (a -j worker's capture of this one)."""
        return TerminalStream(stream, self.json)

    def __getattr__(self, name: str) -> Any:
        if name in self._HIDDEN:
            raise AttributeError(name)
        return getattr(self.raw, name)


@cache
def console_class() -> type:
    """A Rich Console that escapes every string and Text it is given before it renders them
    (the guard of every table and styled line: Rich itself drops BEL and keeps ESC, which
    would leave an OSC sequence open on the terminal)."""
    from rich.console import Console

    class PrintableConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:
            return super().render_str(printable_lines(text), **kwargs)

        def render(self, renderable: Any, options: Any = None) -> Any:
            return super().render(printable_cell(renderable), options)

    return PrintableConsole
