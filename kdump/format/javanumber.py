"""Every number kdump reads from a text file (checkpoints, ``partition.metadata``,
``meta.properties``, the JSON of ``quorum-state`` and ``.kafka_cleanshutdown``) goes through
``java_int``: what Java's ``Integer.parseInt`` / ``Long.parseLong`` accept, in the range of
the field as Kafka reads it.

Java takes one optional sign and ASCII digits, leading zeros and all, and throws
``NumberFormatException`` past the type's range; its callers then report the line. Python's
``int()`` refuses a string of more than 4,300 digits with a ``ValueError`` of its own, so no
digit string reaches it before its length is known to fit: a 5,000-digit number is out of
range, not a crash.
"""

from __future__ import annotations

import re

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
_INT = re.compile(r"[+-]?[0-9]+")
_MAX_DIGITS = 19        # significant digits of the widest int64


def java_int(text: str, bounds: tuple[int, int] = INT32) -> int | None:
    """The value of ``text`` as ``parseInt`` (``bounds`` INT32) or ``parseLong`` (INT64) reads
    it; None where Java would throw (not a number, or past the range)."""
    if not _INT.fullmatch(text):
        return None
    sign = "-" if text[0] == "-" else ""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _MAX_DIGITS:
        return None
    value = int(sign + (digits or "0"))
    return value if bounds[0] <= value <= bounds[1] else None


def json_int(text: str) -> int:
    """``json.loads``'s ``parse_int``: an integer of the JSON text, refused (ValueError, which
    the caller reports located) past int64, the widest field Kafka reads from JSON."""
    value = java_int(text, INT64)
    if value is None:
        shown = text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"
        raise OverflowError(f"the number {shown} is past Kafka's int64 range")
    return value


def clip(line: str | None, limit: int = 120) -> str | None:
    """A line quoted in an error message: at most ``limit`` characters and a count of the rest
    (Kafka quotes the whole line; a 5,000-digit number is not worth 5,000 columns)."""
    if line is None or len(line) <= limit:
        return line
    return f"{line[:limit]}... ({len(line) - limit} more characters)"
