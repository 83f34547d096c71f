"""The Spark source on a timestamp past the int64 range: rows, not a failed job."""

from __future__ import annotations

import pytest

from kdump.encode import build_v2_batch
from kdump.format.javalong import INT64_MAX

pytestmark = pytest.mark.spark


def test_a_wrapped_timestamp_is_a_row_not_a_failed_job(spark, tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    top = INT64_MAX - 1
    (d / f"{0:020d}.log").write_bytes(build_v2_batch([(0, top, None, b"a"), (1, top + 11, None, b"b")],
                                                     base_timestamp=top, max_timestamp=top))
    rows = sorted(spark.read.format("kafka-log").load(str(d)).toArrow().to_pylist(),
                  key=lambda r: (r["offset"], r["error"] is not None))
    # the record stays a row (its timestamp null: a Spark timestamp cannot hold the wrapped one),
    # and an error row beside it names what Kafka's arithmetic made of it, as export does
    assert [(r["offset"], r["value"], r["error"]) for r in rows] == [
        (0, b"a", None), (1, b"b", None),
        (1, None, "timestamp_overflow: record 1: baseTimestamp 9223372036854775806 + timestampDelta is past the "
                  "int64 range; Kafka's long arithmetic wraps it to -9223372036854775799")]
    assert rows[1]["timestamp"] is None
    batches = spark.read.format("kafka-log-batches").load(str(d)).toArrow().to_pylist()
    assert [(b["base_offset"], b["error"]) for b in batches] == [(0, None)]
