"""Human-readable lines stay one line each: control characters in names and messages escaped.

A file name may hold any byte but ``/`` and NUL: a newline in it would split a one-line
error in two, an ESC would drive the terminal. Every line kdump writes for people (errors,
notes, verify and recover reports, index listings) passes its names and messages through
``printable``; JSON output keeps them exact (its encoder escapes them its own way).
"""

from __future__ import annotations

from kdump.words import CONTROL_ESCAPES as _ESCAPES


def printable(text: str) -> str:
    """``text`` with its control characters escaped (idempotent: an escape has none)."""
    # Every character CONTROL_ESCAPES names is one isprintable() refuses: most names need no translate.
    return text if text.isprintable() else text.translate(_ESCAPES)
