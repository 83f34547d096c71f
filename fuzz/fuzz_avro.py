"""Fuzz the Avro datum reader in C (avrojson.c: avro_json) against the compiled Python reader
(schemas/avro_text.py compile_reader): input ``a datum``, read under a schema with every type
and logical type the C program takes (records, unions, arrays, fixed, enums, decimals,
timestamps, dates, UUIDs). Where C writes a text, Python must write the same and end at the
same byte; None hands the datum back, which is always allowed."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import expect, outcome  # noqa: E402

from kdump.schemas import avro, avro_text  # noqa: E402
from kdump.schemas.store import Schema, SchemaStore  # noqa: E402

SCHEMA = {"type": "record", "name": "All", "namespace": "t", "fields": [
    {"name": "n", "type": "null"}, {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
    {"name": "l", "type": "long"}, {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"}, {"name": "s", "type": "string"},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B_q", "C"]}},
    {"name": "a", "type": {"type": "array", "items": ["null", "long", "string"]}},
    {"name": "next", "type": ["null", "All"], "default": None},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}},
    {"name": "decf", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18,
                              "scale": 3}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}}]}
PARSED = avro.parse(Schema(1, "AVRO", json.dumps(SCHEMA)), SchemaStore())
PROGRAM = avro_text.native_program(PARSED)
PYTHON = avro_text.compile_reader(PARSED)


def seeds() -> list[bytes]:
    """A few datums of the schema (fastavro writes them)."""
    import io

    import fastavro

    base = {"n": None, "b": True, "i": -5, "l": 1 << 40, "f": 1.5, "d": -0.25, "by": b"\x00\xff",
            "s": "h\u00e9 \"x\"\n", "fx": b"abcd",
            "e": "B_q", "a": [None, 7, "t"], "next": None, "dec": b"\x01\x02", "decf": b"\x00" * 8,
            "tsm": 1_700_000_000_000, "tsu": 1_700_000_000_000_000, "day": 19000,
            "u": "12345678-1234-5678-1234-567812345678"}
    out = []
    for value in (base, {**base, "next": {**base, "a": []}}, {**base, "s": "", "by": b"", "a": ["\U0001f389"] * 3}):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, PARSED.schema, value)
        out.append(buf.getvalue())
    return out


def python_text(data: bytes):
    try:
        return PYTHON(data, 0)
    except Exception as e:  # noqa: BLE001 - any refusal of Python's: C must not have written a text
        return ("refused", type(e).__name__)


def check(data: bytes) -> None:
    native = _common._accel.native()
    if native is None or PROGRAM is None or PYTHON is None:
        return
    got = native.avro_json(PROGRAM, data, 0, 1 << 30)
    if got is None:
        return
    expect(isinstance(got, tuple) and len(got) == 2 and 0 <= got[1] <= len(data), f"avro_json gave {got!r:.300}")
    reference = python_text(data)
    expect(got == reference, f"C writes {got!r:.300}, the Python reader {reference!r:.300}")
    json.loads(got[0])
    outcome(avro.decode, PARSED, data, 0)


if __name__ == "__main__":
    _common.main(check)
