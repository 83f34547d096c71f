"""Avro payloads: the schema parsed by fastavro (its references first), the datum read by
fastavro, and, when that fails, a walk of the bytes that says which byte and which field.

fastavro reads strings and bytes through the file object it is given, which hands back at
most the bytes there are: a length of 2 GiB in a 100-byte value allocates 100 bytes and
fails, it never allocates 2 GiB. The walk checks every length against what is left first.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from kdump.errors import DecodeError
from kdump.schemas import budget
from kdump.schemas.frame import read_zigzag
from kdump.schemas.store import Schema, SchemaStore

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
# Types whose decoded value is not JSON as it stands (a logical type, bytes, a NaN float).
_CONVERTED = {"bytes", "fixed", "float", "double"}
_FLOAT, _DOUBLE = struct.Struct("<f"), struct.Struct("<d")
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


class Parsed:
    """A writer schema ready to read with: fastavro's parsed form and its named types."""

    def __init__(self, schema: Any, named: dict[str, Any]) -> None:
        self.schema = schema
        self.named = named
        self.needs_conversion = _needs_conversion(schema, named, set())
        self.widths: dict[Any, int] = {}     # the budget walk's per-node answers
        # fastavro recurses as deep as a value nests and loops over every item a block claims:
        # a value of a schema with a type inside itself, or arrays or maps of items of no bytes,
        # is walked under the budgets first; so is one whose items could outgrow the output
        # limit (``ratio``: the most JSON bytes one byte of an item may give)
        recursive, items = _containers(schema, named)
        self.must_walk = recursive or any(_empty(i, self) for i in items)
        memo: dict[str, int] = {}
        self.ratio = max((budget.max_width(i, named, memo) + 6 for i in items), default=0)


def parse(s: Schema, store: SchemaStore) -> Parsed:
    """Parse an Avro schema and, before it, the schemas it references (depth first), under the
    depth and named-type budgets."""
    import fastavro

    named: dict[str, Any] = {}
    seen: set[int] = set()
    types = [0]

    def load(schema: Schema) -> Any:
        doc = budget.load_schema_json(schema.text, f"schema {schema.id}")
        types[0] += budget.count_named(doc)
        if types[0] > budget.MAX_NAMED_TYPES:
            raise budget.BudgetError("named types", f"schema {s.id} and its references define more than "
                                                    f"{budget.MAX_NAMED_TYPES} named types")
        try:
            return fastavro.parse_schema(doc, named_schemas=named)
        except RecursionError:
            raise budget.BudgetError("depth", f"schema {schema.id} nests too deeply to parse") from None
        except Exception as e:          # fastavro raises several types (SchemaParseException, ValueError...)
            raise DecodeError(f"schema {schema.id} does not parse: {type(e).__name__}: {_short(e)}") from None

    for _, target in store.references_of(s, s.id):
        if id(target) not in seen:          # one schema under two reference names: parsed once
            seen.add(id(target))
            load(target)
    return Parsed(load(s), named)


def decode(p: Parsed, data: bytes, pos: int) -> Any:
    """The datum at ``pos``, which must take every byte to the end; DecodeError saying where not."""
    value = raw(p, data, pos)
    return to_json(value) if p.needs_conversion else value


def raw(p: Parsed, data: bytes, pos: int) -> Any:
    """``decode`` as fastavro gives it: logical types as Python objects (Decimal, datetime...)."""
    from fastavro import schemaless_reader

    if p.must_walk or len(data) * p.ratio > budget.Limits.output_bytes:
        message = locate(p, data, pos)       # BudgetError past a budget
        if message is not None:
            raise DecodeError(message)
    fo = BytesIO(data)
    fo.seek(pos)
    try:
        value = schemaless_reader(fo, p.schema, None)
    except Exception as e:           # EOFError, IndexError, ValueError, UnicodeDecodeError... from the reader
        raise DecodeError(locate(p, data, pos) or f"Avro bytes do not match the schema: {_short(e)}") from None
    end = fo.tell()
    if end != len(data):
        raise DecodeError(locate(p, data, pos) or
                          f"the Avro datum ends at byte {end}, {len(data) - end} bytes before the value does")
    return value


def _containers(s: Any, named: dict[str, Any]) -> tuple[bool, list[Any]]:
    """(does a named type hold itself, the item schemas of the arrays and maps)."""
    state: dict[str, bool] = {}             # name -> finished (False: being looked at)
    stack: list[Any] = [s]
    recursive, items = False, []
    while stack:
        node = stack.pop()
        if node is _DONE:
            state[stack.pop()] = True
            continue
        if isinstance(node, list):
            stack += node
        elif isinstance(node, str):
            if node in named:
                if node in state:
                    recursive = recursive or not state[node]
                    continue
                state[node] = False
                stack += [node, _DONE, named[node]]
        elif isinstance(node, dict):
            t = node.get("type")
            if t in ("array", "map"):
                items.append(node.get("items" if t == "array" else "values"))
                stack.append(items[-1])
            elif t in ("record", "error"):
                stack += [f.get("type") for f in node.get("fields") or ()]
            elif isinstance(t, (list, dict, str)):
                stack.append(t)
    return recursive, items


