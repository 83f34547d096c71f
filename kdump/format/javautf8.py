"""Bytes to text the way Java's ``new String(bytes, UTF_8)`` does (Kafka's StringDecoder).

Valid UTF-8 decodes the same everywhere. Invalid bytes do not: Python replaces each
maximal invalid subpart with U+FFFD, while Java's decoder judges a multi-byte sequence by
its lead byte and the bytes it expects, so ``ED B9 5E`` is one U+FFFD in Java and two in
Python. kafka-dump-log.sh prints values with Java's rule; the text view follows it.

The two rules differ only where ED is followed by A0-BF (an encoded surrogate: Java takes
the lead and what follows as one sequence); ED is never a continuation byte, so the bytes
between such places decode with Python's own (C-speed) replacement. tests/format/test_javautf8.py
holds this against Java itself on every short byte sequence.
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
