"""What one schema decoder may spend on one schema or one value: nesting depth, items in one
Avro block, bytes of decoded output, named types in one schema, time on one regex. Past any
of them the decoder stops with ``BudgetError``, which names the budget; the record is one
``schema_budget`` finding (or one error line in a dump) and the run goes on.

The output limit is the user's (``--decode-limit``); the others are fixed, far above what a
real schema or value needs, far below what hurts the machine.
"""

from __future__ import annotations

import json
from typing import Any

from kdump.errors import DecodeError

MAX_DEPTH = 200                 # nesting of a value (Avro walk levels) or of a schema document
MAX_SCHEMA_JSON_DEPTH = 256     # JSON nesting of a schema document (.avsc, a JSON Schema)
MAX_BLOCK_ITEMS = 1_000_000     # items in one Avro array/map block
MAX_NAMED_TYPES = 1_000         # records, enums and fixed types in one Avro schema, its references included
REGEX_TIMEOUT = 1.0             # seconds one JSON Schema pattern may take on one string
DEFAULT_OUTPUT_BYTES = 64 << 20


class Limits:
    """The output limit of this run (``--decode-limit`` sets it before any decoder runs)."""

    output_bytes = DEFAULT_OUTPUT_BYTES


class BudgetError(DecodeError):
    """A schema or a value went past one of the decoders' budgets (``budget`` names which)."""

    def __init__(self, budget: str, message: str, *, position: int | None = None) -> None:
        super().__init__(f"past the {budget} budget: {message}", position=position)
        self.budget, self.detail = budget, message


def output_error(size: int | str, where: str) -> BudgetError:
    return BudgetError("output", f"{where} decodes to {size} bytes of JSON, more than the "
                                 f"{Limits.output_bytes} the output limit allows (raise it with --decode-limit)")


def check_text(text: str, pos: int) -> str:
    """A decoded value's JSON text, if it is within the output limit."""
    if len(text) > Limits.output_bytes:
        raise output_error(len(text), f"the value at byte {pos}")
    return text


def json_depth(doc: Any) -> int:
    """How deeply a parsed JSON document nests (without recursion)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, d)
            stack += [(x, d + 1) for x in node if isinstance(x, (dict, list))]
    return deepest


def load_schema_json(text: str, what: str) -> Any:
    """A schema document parsed under the schema budgets (DecodeError: not JSON, too deep)."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise BudgetError("depth", f"{what} nests more than {MAX_SCHEMA_JSON_DEPTH} deep") from None
    except ValueError as e:
        raise DecodeError(f"{what} does not parse: {type(e).__name__}: {e}") from None
    if json_depth(doc) > MAX_SCHEMA_JSON_DEPTH:
        raise BudgetError("depth", f"{what} nests more than {MAX_SCHEMA_JSON_DEPTH} deep")
    return doc


def count_named(doc: Any) -> int:
    """The named types (record, error, enum, fixed) an Avro schema document defines."""
    n, stack = 0, [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in ("record", "error", "enum", "fixed"):
                n += 1
            stack += node.values()
        elif isinstance(node, list):
            stack += node
    return n


# The fewest JSON bytes of a logical type's text: "1970-01-01T00:00:00Z", "1970-01-01", a
# UUID, a decimal's "0".
_LOGICAL_WIDTH = {"timestamp-millis": 22, "timestamp-micros": 22, "date": 12, "uuid": 38, "decimal": 3}


def min_width(s: Any, named: dict[str, Any], memo: dict[str, int]) -> int:
    """The fewest JSON bytes a datum of Avro schema node ``s`` writes beyond what its own bytes
    pay for (a string's text, an array's items count on their own): a null's ``null``, a
    record's field names, an enum's symbol. The output budget charges ``count * (width + 1)``
    for a block before reading it, so a block of zero-byte items cannot outgrow the limit.
    ``memo`` keeps each named type's width (a type inside itself counts 0)."""
    if isinstance(s, list):
        return min((min_width(b, named, memo) for b in s), default=0)
    if isinstance(s, str):
        if s in ("null", "boolean"):
            return 4
        if s in ("bytes", "string"):
            return 2
        if s in named:
            if s not in memo:
                memo[s] = 0
                memo[s] = min_width(named[s], named, memo)
            return memo[s]
        return 1
    if not isinstance(s, dict):
        return 1
    t = s.get("type")
    logical = _LOGICAL_WIDTH.get(str(s.get("logicalType")))
    if logical is not None and isinstance(t, str):
        return logical
    if t in ("record", "error"):                       # {"a":x,"b":y}: 2, or 1 + (name + 4 + value) a field
        fields = s.get("fields") or ()
        return 1 + sum(len(str(f.get("name", ""))) + 4 + min_width(f.get("type"), named, memo)
                       for f in fields) if fields else 2
    if t == "enum":
        return min((len(str(x)) + 2 for x in s.get("symbols") or ()), default=2)
    if t in ("array", "map", "fixed"):
        return 2
    return min_width(t, named, memo)


def max_width(s: Any, named: dict[str, Any], memo: dict[str, int]) -> int:
    """The most JSON bytes a datum of ``s`` writes beyond 6 per byte of its own: field names,
    the longest enum symbol or union branch, a logical type's text (a timestamp's ISO form
    from one byte, a decimal's scale). With ``min_width`` it bounds a value without reading it:
    at most ``len(bytes) * (max_width(item) + 6)`` for items of at least one byte each. A type
    inside itself counts 0 here (such a schema is always walked)."""
    if isinstance(s, list):
        return max((max_width(b, named, memo) for b in s), default=0)
    if isinstance(s, str):
        if s in named:
            if s not in memo:
                memo[s] = 0
                memo[s] = max_width(named[s], named, memo)
            return memo[s]
        return 6
    if not isinstance(s, dict):
        return 6
    t = s.get("type")
    if "logicalType" in s:
        digits = s.get("precision", 0), s.get("scale", 0)
        return 40 + sum(d for d in digits if type(d) is int and d > 0)
    if t in ("record", "error"):
        return 2 + sum(len(str(f.get("name", ""))) + 4 + max_width(f.get("type"), named, memo)
                       for f in s.get("fields") or ())
    if t == "enum":
        return max((len(str(x)) * 6 + 2 for x in s.get("symbols") or ()), default=2)
    if t in ("array", "map", "fixed"):
        return 6
    return max_width(t, named, memo)