_DONE = object()


# -- where the bytes and the schema part ---------------------------------------------------------

class _Mismatch(Exception):
    def __init__(self, pos: int, path: list[str], message: str) -> None:
        super().__init__(message)
        self.pos, self.path, self.message = pos, path, message


class _Past(Exception):
    def __init__(self, pos: int, path: list[str], name: str, message: str) -> None:
        super().__init__(message)
        self.pos, self.path, self.name, self.message = pos, path, name, message


def locate(p: Parsed, data: bytes, pos: int) -> str | None:
    """Walk the datum by the schema; say at which byte and field it stops matching (None: it
    matches, to the last byte). Past a budget (depth, items in a block, output): BudgetError."""
    try:
        end = _walk(p.schema, data, pos, [], p, 0, [0])
    except _Mismatch as m:
        field = ".".join(m.path) or "the top level"
        return f"Avro bytes do not match the schema at byte {m.pos} (field {field}): {m.message}"
    except _Past as m:
        field = ".".join(m.path[:8]) + ("..." if len(m.path) > 8 else "") or "the top level"
        raise budget.BudgetError(m.name, f"at byte {m.pos} (field {field}): {m.message}") from None
    if end != len(data):
        return f"the Avro datum ends at byte {end}, {len(data) - end} bytes before the value does"
    return None


def _long(data: bytes, pos: int, path: list[str]) -> tuple[int, int]:
    try:
        return read_zigzag(data, pos, "an Avro long")
    except DecodeError as e:
        raise _Mismatch(pos, path, e.message) from None


def _need(data: bytes, pos: int, n: int, path: list[str], what: str, at: int | None = None) -> int:
    """``n`` bytes from ``pos`` must be there (``at``: where the length that asks for them is)."""
    if n < 0:
        raise _Mismatch(pos if at is None else at, path, f"negative {what} length {n}")
    if n > len(data) - pos:
        raise _Mismatch(pos if at is None else at, path, f"{what} of {n} bytes, but only {len(data) - pos} are left")
    return pos + n


def _walk(s: Any, data: bytes, pos: int, path: list[str], p: Parsed, depth: int, spent: list[int]) -> int:
    """The end of the datum of ``s`` at ``pos``; ``spent``: the fewest JSON bytes written so far."""
    if depth > budget.MAX_DEPTH:
        raise _Past(pos, path, "depth", f"the value nests more than {budget.MAX_DEPTH} deep")
    named = p.named
    if isinstance(s, list):                                   # a union: the branch index first
        start = pos
        i, pos = _long(data, pos, path)
        if not 0 <= i < len(s):
            raise _Mismatch(start, path, f"union branch {i}, but the union has {len(s)}")
        return _walk(s[i], data, pos, path, p, depth + 1, spent)
    if isinstance(s, str):
        if s not in PRIMITIVES:
            return _walk(named[s], data, pos, path, p, depth + 1, spent)
        t = s
    else:
        t = s["type"]
        if isinstance(t, (list, dict)) or (t not in PRIMITIVES and t not in ("record", "error", "enum", "array",
                                                                              "map", "fixed")):
            return _walk(t, data, pos, path, p, depth + 1, spent)
    if t == "null":
        return pos
    if t == "boolean":
        if pos >= len(data):
            raise _Mismatch(pos, path, "a boolean past the end of the value")
        if data[pos] > 1:
            raise _Mismatch(pos, path, f"a boolean byte 0x{data[pos]:02x} (not 0 or 1)")
        return pos + 1
    if t in ("int", "long"):
        start = pos
        v, pos = _long(data, pos, path)
        if t == "int" and not INT_MIN <= v <= INT_MAX:
            raise _Mismatch(start, path, f"int {v} does not fit 32 bits")
        return pos
    if t == "float":
        return _need(data, pos, 4, path, "float")
    if t == "double":
        return _need(data, pos, 8, path, "double")
    if t in ("bytes", "string"):
        start = pos
        n, pos = _long(data, pos, path)
        end = _need(data, pos, n, path, t, start)
        _spend(spent, n, start, path)
        if t == "string":
            try:
                bytes(data[pos:end]).decode("utf-8")
            except UnicodeDecodeError as e:
                raise _Mismatch(pos + e.start, path, "a string that is not UTF-8") from None
        return end
    if t in ("record", "error"):
        for f in s["fields"]:
            pos = _walk(f["type"], data, pos, path + [f["name"]], p, depth + 1, spent)
        return pos
    if t == "enum":
        start = pos
        i, pos = _long(data, pos, path)
        if not 0 <= i < len(s["symbols"]):
            raise _Mismatch(start, path, f"enum index {i}, but {s.get('name')} has {len(s['symbols'])} symbols")
        return pos
    if t == "fixed":
        return _need(data, pos, s["size"], path, "fixed")
    # array or map: blocks of items, a negative count followed by the block's size in bytes
    item = s["items"] if t == "array" else s["values"]
    index = 0
    while True:
        start = pos
        count, pos = _long(data, pos, path)
        if count == 0:
            return pos
        if count < 0:
            count = -count
            _, pos = _long(data, pos, path)
        if count > len(data) - pos and not _empty(item, p):
            raise _Mismatch(start, path, f"{t} block of {count} items, but only {len(data) - pos} bytes are left")
        if count > budget.MAX_BLOCK_ITEMS:
            raise _Past(start, path, "items", f"{t} block of {count} items, more than {budget.MAX_BLOCK_ITEMS}")
        _spend(spent, count * (_width(item, p) + 1 + (4 if t == "map" else 0)), start, path)
        if _empty(item, p):         # items of no bytes: the block is read when it is counted
            index += count
            continue
        for _ in range(count):
            where = path + [f"[{index}]"]
            if t == "map":
                n, pos = _long(data, pos, where)
                pos = _need(data, pos, n, where, "map key")
            pos = _walk(item, data, pos, where, p, depth + 1, spent)
            index += 1


