"""A writer schema compiled into Python that reads an Avro datum straight into its JSON text:
the fast path of ``dump --json --value-decoder avro``.

The reference is fastavro (``avro.decode``: its value, made JSON by ``avro.to_json``, then
``json.dumps``); the compiled reader gives the same text, byte for byte
(``tests/schemas/test_schemas_avro_text.py``), without building the value's objects. It
takes the common case only: any exception (bytes that do not match, a type it does not
compile) sends the record down the reference path, which says what is wrong. Logical types
go through fastavro's own conversions, so they read exactly as the reference reads them.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import datetime as _datetime
from decimal import Decimal as _Decimal
from json.encoder import encode_basestring
from typing import Any, Callable

from kdump.errors import KdumpError
from kdump.format.varint import read_varlong
from kdump.schemas import budget
from kdump.schemas.avro import PRIMITIVES, Parsed, to_json

_FLOAT, _DOUBLE = struct.Struct("<f").unpack_from, struct.Struct("<d").unpack_from
compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


class JsonText(str):
    """A decoded value already in its JSON text (compact, as ``json.dumps`` writes it)."""

    is_json_text = True


class Unsupported(Exception):
    pass


_long = read_varlong        # an error (too long, past 64 bits, past the end): the reference path decides


def _float_text(x: float) -> str:
    return repr(x) if x - x == 0 else compact_json(to_json(x))


def _logical_text(x: Any) -> str:
    """A logical type's value as its JSON text, as ``json.dumps(to_json(x))`` writes it."""
    t = type(x)
    if t is _datetime:
        return '"' + x.isoformat().replace("+00:00", "Z") + '"'
    if t is _Decimal:
        return '"' + format(x, "f") + '"'
    return compact_json(to_json(x))


def _b64(b: bytes) -> str:
    return '"' + base64.b64encode(b).decode("ascii") + '"'


