"""The compiled Avro reader (``avro_text``, dump's fast path) writes exactly the JSON text of
the reference path: fastavro's value, ``avro.to_json``, ``json.dumps``."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

fastavro = pytest.importorskip("fastavro")

from kdump.schemas import avro, avro_text  # noqa: E402
from kdump.schemas.store import Schema, SchemaStore  # noqa: E402

EVERYTHING = {"type": "record", "name": "All", "namespace": "t", "fields": [
    {"name": "n", "type": "null"}, {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
    {"name": "l", "type": "long"}, {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"}, {"name": "s", "type": "string"},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B_q", "C"]}},
    {"name": "a", "type": {"type": "array", "items": ["null", "long", "string"]}},
    {"name": "m", "type": {"type": "map", "values": "double"}},
    {"name": "next", "type": ["null", "All"], "default": None},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}},
    {"name": "decf", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18,
                              "scale": 3}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}}]}

PARSED = avro.parse(Schema(1, "AVRO", json.dumps(EVERYTHING)), SchemaStore())
READER = avro_text.compile_reader(PARSED)

floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


def records(depth=0):
    return st.fixed_dictionaries({
        "n": st.none(), "b": st.booleans(), "i": st.integers(-2**31, 2**31 - 1), "l": st.integers(-2**63, 2**63 - 1),
        "f": floats, "d": st.floats(), "by": st.binary(max_size=10), "s": texts, "fx": st.binary(min_size=4, max_size=4),  # noqa: E501
        "e": st.sampled_from(["A", "B_q", "C"]), "a": st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1),
                                                                           texts), max_size=4),
        "m": st.dictionaries(texts, st.floats(), max_size=3),
        "next": st.none() if depth > 1 else st.one_of(st.none(), st.deferred(lambda: records(depth + 1))),
        "dec": st.decimals(min_value=-10**15, max_value=10**15, places=4, allow_nan=False),
        "decf": st.decimals(min_value=-10**14, max_value=10**14, places=3, allow_nan=False),
        "tsm": st.integers(-10**12, 10**13), "tsu": st.integers(-10**15, 10**16), "day": st.integers(-10**5, 10**6),
        "tm": st.integers(0, 86399999), "u": st.uuids().map(str)})


def encode(value: dict) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\x00\x00\x00\x00\x01")
    fastavro.schemaless_writer(buf, PARSED.schema, value)
    return buf.getvalue()


def reference(data: bytes) -> str:
    return json.dumps(avro.decode(PARSED, data, 5), separators=(",", ":"), ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(records())
def test_compiled_reader_writes_the_reference_text(value):
    data = encode(value)
    text, end = READER(data, 5)
    assert end == len(data)
    assert text == reference(data)


@settings(max_examples=200, deadline=None)
@given(records(), st.data())
def test_cut_or_changed_bytes_never_pass_silently(value, data):
    """Bytes the reference refuses make the fast path fall back (the same error), never a different value."""
    raw = bytearray(encode(value))
    i = data.draw(st.integers(5, len(raw) - 1))
    if data.draw(st.booleans()):
        raw = raw[:i]
    else:
        raw[i] = data.draw(st.integers(0, 255))
    raw = bytes(raw)
    try:
        ref = reference(raw)
    except Exception as e:                    # noqa: BLE001
        with pytest.raises(type(e)):
            avro_text.decode_text(PARSED, raw, 5)
    else:
        assert avro_text.decode_text(PARSED, raw, 5) == ref


def test_logical_types_read_exactly():
    value = {"n": None, "b": True, "i": 1, "l": 2, "f": 0.1, "d": float("nan"), "by": b"\x00\xff", "s": "é\n\"",
             "fx": b"abcd", "e": "B_q", "a": [None, 5, "x"], "m": {"k": float("-inf")}, "next": None,
             "dec": decimal.Decimal("-12.3400"), "decf": decimal.Decimal("7.250"),
             "tsm": dt.datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=dt.timezone.utc),
             "tsu": dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=dt.timezone.utc), "day": dt.date(2024, 2, 29),
             "tm": dt.time(12, 0, 0, 5000), "u": str(uuid.UUID(int=1))}
    text = avro_text.decode_text(PARSED, encode(value), 5)
    assert text == reference(encode(value))
    got = json.loads(text)
    assert (got["f"], got["d"], got["m"], got["by"]) == (0.10000000149011612, "NaN", {"k": "-Infinity"}, "AP8=")
    assert (got["dec"], got["decf"], got["tsm"], got["tsu"]) == ("-12.3400", "7.250", "2024-02-29T23:59:59.999000Z",
                                                                 "1969-12-31T23:59:59.000001Z")
    assert (got["day"], got["tm"], got["u"]) == ("2024-02-29", "12:00:00.005000", "00000000-0000-0000-0000-000000000001")  # noqa: E501


@pytest.mark.parametrize("tail", [b"\x01", b"\x02", b"\x7f"])
def test_a_varint_past_64_bits_reads_as_fastavro_reads_it(tail):
    """fastavro keeps 64 bits of a 10-byte varint; the fast paths hand such a value back to it."""
    from kdump import _accel

    parsed = avro.parse(Schema(2, "AVRO", '{"type":"record","name":"L","fields":[{"name":"l","type":"long"}]}'),
                        SchemaStore())
    data = b"\x00\x00\x00\x00\x02" + b"\xff" * 9 + tail
    want = json.dumps(avro.decode(parsed, data, 5), separators=(",", ":"))
    with _accel.using(False):
        assert avro_text.decode_text(avro.parse(Schema(2, "AVRO", '{"type":"record","name":"L","fields":'
                                                                 '[{"name":"l","type":"long"}]}'), SchemaStore()),
                                     data, 5) == want
    assert avro_text.decode_text(parsed, data, 5) == want
