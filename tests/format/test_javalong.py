"""A timestamp past the int64 range: Kafka's long sum wraps, and so does kdump.

``baseTimestamp + timestampDelta`` with a valid CRC used to give a Python int beyond int64:
``dump`` printed ``CreateTime: 9223372036854775808`` and ``export`` (Parquet) died with an
OverflowError. Kafka's readers see the wrapped value; kdump now shows that value, ``verify
--deep`` names it (``timestamp_overflow``, an anomaly: the broker keeps the batch), and
every export writes its row.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump import _accel
from kdump.encode import build_v2_batch
from kdump.format.javalong import INT64_MAX, INT64_MIN, long_add, wrapped
from kdump.format.walk import Walker, decode_records
from support.run import run_kdump

TOP = INT64_MAX
_int64 = st.one_of(st.integers(INT64_MIN, INT64_MAX), st.sampled_from([INT64_MIN, INT64_MAX, 0, -1, 1]))


def _java(a: int, b: int) -> int:
    """Two's complement addition, from the bytes: what the JVM's ladd does."""
    return struct.unpack(">q", ((a + b) & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big"))[0]


@given(_int64, _int64)
def test_long_add_is_javas_and_wrapped_says_when(a, b):
    s = long_add(a, b)
    assert s == _java(a, b)
    assert wrapped(a, s) == (not INT64_MIN <= a + b <= INT64_MAX)


def _segment(base_ts: int, deltas: list[int]) -> bytes:
    return build_v2_batch([(i, base_ts + d, b"k", b"v%d" % i) for i, d in enumerate(deltas)], base_timestamp=base_ts,
                          max_timestamp=base_ts)


@settings(max_examples=200, deadline=None)
@given(_int64, st.lists(_int64, min_size=1, max_size=4))
def test_the_c_and_python_decoders_wrap_alike(base_ts, deltas):
    buf = _segment(base_ts, deltas)
    got = []
    for use_c in (False, True):
        with _accel.using(use_c):
            got.append([r.timestamp for b in Walker(buf) for r in decode_records(buf, b)])
    assert got[0] == got[1] == [long_add(base_ts, d) for d in deltas]


@pytest.fixture
def overflowed(tmp_path) -> Path:
    d = tmp_path / "logs" / "t-0"
    d.mkdir(parents=True)
    (d / f"{0:020d}.log").write_bytes(_segment(TOP - 1, [0, 11]))
    return d


def test_dump_prints_what_kafka_prints(overflowed):
    r = run_kdump("dump", "--records", "--format", "text", overflowed)
    assert r.code == 0, r.err
    assert "CreateTime: 9223372036854775806" in r.out and "CreateTime: -9223372036854775799" in r.out
    assert "9223372036854775808" not in r.out and "9223372036854775817" not in r.out
    r = run_kdump("dump", "--records", "--json", overflowed)
    assert [rec["timestamp"] for rec in json.loads(r.out)["records"]] == [TOP - 1, long_add(TOP - 1, 11)]


def test_verify_deep_names_the_wrapped_record(overflowed):
    r = run_kdump("verify", "--deep", "--json", overflowed)
    assert r.code == 0, r.out          # an anomaly: the broker keeps the batch
    found = [f for line in r.out.splitlines() for f in json.loads(line).get("findings", [])
             if f["kind"] != "index_missing"]
    assert [(f["kind"], f["position"], f["offset"]) for f in found] == [("timestamp_overflow", 0, 1)]
    assert "wraps it to -9223372036854775799" in found[0]["message"]
    assert run_kdump("verify", "--deep", "--strict", overflowed).code == 1


@pytest.mark.parametrize("fmt", ["parquet", "ndjson"])
def test_export_writes_the_row(overflowed, tmp_path, fmt):
    """Export carries the wrapped value where the format can hold it (NDJSON; a Parquet
    timestamp cannot: null there), and says so in an error row, as verify --deep's finding."""
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    r = run_kdump("export", overflowed, "--out", out, "--format", fmt)
    message = ("timestamp_overflow: record 1: baseTimestamp 9223372036854775806 + timestampDelta is past the int64 "
               "range; Kafka's long arithmetic wraps it to -9223372036854775799")
    assert r.code == 1, r.err          # an error row: the export says what it could not carry as is
    assert f"{fmt == 'parquet' and str(overflowed) + '/' or 't-0/'}00000000000000000000.log:0: {message}" in r.err
    assert "exported 3 rows (1 error row)" in r.err
    if fmt == "ndjson":
        lines = [json.loads(x) for p in sorted(out.rglob("*.ndjson")) for x in p.read_text().splitlines()]
        assert [x.get("timestamp") for x in lines[:2]] == [TOP - 1, long_add(TOP - 1, 11)], lines
        assert {k: lines[2][k] for k in ("position", "offset", "error")} == {"position": 0, "offset": 1,
                                                                             "error": message}
    else:
        import pyarrow.parquet as pq

        rows = sorted(pq.read_table(str(out)).to_pylist(), key=lambda x: (x["offset"], x["error"] is not None))
        # (both timestamps are past Spark's year 9999: null; the wrapped one is said in the error row)
        assert [(x["offset"], x["timestamp"], x["value"], x["error"]) for x in rows] == [
            (0, None, b"v0", None), (1, None, b"v1", None), (1, None, None, message)]
