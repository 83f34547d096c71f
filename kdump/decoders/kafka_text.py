"""Names and JSON text as Kafka's tools print decoded records (DumpLogSegments, Jackson).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any


def snake_name(camel: str) -> str:
    """``RegisterBrokerRecord`` -> ``REGISTER_BROKER_RECORD`` (Kafka's enum naming)."""
    out = []
    for i, c in enumerate(camel):
        if c.isupper() and i and (camel[i - 1].islower() or camel[i - 1].isdigit()):
            out.append("_")
        out.append(c.upper())
    return "".join(out)


# -- JSON text as Kafka's Jackson-based converters print it ---------------------------------

def java_double(value: float) -> str:
    """``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE±n`` (shortest digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    exact = Decimal(repr(abs(value))).normalize()     # repr: shortest round-trip digits
    if 1e-3 <= abs(value) < 1e7:
        text = format(exact, "f")
        return sign + (text if "." in text else text + ".0")
    _, digits, exponent = exact.as_tuple()
    head, tail = str(digits[0]), "".join(map(str, digits[1:])) or "0"
    return f"{sign}{head}.{tail}E{len(digits) - 1 + exponent}"


_ESCAPE = re.compile(r"\\(u00[0-9a-f]{2}|.)")       # each backslash escape, left to right


def _upper_hex(m: re.Match) -> str:
    return "\\u" + m.group(1)[1:].upper() if m.group(1)[0] == "u" else m.group(0)


def json_string(s: str) -> str:
    """A JSON string as Jackson writes it: a control character without a short form as
    ``\\u001B``, in upper-case hex (json.dumps writes ``\\u001b``)."""
    text = json.dumps(s, ensure_ascii=False)
    return text if "\\u" not in text else _ESCAPE.sub(_upper_hex, text)


def to_json(obj: Any) -> str:
    """Compact one-line JSON (no spaces, non-ASCII kept, Java-style doubles)."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return java_double(obj)
    if isinstance(obj, str):
        return json_string(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(f"{json_string(str(k))}:{to_json(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in obj) + "]"
    raise TypeError(f"cannot render {type(obj).__name__} as JSON")


def strip_private(obj: Any) -> Any:
    """Drop kdump's own keys (``_unknown_tags`` and friends) for Kafka-identical text."""
    if isinstance(obj, dict):
        return {k: strip_private(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [strip_private(v) for v in obj]
    return obj
