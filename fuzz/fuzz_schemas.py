"""Fuzz the Schema Registry decoders under their budgets: Avro (fastavro behind the budget
walk, the compiled reader, the C ``avro_json``), JSON Schema (validation, $ref, patterns),
Protobuf, with hostile schemas and payloads.

Input: ``selector | rest``. The selector's low 3 bits pick the mode, the others a schema:
0 an Avro schema of ``HOSTILE_AVRO`` and ``rest`` its datum; 1 ``len (2 bytes) | Avro
schema text | datum``; 2 a JSON Schema of ``HOSTILE_JSON`` and ``rest`` the JSON value; 3
``len | JSON Schema text | value``; 4 the Protobuf schema and ``rest`` its message (message
indexes first); 5 ``rest`` read as a schema folder's ``.avsc``.

Oracle: only KdumpErrors escape (no RecursionError, MemoryError, TypeError...); a value's
JSON text is within the output limit (its value objects within it and 64 bytes per byte of
the datum: the walk counts the fewest bytes, not the digits); the text path (C or compiled Python) and the
reference path (fastavro) agree on every datum both read.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402

from kdump.errors import KdumpError  # noqa: E402
from kdump.schemas import budget, sources  # noqa: E402
from kdump.schemas.avro_text import compact_json  # noqa: E402
from kdump.schemas.decoder import SchemaDecoder  # noqa: E402
from kdump.schemas.store import Schema, SchemaStore  # noqa: E402

# Small budgets keep every input cheap; the budget logic is the same at any size. They are
# set around each input only: the test suite replays the regressions in its own process.
OUTPUT_BYTES, REGEX_TIMEOUT = 64 << 10, 0.05

_LIST = {"type": "record", "name": "L", "fields": [{"name": "n", "type": ["null", "L"]}]}
_TREE = {"type": "record", "name": "T", "fields": [{"name": "kids", "type": {"type": "array", "items": "T"}},
                                                   {"name": "tag", "type": {"type": "enum", "name": "Tag",
                                                                            "symbols": ["X" * 200, "Y"]}}]}
HOSTILE_AVRO = [
    {"type": "array", "items": "null"},
    {"type": "map", "values": "null"},
    {"type": "array", "items": {"type": "record", "name": "E", "fields": []}},
    {"type": "array", "items": {"type": "array", "items": ["null", "long"]}},
    {"type": "array", "items": {"type": "fixed", "name": "Z", "size": 0}},
    _LIST,
    _TREE,
    {"type": "record", "name": "V", "fields": [
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 1_000_000_000}},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 1000, "scale": 2}}]},
    {"type": "record", "name": "W", "fields": [
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
        {"name": "u", "type": ["null", "string", "bytes", "double", "boolean"]},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}}]},
]
HOSTILE_JSON = [
    {"$ref": "#"},
    {"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}, "$ref": "#/definitions/a"},
    {"$ref": "http://127.0.0.1:9/x.json"},
    {"$ref": "file:///etc/passwd"},
    {"type": "string", "pattern": "^(a|a)*$"},
    {"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}}, "additionalProperties": False},
    {"type": "array", "items": {"$ref": "#"}},
]
PROTO = 'syntax = "proto3";\nmessage M { repeated M kids = 1; string s = 2; map<string, M> m = 3; }\n'


def _decoder(kind: str, schema_type: str, texts: list[str]) -> SchemaDecoder:
    store = SchemaStore()
    for i, text in enumerate(texts, 1):
        store.add(Schema(i, schema_type, text))
    return SchemaDecoder(kind, store, validate=True)


AVRO = _decoder("avro", "AVRO", [json.dumps(s) for s in HOSTILE_AVRO])
JSON_SCHEMAS = _decoder("jsonschema", "JSON", [json.dumps(s) for s in HOSTILE_JSON])
PROTOBUF = _decoder("protobuf", "PROTOBUF", [PROTO])


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def _avro(dec: SchemaDecoder, data: bytes) -> None:
    results = []
    for as_text in (True, False):
        try:
            value = dec.decode(data, as_text)[0]
        except KdumpError:
            results.append(None)
            continue
        text = value if as_text else compact_json(value)
        # exact for the text; the value objects are held to the walk's count of the fewest
        # bytes, which a datum's own bytes can pass by what they spell (digits, escapes)
        slack = 0 if as_text else 64 * len(data)
        _common.expect(len(text) <= budget.Limits.output_bytes + slack, f"{len(text)} bytes of JSON, past the limit")
        results.append(str(text))
    if results[0] is not None and results[1] is not None:
        _common.expect(results[0] == results[1], f"the text path and fastavro differ: {results}")


def _one(dec: SchemaDecoder, data: bytes) -> None:
    try:
        dec.decode(data)
    except KdumpError:
        pass


def _given(data: bytes) -> tuple[str, bytes]:
    n = int.from_bytes(data[:2].ljust(2, b"\0"), "big")
    return data[2:2 + n].decode("utf-8", "replace"), data[2 + n:]


def check(data: bytes) -> None:
    saved = budget.Limits.output_bytes, budget.REGEX_TIMEOUT
    budget.Limits.output_bytes, budget.REGEX_TIMEOUT = OUTPUT_BYTES, REGEX_TIMEOUT
    try:
        _check(data)
    finally:
        budget.Limits.output_bytes, budget.REGEX_TIMEOUT = saved


def _check(data: bytes) -> None:
    if not data:
        return
    mode, pick, rest = data[0] & 7, data[0] >> 3, data[1:]
    if mode == 0:
        _avro(AVRO, framed(1 + pick % len(HOSTILE_AVRO), rest))
    elif mode == 1:
        text, body = _given(rest)
        _avro(_decoder("avro", "AVRO", [text]), framed(1, body))
    elif mode == 2:
        _one(JSON_SCHEMAS, framed(1 + pick % len(HOSTILE_JSON), rest))
    elif mode == 3:
        text, body = _given(rest)
        _one(_decoder("jsonschema", "JSON", [text]), framed(1, body))
    elif mode == 4:
        _one(PROTOBUF, framed(1, rest))
    elif mode == 5:
        store = SchemaStore()
        s = Schema(1, "AVRO", rest.decode("utf-8", "replace"))
        sources._name_avro(store, s, "fuzz.avsc")
        store.add(s)
        _avro(SchemaDecoder("avro", store), framed(1, b"\x02" * 8 + b"\x00"))


def seeds() -> list[bytes]:
    """A few inputs of each mode (the bombs of the budget tests among them)."""
    def zz(n: int) -> bytes:
        n, out = (n << 1) ^ (n >> 63), b""
        while True:
            b, n = n & 0x7F, n >> 7
            if not n:
                return out + bytes([b])
            out += bytes([b | 0x80])

    out = [bytes([i << 3]) + body for i, body in (
        (0, zz(1 << 62) + b"\0"), (0, zz(1_000_000) * 40 + b"\0"), (1, zz(-(1 << 62)) + zz(0) + b"\0"),
        (2, zz(3) + b"\0"), (3, zz(2) + zz(2) + b"\x02\x04" + zz(0) + b"\0"), (5, b"\x02" * 5000 + b"\0"),
        (6, zz(1) + zz(0) + b"\0" + b"\0"), (7, b"\0" * 20), (8, zz(1) + b"\x02a" + zz(1) + b"\x02b" + b"\0" * 12))]
    for text, body in (('{"type":' * 1500 + '"null"' + "}" * 1500, b""), ('"string"', b"\x06abc"),
                       (json.dumps({"type": "array", "items": {"type": "enum", "name": "E", "symbols": ["A" * 500]}}),
                        zz(1000) + b"\0" * 1001)):
        out.append(b"\x01" + len(text.encode()).to_bytes(2, "big") + text.encode() + body)
    out += [bytes([2 | i << 3]) + v for i, v in enumerate((b"1", b'"x"', b"1", b"1", b'"' + b"a" * 30 + b'!"',
                                                            b'{"' + b"a" * 30 + b'!": 1}', b"[[[[1]]]]"))]
    out.append(b"\x03" + (10).to_bytes(2, "big") + b'{"$ref":1}' + b"{}")
    out += [b"\x04\x00" + b"\x0a\x02\x0a\x00" * 8, b"\x05" + b'{"type": "record", "name": "R", "fields": []}']
    return out


if __name__ == "__main__":
    _common.main(check)
