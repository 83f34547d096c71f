"""Bytes to text the way Java's ``new String(bytes, UTF_8)`` does (Kafka's StringDecoder).

Valid UTF-8 decodes the same everywhere. Invalid bytes do not: Python replaces each
maximal invalid subpart with U+FFFD, while Java's decoder judges a multi-byte sequence by
its lead byte and the bytes it expects, so ``ED B9 5E`` is one U+FFFD in Java and two in
Python. kafka-dump-log.sh prints values with Java's rule; the text view follows it.

The two rules differ only where ED is followed by A0-BF (an encoded surrogate: Java takes
the lead and what follows as one sequence); ED is never a continuation byte, so the bytes
between such places decode with Python's own (C-speed) replacement. ``java_utf8_reference``
is Java's rule byte by byte, kept as the definition the fast path is tested against.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE_LEAD = re.compile(rb"\xed[\xa0-\xbf]")


def java_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    parts: list[str] = []
    pos = 0
    n = len(data)
    for m in _SURROGATE_LEAD.finditer(data, 0):
        at = m.start()
        if at < pos:
            continue
        parts.append(data[pos:at].decode("utf-8", "replace"))
        parts.append(REPLACEMENT)
        if at + 2 >= n:          # a truncated sequence at the end: Java stops there
            pos = n
            break
        # ED xx then a continuation byte: one (surrogate) character; else ED xx is one error.
        pos = at + 3 if _cont(data[at + 2]) else at + 2
    parts.append(data[pos:].decode("utf-8", "replace"))
    return "".join(parts)


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def _bad_3_2(b1: int, b2: int) -> bool:
    """A three-byte sequence already malformed at its second byte (overlong or no continuation)."""
    return (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2)


def _bad_4_2(b1: int, b2: int) -> bool:
    """A four-byte sequence already malformed at its second byte (overlong, past U+10FFFF, ...)."""
    return (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
            or not _cont(b2))


def java_utf8_reference(data: bytes) -> str:
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b1 = data[i]
        if b1 < 0x80:
            out.append(chr(b1))
            i += 1
        elif 0xC2 <= b1 <= 0xDF:
            if i + 1 < n and _cont(data[i + 1]):
                out.append(chr((b1 & 0x1F) << 6 | data[i + 1] & 0x3F))
                i += 2
            else:
                out.append(REPLACEMENT)
                i += 1
        elif 0xE0 <= b1 <= 0xEF:
            if i + 2 < n:
                b2, b3 = data[i + 1], data[i + 2]
                if _bad_3_2(b1, b2):
                    out.append(REPLACEMENT)
                    i += 1
                elif not _cont(b3):
                    out.append(REPLACEMENT)
                    i += 2
                else:
                    c = (b1 & 0x0F) << 12 | (b2 & 0x3F) << 6 | b3 & 0x3F
                    out.append(REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 3
            elif i + 1 < n and _bad_3_2(b1, data[i + 1]):
                out.append(REPLACEMENT)
                i += 1
            else:
                out.append(REPLACEMENT)        # a truncated sequence at the end: one for all
                break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 3 < n:
                b2, b3, b4 = data[i + 1], data[i + 2], data[i + 3]
                if _bad_4_2(b1, b2):
                    out.append(REPLACEMENT)
                    i += 1
                elif not _cont(b3):
                    out.append(REPLACEMENT)
                    i += 2
                elif not _cont(b4):
                    out.append(REPLACEMENT)
                    i += 3
                else:
                    out.append(chr((b1 & 0x07) << 18 | (b2 & 0x3F) << 12 | (b3 & 0x3F) << 6 | b4 & 0x3F))
                    i += 4
            elif b1 > 0xF4 or (i + 1 < n and _bad_4_2(b1, data[i + 1])):
                out.append(REPLACEMENT)
                i += 1
            else:
                out.append(REPLACEMENT)
                i += 2
                if i < n and not _cont(data[i]):
                    continue
                break
        else:
            out.append(REPLACEMENT)
            i += 1
    return "".join(out)
