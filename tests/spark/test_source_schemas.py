"""The kafka-log source's valueFormat: the Schema Registry value decoded, as dump decodes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
pytest.importorskip("fastavro")

LOGDIR = Path(__file__).resolve().parents[2] / "fixtures" / "schemas" / "registry"


def test_value_format_auto(spark):
    from support.run import run_kdump

    rows = (spark.read.format("kafka-log").option("valueFormat", "auto")
            .load([str(LOGDIR / "orders-avro-0"), str(LOGDIR / "events-proto-0"), str(LOGDIR / "scratch-json-0")])
            .select("topic", "offset", "value_decoded", "value_decode_error").collect())
    got = {(r.topic, r.offset): (r.value_decoded, r.value_decode_error) for r in rows}
    assert len(got) == 15 + 9 + 2
    for topic in ("orders-avro", "events-proto"):
        out = run_kdump("dump", str(LOGDIR / f"{topic}-0"), "--value-decoder", "auto", "--json", "-q").out
        for line in out.splitlines():
            for rec in json.loads(line)["records"]:
                assert json.loads(got[topic, rec["offset"]][0]) == rec["decoded"]["value"]
    assert got["scratch-json", 0] == (None, None)      # auto: a frame no schema in the store claims


def test_value_format_avro_reports_errors(spark):
    rows = (spark.read.format("kafka-log").option("valueFormat", "avro").load(str(LOGDIR / "scratch-json-0"))
            .select("value_decoded", "value_decode_error").collect())
    assert [tuple(r) for r in rows] == [(None, "schema id 12 is not in the schema store (permanently deleted: it "
                                               "was scratch-json-value version 1, offset 18)")] * 2
