"""avro_json (kdump/_speedups/avrojson.c) writes exactly the reference text (fastavro's value,
avro.to_json, json.dumps) or hands the record back (None); it never writes something else."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

fastavro = pytest.importorskip("fastavro")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "schemas"))

from test_schemas_avro_text import EVERYTHING, records  # noqa: E402

from kdump import _accel  # noqa: E402
from kdump.schemas import avro, avro_text  # noqa: E402
from kdump.schemas.store import Schema, SchemaStore  # noqa: E402

native = _accel.built()
pytestmark = pytest.mark.skipif(native is None or not hasattr(native, "avro_json"), reason="accelerator not built")

NO_MAP = {**EVERYTHING, "fields": [f for f in EVERYTHING["fields"] if f["name"] not in ("m", "tm")]}
PARSED = avro.parse(Schema(1, "AVRO", json.dumps(NO_MAP)), SchemaStore())
PROGRAM = avro_text.native_program(PARSED)


def encode(value: dict) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\x00\x00\x00\x00\x01")
    fastavro.schemaless_writer(buf, PARSED.schema, value)
    return buf.getvalue()


def reference(data: bytes) -> str:
    return json.dumps(avro.decode(PARSED, data, 5), separators=(",", ":"), ensure_ascii=False)


def strip(value: dict) -> dict:
    value = {k: v for k, v in value.items() if k not in ("m", "tm")}
    if value.get("next") is not None:
        value["next"] = strip(value["next"])
    return value


def test_program_is_built():
    assert PROGRAM is not None
    assert avro_text.native_program(avro.parse(Schema(2, "AVRO", json.dumps(EVERYTHING)), SchemaStore())) is None


@settings(max_examples=400, deadline=None)
@given(records())
def test_c_writes_the_reference_text(value):
    data = encode(strip(value))
    got = native.avro_json(PROGRAM, data, 5, 1 << 30)
    assert got is not None                   # canonical UUIDs, in-range dates: nothing to hand back
    assert got == (reference(data), len(data))


@settings(max_examples=300, deadline=None)
@given(records(), st.data())
def test_c_on_damaged_bytes_hands_back_or_agrees(value, data):
    raw = bytearray(encode(strip(value)))
    i = data.draw(st.integers(5, len(raw) - 1))
    if data.draw(st.booleans()):
        raw = raw[:i]
    else:
        raw[i] = data.draw(st.integers(0, 255))
    raw = bytes(raw)
    got = native.avro_json(PROGRAM, raw, 5, 1 << 30)
    if got is None:
        return
    text, end = got
    if end != len(raw):
        return                               # the caller checks the end
    assert text == reference(raw)


@settings(max_examples=200, deadline=None)
@given(records())
def test_c_stops_at_the_output_limit_the_reference_draws(value):
    """Exactly the reference's text fits a limit of its length; one byte less, C hands back."""
    data = encode(strip(value))
    text = reference(data)
    size = len(text.encode())
    assert native.avro_json(PROGRAM, data, 5, size) == (text, len(data))
    assert native.avro_json(PROGRAM, data, 5, size - 1) is None