class _Compiler:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"_long": _long, "_F": _FLOAT, "_D": _DOUBLE, "_esc": encode_basestring,
                                    "_ft": _float_text, "_b64": _b64, "_dumps": compact_json, "_lt": _logical_text,
                                    "IMIN": INT_MIN, "IMAX": INT_MAX, "_bud": [0]}
        self.funcs: dict[int, str] = {}
        self.by_name: dict[str, str] = {}
        self.n = 0

    def const(self, value: Any) -> str:
        self.n += 1
        name = f"_c{self.n}"
        self.env[name] = value
        return name

    def varint(self, v: str, out: list[str], ind: str) -> None:
        """Inline code reading a zigzag varint into ``v`` (no call for the common short ones)."""
        out += [f"{ind}{v} = d[p]; p += 1",
                f"{ind}if {v} > 127:",
                f"{ind}    {v} &= 127; sh = 7",
                f"{ind}    while True:",
                f"{ind}        b = d[p]; p += 1; {v} |= (b & 127) << sh",
                f"{ind}        if sh == 63 and b > 1: raise ValueError('varint')",   # past 64 bits: fastavro's
                f"{ind}        if b < 128: break",
                f"{ind}        sh += 7",
                f"{ind}        if sh > 63: raise ValueError('varint')",
                f"{ind}{v} = ({v} >> 1) ^ -({v} & 1)"]

    def func(self, s: Any) -> str:
        """The name of a function ``(d, p) -> (text, p)`` for schema node ``s``."""
        if isinstance(s, str) and s in self.named:
            if s in self.by_name:
                return self.by_name[s]
            s = self.named[s]
        key = id(s)
        if key in self.funcs:
            return self.funcs[key]
        self.n += 1
        name = f"_f{self.n}"
        self.funcs[key] = name
        if isinstance(s, dict) and s.get("name"):
            self.by_name[s["name"]] = name
        body: list[str] = []
        expr = self.node(s, body, "    ")
        self.lines += [f"def {name}(d, p):", *body, f"    return {expr}, p", ""]
        return name

    def node(self, s: Any, out: list[str], ind: str) -> str:
        """Append code reading ``s`` at p; return the expression of its JSON text."""
        self.n += 1
        v = f"v{self.n}"
        if isinstance(s, str) and s not in PRIMITIVES:
            out.append(f"{ind}{v}, p = {self.func(s)}(d, p)")
            return v
        if isinstance(s, list):
            out.append(f"{ind}{v}, p = {self.func_union(s)}(d, p)")
            return v
        t = s if isinstance(s, str) else s["type"]
        if isinstance(s, dict) and "logicalType" in s:
            return self.logical(s, out, ind, v)
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t not in PRIMITIVES and t not in
                                            ("record", "error", "enum", "array", "map", "fixed")):
            return self.node(t, out, ind)
        if t == "null":
            return '"null"'
        if t == "boolean":
            out.append(f"{ind}{v} = d[p]; p += 1")
            out.append(f"{ind}if {v} > 1: raise ValueError('boolean')")
            return f"('true' if {v} else 'false')"
        if t in ("int", "long"):
            self.varint(v, out, ind)
            if t == "int":
                out.append(f"{ind}if not IMIN <= {v} <= IMAX: raise ValueError('int')")
            return f"str({v})"
        if t == "float":
            out.append(f"{ind}{v} = _F(d, p)[0]; p += 4")
            return f"_ft({v})"
        if t == "double":
            out.append(f"{ind}{v} = _D(d, p)[0]; p += 8")
            return f"_ft({v})"
        if t in ("string", "bytes"):
            self.n += 1
            n = f"n{self.n}"
            self.varint(n, out, ind)
            out.append(f"{ind}if {n} < 0 or p + {n} > len(d): raise ValueError('length')")
            out.append(f"{ind}{v} = d[p:p + {n}]; p += {n}")
            return f"_esc({v}.decode())" if t == "string" else f"_b64({v})"
        if t == "fixed":
            size = int(s["size"])
            out.append(f"{ind}if p + {size} > len(d): raise ValueError('fixed')")
            out.append(f"{ind}{v} = d[p:p + {size}]; p += {size}")
            return f"_b64({v})"
        if t == "enum":
            syms = self.const(tuple(encode_basestring(x) for x in s["symbols"]))
            self.varint(v, out, ind)
            out.append(f"{ind}if {v} < 0: raise ValueError('enum')")
            return f"{syms}[{v}]"
        if t in ("record", "error"):
            pieces = []
            for i, f in enumerate(s["fields"]):
                pieces.append(repr(("{" if i == 0 else ",") + encode_basestring(f["name"]) + ":"))
                pieces.append(self.node(f["type"], out, ind))
            if not pieces:
                return "'{}'"
            return "(" + " + ".join(pieces) + " + '}')"
        if t in ("array", "map"):
            return self.loop(s, t, out, ind, v)
        raise Unsupported(f"type {t!r}")

    def func_union(self, branches: list) -> str:
        key = id(branches)
        if key in self.funcs:
            return self.funcs[key]
        self.n += 1
        name = f"_f{self.n}"
        self.funcs[key] = name
        body: list[str] = []
        self.varint("i", body, "    ")
        for i, b in enumerate(branches):
            sub: list[str] = []
            expr = self.node(b, sub, "        ")
            body.append(f"    {'if' if i == 0 else 'elif'} i == {i}:")
            body += sub or ["        pass"]
            body.append(f"        return {expr}, p")
        body.append("    raise ValueError('union branch')")
        self.lines += [f"def {name}(d, p):", *body, ""]
        return name

    def loop(self, s: dict, t: str, out: list[str], ind: str, v: str) -> str:
        self.n += 1
        name = f"_f{self.n}"
        self.funcs[id(s)] = name
        item: list[str] = []
        of = s["items"] if t == "array" else s["values"]
        expr = self.node(of, item, "            ")
        body = ["    acc = [] if %s else {}" % (t == "array"), "    while True:", "        n, p = _long(d, p)",
                "        if n == 0: break", "        if n < 0:", "            n = -n", "            _, p = _long(d, p)",
                "        if n > len(d) - p + 1 and n > 1000000: raise ValueError('count')",
                f"        _bud[0] -= n * {budget.min_width(of, self.named, {}) + 1}",     # before the block is read
                "        if _bud[0] < 0: raise ValueError('output budget')"]
        if t == "array" and not item and expr.startswith("'"):       # items of no bytes (null): no loop
            body += [f"        acc += [{expr}] * n"]
            expr = ""
        body.append("        for _ in range(n):" if expr else "        continue")
        if t == "map":
            body += ["            k, p = _long(d, p)",
                     "            if k < 0 or p + k > len(d): raise ValueError('key')",
                     "            key = _esc(d[p:p + k].decode()); p += k"]
        body += item
        if expr:
            body.append(f"            acc.append({expr})" if t == "array" else f"            acc[key] = {expr}")
        if t == "array":
            body.append("    return '[' + ','.join(acc) + ']', p")
        else:
            body.append("    return '{' + ','.join([k + ':' + x for k, x in acc.items()]) + '}', p")
        self.lines += [f"def {name}(d, p):", *body, ""]
        out.append(f"{ind}{v}, p = {name}(d, p)")
        return v

    def logical(self, s: dict, out: list[str], ind: str, v: str) -> str:
        from fastavro._read import LOGICAL_READERS

        base = s["type"]
        reader = LOGICAL_READERS.get(f"{base}-{s['logicalType']}") if isinstance(base, str) else None
        plain = {k: x for k, x in s.items() if k != "logicalType"}
        if reader is None:
            return self.node(plain if len(plain) > 1 else base, out, ind)
        self.n += 1
        r = f"r{self.n}"
        schema = self.const(s)
        conv = self.const(reader)
        if base in ("int", "long"):
            self.varint(r, out, ind)
        elif base in ("bytes", "string"):
            out.append(f"{ind}{r}, p = _long(d, p)")
            out.append(f"{ind}if {r} < 0 or p + {r} > len(d): raise ValueError('length')")
            out.append(f"{ind}{r}, p = d[p:p + {r}], p + {r}")
            if base == "string":
                out.append(f"{ind}{r} = {r}.decode()")
        elif base == "fixed":
            size = int(s["size"])
            out.append(f"{ind}if p + {size} > len(d): raise ValueError('fixed')")
            out.append(f"{ind}{r}, p = d[p:p + {size}], p + {size}")
        else:
            raise Unsupported(f"logical type on {base!r}")
        return f"_lt({conv}({r}, {schema}, {schema}))"


