"""export --decode: a typed struct column for a topic of one Avro schema, JSON text otherwise."""

from __future__ import annotations

import datetime as dt
import decimal
import shutil

import pytest
from test_schemas_oracle import LOGDIR, records

from kdump.encode import build_v2_batch
from support.run import run_kdump

pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("fastavro")


def table(out, topic):
    return pq.read_table(next((out / f"topic={topic}").rglob("*.parquet")))


def test_export_decode(tmp_path):
    logs = tmp_path / "logs"
    for name in ("_schemas-0", "orders-avro-0", "payments-avro-0", "users-json-0", "scratch-json-0"):
        shutil.copytree(LOGDIR / name, logs / name)
    # a topic whose records all have version 1 of orders-avro-value (logical types)
    v1 = [r for r in records(LOGDIR / "orders-avro-0")][:5]
    (logs / "v1only-0").mkdir()
    (logs / "v1only-0" / "00000000000000000000.log").write_bytes(
        build_v2_batch([{"key": r.key, "value": r.value, "timestamp": 0} for r in v1]))
    out = tmp_path / "out"
    r = run_kdump("export", str(logs), "--out", str(out), "--decode", "-q")
    assert r.code == 0, r.err
    t = table(out, "v1only")
    typ = t.schema.field("value_decoded").type
    assert str(typ) == ("struct<id: int64, amount: decimal128(10, 2), placed: timestamp[ms, tz=UTC], day: date32[day], "
                        "ref: string, status: string, items: list<element: string>>")
    first = t.column("value_decoded")[0].as_py()
    assert first["amount"] == decimal.Decimal("370.10")
    assert first["placed"] == dt.datetime(2024, 2, 29, 12, 40, 45, 123000, tzinfo=dt.timezone.utc)
    assert first["day"] == dt.date(2024, 1, 11) and first["ref"] == "00000000-0000-0000-0000-000000013556"
    orders = table(out, "orders-avro")                    # three versions: JSON text
    assert str(orders.schema.field("value_decoded").type) == "string"
    assert orders.column("value_decoded")[0].as_py().startswith('{"id":10,"amount":"370.10"')
    assert str(table(out, "payments-avro").schema.field("value_decoded").type).startswith(
        "struct<order: int64, paid: struct<currency: string, cents: int64>")
    scratch = table(out, "scratch-json")
    assert scratch.column("value_decode_error").to_pylist() == ["schema id 12 is not in the schema store"] * 2
    r = run_kdump("export", str(logs), "--out", str(tmp_path / "o2"), "--decode", "--format", "ndjson")
    assert r.code == 2 and "--decode writes Parquet" in r.err


@pytest.mark.parametrize("field", [{"type": "fixed", "name": "F", "size": 1_000_000_000},
                                   {"type": "bytes", "logicalType": "decimal", "precision": 0, "scale": 0}])
def test_export_decode_sizes_nothing_from_a_hostile_schema(tmp_path, field):
    """A fixed of 1e9 bytes made a fixed-size column: 10 rows took 9.8 GB and 42 s; a decimal
    of precision 0, ``internal error: ValueError``. Now such a type is a JSON text column."""
    import json
    import resource
    import struct

    schema = {"type": "record", "name": "R", "fields": [{"name": "f", "type": field}]}
    key = json.dumps({"keytype": "SCHEMA", "subject": "big-value", "version": 1, "magic": 1}).encode()
    value = json.dumps({"subject": "big-value", "version": 1, "id": 1, "schema": json.dumps(schema)}).encode()
    logs = tmp_path / "logs"
    for name, recs in (("_schemas-0", [{"key": key, "value": value, "timestamp": 0}]),
                       ("big-0", [{"key": None, "value": b"\0" + struct.pack(">i", 1) + b"abc", "timestamp": 0}] * 10)):
        (logs / name).mkdir(parents=True)
        (logs / name / "00000000000000000000.log").write_bytes(build_v2_batch(recs))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = run_kdump("export", str(logs), "--out", str(tmp_path / "out"), "--decode", "-q")
    assert r.code == 0 and "internal error" not in r.err, r.err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 512 << 10     # KB: under 512 MB grown
    assert str(table(tmp_path / "out", "big").schema.field("value_decoded").type) == "string"
