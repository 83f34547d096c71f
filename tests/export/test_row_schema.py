"""One row schema: every writer of rows follows ``kdump.model``'s declaration.

``FIELD_TYPES`` and the layouts beside it (BATCH_FIELDS, RECORD_FIELDS, LEGACY_RECORD_FIELDS,
HEADER_FIELDS) are the source. Checked against them on the broker-written fixtures: the C
NDJSON writer (``kdump._speedups.native.json_batch_line``), the Python writer (``kdump.export.ndjson``),
``to_dict``, export's NDJSON lines and its Arrow columns (record and batch rows): the same
keys, in the same order, with values of the declared types; and where the Arrow rows and
the JSON objects share a field, the same values.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

import pytest

from kdump import _accel
from kdump.decoders.views import PayloadView
from kdump.errors import KdumpError
from kdump.export import ndjson
from kdump.export.columns import batch_rows, record_batches
from kdump.export.schema import BATCH_COLUMNS, JSON_COLUMNS, RECORD_COLUMNS, arrow_schema, arrow_type
from kdump.export.slice_rows import json_items
from kdump.export.slices import plan
from kdump.export.write import joined
from kdump.format.walk import Walker, decode_records
from kdump.model import (
    BATCH_FIELDS,
    FIELD_TYPES,
    HEADER_FIELDS,
    HEADERS_TYPE,
    JSON_NULLABLE,
    LEGACY_RECORD_FIELDS,
    RECORD_FIELDS,
    Batch,
    Record,
)
from support.run import FIXTURES

# Broker-written logs: every codec, legacy v0/v1 messages, transactions and their control
# batches, KRaft control records, headers.
SOURCES = [FIXTURES / "real", FIXTURES / "broker"]
LOGS = sorted(p for d in SOURCES for p in d.rglob("*.log"))
ENCODINGS = {"base64": 0, "hex": 1, "utf8": 2}
RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "bigint": (-(1 << 63), (1 << 63) - 1),
          "timestamp": (-(1 << 63), (1 << 63) - 1)}


PER_LOG = 300                # batches of each log: the big ones repeat themselves


def _batches():
    """(file, batch, records or None) of every fixture log, read once for all the tests."""
    out = []
    for path in LOGS:
        buf = path.read_bytes()
        try:
            for _, b in zip(range(PER_LOG), Walker(buf)):
                try:
                    out.append((path, b, decode_records(buf, b)))
                except KdumpError:
                    out.append((path, b, None))
        except KdumpError:
            continue
    return out


BATCHES = _batches()


def check_value(name: str, value) -> None:
    """``value`` is what the schema declares ``name`` to be, in JSON."""
    kind = FIELD_TYPES[name]
    if value is None:
        assert name in JSON_NULLABLE, f"{name} is null"
    elif kind in RANGES:
        assert type(value) is int and RANGES[kind][0] <= value <= RANGES[kind][1], (name, value)
    elif kind == "boolean":
        assert type(value) is bool, (name, value)
    elif kind in ("string", "binary"):
        assert type(value) is str, (name, value)
    elif kind == HEADERS_TYPE:
        assert type(value) is list, (name, value)
        for h in value:
            assert list(h) == list(HEADER_FIELDS), h
            assert type(h["key"]) is str and (h["value"] is None or type(h["value"]) is str), h
    else:
        assert kind == "struct" and type(value) is dict, (name, value)


def check_record(obj: dict, magic: int) -> None:
    keys = list(obj)
    want = list(RECORD_FIELDS) + (list(LEGACY_RECORD_FIELDS) if magic < 2 else [])
    assert keys[:len(want)] == want
    assert keys[len(want):] in ([], ["control"]), keys
    for name, value in obj.items():
        check_value(name, value)


def check_batch_line(line: str, b: Batch, records: list[Record] | None) -> dict:
    obj = json.loads(line)
    keys = list(obj)
    assert keys[:2 + len(BATCH_FIELDS)] == ["object", "file", *BATCH_FIELDS] and obj["object"] == "batch"
    assert keys[2 + len(BATCH_FIELDS):] in ([], ["records"], ["records_error"], ["records", "records_error"]), keys
    for name in BATCH_FIELDS:
        check_value(name, obj[name])
    assert len(obj.get("records", ())) == len(records or ())
    for r, rec in zip(records or (), obj.get("records", ())):
        check_record(rec, r.magic)
    return obj


def test_the_layouts_name_declared_fields():
    layouts = [BATCH_FIELDS, RECORD_FIELDS, LEGACY_RECORD_FIELDS,
               *([n for n, _ in cols] for cols in (RECORD_COLUMNS, BATCH_COLUMNS, JSON_COLUMNS))]
    for layout in layouts:
        assert len(set(layout)) == len(layout) and set(layout) <= set(FIELD_TYPES), layout
    assert HEADER_FIELDS == ("key", "value") and FIELD_TYPES["headers"] == HEADERS_TYPE
    assert len(LOGS) > 50 and sum(1 for _, b, _ in BATCHES if b.magic < 2) > 100
    assert any(b.is_control for _, b, _ in BATCHES) and any(r.headers for *_, rs in BATCHES for r in rs or ())


def test_to_dict_follows_the_schema():
    for _, b, records in BATCHES:
        d = b.to_dict()
        assert list(d) == list(BATCH_FIELDS)
        for name, value in d.items():
            check_value(name, value)
        for r in records or ():
            check_record(json.loads(json.dumps(r.to_dict())), r.magic)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_python_writer_follows_the_schema(encoding):
    view = PayloadView(encoding)
    for path, b, records in BATCHES:
        line = ndjson.py_batch_line(ndjson.dumps(str(path)), b, records, view)
        obj = check_batch_line(line, b, records)
        assert {k: obj[k] for k in BATCH_FIELDS} == b.to_dict()
        if encoding == "base64":
            assert obj.get("records", []) == [json.loads(json.dumps(r.to_dict())) for r in records or ()]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_c_writer_follows_the_schema(encoding):
    speedups = _accel.built()
    if speedups is None:
        pytest.skip("the C extension kdump._speedups.native is not built")
    written = 0
    for path, b, records in BATCHES:
        line = speedups.json_batch_line(ndjson.dumps(str(path)), b, records, ENCODINGS[encoding])
        if line is not None:            # None: left to the Python writer (control records, ...)
            check_batch_line(line, b, records)
            written += 1
    assert written > len(BATCHES) // 2


def test_the_arrow_columns_are_the_declared_types():
    for columns in (RECORD_COLUMNS, BATCH_COLUMNS, JSON_COLUMNS):
        schema = arrow_schema(columns)
        assert [(f.name, f.type) for f in schema] == [(n, arrow_type(FIELD_TYPES[n])) for n, _ in columns]


def _ms(ts) -> int:
    return -1 if ts is None else int(ts.timestamp() * 1000)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_arrow_rows_and_json_rows_hold_the_same_values(source):
    """Export's Arrow record rows against its NDJSON lines, and its batch rows against the
    --json batch objects, on every slice of the source: the shared fields agree."""
    record_names = [n for n, _ in RECORD_COLUMNS]
    batch_names = [n for n, _ in BATCH_COLUMNS]
    shared_batch = [n for n in batch_names if n in BATCH_FIELDS]
    shared_record = [n for n in record_names if n in RECORD_FIELDS or n in ("topic", "partition", "segment", "txn")]
    view = PayloadView("base64")
    slices = plan([str(source)])
    assert len(slices) > 10
    for sl in slices:
        arrow = [row for batch in record_batches(sl) for row in _checked(batch, RECORD_COLUMNS)]
        lines = [json.loads(joined(line)) for line, damage in json_items(sl) if damage is None]
        arrow = [row for row in arrow if row["error"] is None]
        assert len(arrow) == len(lines)
        for row, obj in zip(arrow, lines):
            assert list(obj)[:4] == ["topic", "partition", "segment", "txn"]
            check_record({k: v for k, v in obj.items() if k not in ("topic", "partition", "segment", "txn")},
                         row["magic"])
            got = {n: row[n] for n in shared_record}
            got.update(timestamp=_ms(row["timestamp"]), key=_b64(row["key"]), value=_b64(row["value"]),
                       headers=[{"key": h["key"], "value": _b64(h["value"])} for h in row["headers"]])
            want = {n: obj[n] for n in shared_record}
            if not 0 <= want["timestamp"] <= 253402300799999:
                want["timestamp"] = -1          # outside Spark's range: null in Arrow
            assert got == want
        buf = open(sl.path, "rb").read()
        for row in (r for batch in batch_rows(sl) for r in _checked(batch, BATCH_COLUMNS)):
            if row["error"] is None:
                b = next(iter(Walker(buf, row["position"])))
                obj = json.loads(ndjson.py_batch_line('"f"', b, None, view))
                assert {n: row[n] for n in shared_batch} == {n: obj[n] for n in shared_batch}


def _checked(batch, columns) -> list[dict]:
    assert batch.schema == arrow_schema(columns)
    return batch.to_pylist()


def test_timestamps_convert_as_the_arrow_column_says():
    assert _ms(datetime(2024, 1, 2, tzinfo=timezone.utc)) == 1704153600000 and _ms(None) == -1