def compile_reader(p: Parsed) -> Callable[[bytes, int], tuple[str, int]] | None:
    """``(bytes, pos) -> (JSON text, end)`` for this schema, or None if it cannot be compiled."""
    c = _Compiler(p.named)
    try:
        top = c.func(p.schema) if not (isinstance(p.schema, str) and p.schema in PRIMITIVES) else None
        if top is None:
            body: list[str] = []
            expr = c.node(p.schema, body, "    ")
            c.lines += ["def _top(d, p):", *body, f"    return {expr}, p", ""]
            top = "_top"
        code = "\n".join(c.lines)
        exec(compile(code, f"<avro reader {p.schema.get('name') if isinstance(p.schema, dict) else p.schema}>",
                     "exec"), c.env)
    except (Unsupported, KeyError, TypeError, ValueError, RecursionError, SyntaxError, KdumpError):
        return None
    read, left = c.env[top], c.env["_bud"]

    def bounded(d: bytes, pos: int) -> tuple[str, int]:
        left[0] = budget.Limits.output_bytes       # a block's fewest bytes are charged before it is read
        return read(d, pos)

    return bounded


def decode_text(p: Parsed, data: bytes, pos: int) -> JsonText:
    """The datum's JSON text: the compiled reader when it reads the value to its last byte,
    else the reference path (which raises DecodeError saying where the bytes go wrong)."""
    from kdump.schemas import avro

    fast = p.__dict__.get("fast_reader", 0)
    if fast == 0:
        fast = p.__dict__["fast_reader"] = fast_reader(p)
    if fast is not None:
        try:
            text, end = fast(data, pos)
        except Exception:           # noqa: BLE001 - any failure: the reference path says what is wrong
            pass
        else:
            if end == len(data) and len(text) <= budget.Limits.output_bytes:
                return JsonText(text)
    return JsonText(budget.check_text(compact_json(avro.decode(p, data, pos)), pos))


