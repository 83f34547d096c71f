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
# A record whose every byte is changed to every value: a test that only sees C hand back
# (None) passes whatever C does, so here every change the reference decodes to the end, with
# nothing non-canonical in it, must get C's text, equal to the reference's.
FIXED = {"n": None, "b": True, "i": -7, "l": 1 << 40, "f": 1.5, "d": -0.25, "by": b"\x00\xff", "s": "héllo",
         "fx": b"abcd", "e": "B_q", "a": [None, 3, "x"], "next": None, "dec": 0, "decf": 0,
         "tsm": 1_700_000_000_000, "tsu": 1_700_000_000_000_000, "day": 19_000,
         "u": "12345678-1234-5678-1234-567812345678"}


def test_c_writes_the_reference_text_of_damaged_bytes_it_can_read():
    import decimal

    data = encode({**FIXED, "dec": decimal.Decimal("1.2500"), "decf": decimal.Decimal("-3.125")})
    answered = 0
    for i in range(5, len(data)):
        for v in (0, 1, 0x30, 0x41, 0x7f, 0x80, 0xff, data[i] ^ 1):
            raw = data[:i] + bytes([v]) + data[i + 1:]
            got = native.avro_json(PROGRAM, raw, 5, 1 << 30)
            if got is None:
                continue
            text, end = got
            if end == len(raw):
                assert text == reference(raw), (i, v)
                answered += 1
    assert answered > len(data)          # most changes keep the record readable (a digit, a letter)