def _width(item: Any, p: Parsed) -> int:
    key = item if isinstance(item, str) else id(item)
    w = p.widths.get(key)
    if w is None:
        w = p.widths[key] = budget.min_width(item, p.named, {})
    return w


def _empty(item: Any, p: Parsed) -> bool:
    key = ("empty", item if isinstance(item, str) else id(item))
    e = p.widths.get(key)
    if e is None:
        e = p.widths[key] = int(_may_be_empty(item, p.named))
    return bool(e)


def _spend(spent: list[int], n: int, pos: int, path: list[str]) -> None:
    spent[0] += n
    if spent[0] > budget.Limits.output_bytes:
        raise _Past(pos, path, "output", f"the value decodes to more than {budget.Limits.output_bytes} bytes of "
                                         "JSON (raise the limit with --decode-limit)")


def _may_be_empty(s: Any, named: dict[str, Any], memo: dict[str, bool] | None = None) -> bool:
    """Does a datum of this type take no bytes (null, a record of nulls, a fixed of size 0)?
    Then an item count cannot be checked against the bytes left. ``memo``: each named type's
    answer (a type inside itself: no)."""
    memo = {} if memo is None else memo
    if isinstance(s, str):
        if s in named:
            if s not in memo:
                memo[s] = False
                memo[s] = _may_be_empty(named[s], named, memo)
            return memo[s]
        return s == "null"
    if isinstance(s, dict):
        t = s.get("type")
        if t in ("record", "error"):
            return all(_may_be_empty(f.get("type"), named, memo) for f in s.get("fields") or ())
        if t == "fixed":
            return s.get("size") == 0
        if isinstance(t, (str, dict)) and t not in ("enum", "array", "map"):
            return _may_be_empty(t, named, memo)
    return False


# -- JSON --------------------------------------------------------------------------------------

def _needs_conversion(s: Any, named: dict[str, Any], seen: set[str]) -> bool:
    if isinstance(s, list):
        return any(_needs_conversion(b, named, seen) for b in s)
    if isinstance(s, str):
        if s in PRIMITIVES:
            return s in _CONVERTED
        if s in seen:
            return False
        seen.add(s)
        return s in named and _needs_conversion(named[s], named, seen)
    if not isinstance(s, dict):
        return True
    if "logicalType" in s:
        return True
    t = s.get("type")
    if t in ("record", "error"):
        if s.get("name"):
            seen.add(s["name"])
        return any(_needs_conversion(f["type"], named, seen) for f in s["fields"])
    if t == "array":
        return _needs_conversion(s["items"], named, seen)
    if t == "map":
        return _needs_conversion(s["values"], named, seen)
    if t == "enum":
        return False
    if t == "fixed":         # bytes: base64 (the name "fixed" is no named type)
        return True
    return _needs_conversion(t, named, seen)


def to_json(v: Any) -> Any:
    """A decoded value as JSON: logical types exactly, as a person reads them (a decimal as its
    digits, a timestamp in ISO-8601 UTC to the microsecond, a date, a UUID), bytes in base64,
    a float that JSON cannot hold (NaN, infinities) as its name."""
    t = type(v)
    if t is dict:
        return {k: to_json(x) for k, x in v.items()}
    if t is list:
        return [to_json(x) for x in v]
    if v is None or t is str or t is int or t is bool:
        return v
    if t is float:
        return v if v - v == 0 else str(v).replace("inf", "Infinity").replace("nan", "NaN")
    if t is tuple:           # a union branch fastavro names: (name, value)
        return [v[0], to_json(v[1])]
    if t is bytes:
        import base64

        return base64.b64encode(v).decode("ascii")
    import datetime as dt
    import decimal

    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    return str(v)            # uuid.UUID and anything else a logical type gives


def _short(e: Exception) -> str:
    text = str(e) or type(e).__name__
    return text if len(text) <= 200 else text[:199] + "…"