# -- the C twin (kdump/_speedups/avrojson.c) ------------------------------------------------------

(OP_NULL, OP_BOOL, OP_INT, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING, OP_FIXED, OP_ENUM, OP_RECORD, OP_ARRAY,
 OP_UNION, OP_TS_MILLIS, OP_TS_MICROS, OP_DATE, OP_DEC_BYTES, OP_DEC_FIXED, OP_UUID) = range(19)
_PRIMITIVE_OPS = {"null": OP_NULL, "boolean": OP_BOOL, "int": OP_INT, "long": OP_LONG, "float": OP_FLOAT,
                  "double": OP_DOUBLE, "bytes": OP_BYTES, "string": OP_STRING}


def native_program(p: Parsed) -> list | None:
    """The program ``avro_json`` runs for this schema (nested lists, the op code first), or None
    when the schema has what only Python reads (maps, logical types the C code does not write)."""
    from fastavro._read import LOGICAL_READERS

    named: dict[str, list] = {}

    def build(s: Any, depth: int) -> list:
        if depth > 100:
            raise Unsupported("deep")
        if isinstance(s, list):
            return [OP_UNION, tuple(build(b, depth + 1) for b in s)]
        if isinstance(s, str):
            if s in _PRIMITIVE_OPS:
                return [_PRIMITIVE_OPS[s]]
            if s in named:
                return named[s]
            return build(p.named[s], depth + 1)
        t = s["type"]
        logical = s.get("logicalType")
        if logical is not None and isinstance(t, str) and f"{t}-{logical}" in LOGICAL_READERS:
            key = f"{t}-{logical}"
            if key == "long-timestamp-millis":
                return [OP_TS_MILLIS]
            if key == "long-timestamp-micros":
                return [OP_TS_MICROS]
            if key == "int-date":
                return [OP_DATE]
            if key == "string-uuid":
                return [OP_UUID]
            if key == "bytes-decimal":
                return [OP_DEC_BYTES, int(s.get("precision", 0)), int(s.get("scale", 0))]
            if key == "fixed-decimal":
                return [OP_DEC_FIXED, int(s["size"]), int(s.get("precision", 0)), int(s.get("scale", 0))]
            raise Unsupported(key)
        if isinstance(t, (list, dict)) or t in _PRIMITIVE_OPS:
            return build(t, depth + 1)
        if t in ("record", "error"):
            node: list = [OP_RECORD]
            named[s["name"]] = node          # a recursive reference finds the same list
            fields = s["fields"]
            prefixes = tuple((("{" if i == 0 else ",") + encode_basestring(f["name"]) + ":").encode()
                             for i, f in enumerate(fields))
            node += [prefixes, tuple(build(f["type"], depth + 1) for f in fields), b"}" if fields else b"{}"]
            return node
        if t == "enum":
            return [OP_ENUM, tuple(encode_basestring(x).encode() for x in s["symbols"])]
        if t == "fixed":
            return [OP_FIXED, int(s["size"])]
        if t == "array":
            return [OP_ARRAY, build(s["items"], depth + 1)]
        raise Unsupported(str(t))            # maps: duplicate keys follow dict rules, Python's

    try:
        return build(p.schema, 0)
    except (Unsupported, KeyError, TypeError, ValueError, KdumpError):
        return None


def fast_reader(p: Parsed) -> Callable[[bytes, int], tuple[str, int]] | None:
    """The quickest reader of this schema: C when built and the schema allows, backed by the
    compiled Python reader for what C hands back; None when neither can read it."""
    from kdump import _accel

    py = p.__dict__.get("text_reader", 0)
    if py == 0:
        py = p.__dict__["text_reader"] = compile_reader(p)
    c = _accel.native()
    program = native_program(p) if c is not None and hasattr(c, "avro_json") else None
    if program is None:
        return py
    avro_json = c.avro_json

    def read(d: bytes, pos: int) -> tuple[str, int]:
        got = avro_json(program, d, pos, budget.Limits.output_bytes)
        if got is None:
            if py is None:
                raise ValueError("handed back")
            return py(d, pos)
        return got

    return read
