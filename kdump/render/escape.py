"""Human-readable lines stay one line each: control characters in names and messages escaped.

A file name may hold any byte but ``/`` and NUL: a newline in it would split a one-line
error in two, an ESC would drive the terminal. Every line kdump writes for people (errors,
notes, verify and recover reports, index listings) passes its names and messages through
``printable``; JSON output keeps them exact (its encoder escapes them its own way).
"""

from __future__ import annotations

# C0 controls (TAB, LF, CR, ESC...), DEL and the C1 controls, as \xNN like Python's
# backslashreplace (which already shows the bytes of a name that is not UTF-8); the line
# and paragraph separators too, which some terminals and editors break lines at.
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_ESCAPES.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


def printable(text: str) -> str:
    """``text`` with its control characters escaped (idempotent: an escape has none)."""
    # Every character _ESCAPES names is one isprintable() refuses: most names need no translate.
    return text if text.isprintable() else text.translate(_ESCAPES)
