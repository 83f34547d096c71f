"""``kdump info``: per-partition summaries from batch headers."""

from __future__ import annotations

import json

from support.run import GENERATED, REAL, run_kdump


def test_info_json_on_transactions():
    r = run_kdump("info", GENERATED / "transactions-0", "--json")
    assert r.code == 0, r.err
    (s,) = [json.loads(line) for line in r.out.splitlines()]
    assert s["topic"] == "transactions" and s["partition"] == 0 and s["segments"] == 2
    assert s["first_offset"] == 0 and s["last_offset"] == 26 and s["records"] == 27
    assert s["producers"] == 2 and 0 < s["control_share"] < s["transactional_share"] <= 1
    assert sum(h["batches"] for h in s["batch_size_histogram"]) == s["batches"]


def test_info_on_the_whole_real_tree_is_clean():
    r = run_kdump("info", REAL, "--json")
    summaries = [json.loads(line) for line in r.out.splitlines()]
    assert len(summaries) > 400
    assert all(s["invalid_batches"] == 0 for s in summaries)
    # One fixture partition was committed with its first two segments' indexes but not their
    # .log (records_missing); every other is clean.
    lossy = [(s["topic"], [p.split(": ")[1] for p in s["problems"]]) for s in summaries if s["problems"]]
    assert lossy == [("test_topic_b", ["records_missing"])]
    assert r.code == 1 and r.err.count("kdump: error: ") == 1 and "offsets 0..1613279 are missing" in r.err


def test_info_reports_damage():
    r = run_kdump("info", GENERATED / "torn-tail-0", "--format", "text")
    assert r.code == 1
    assert "trailing bytes: 113" in r.out
    assert r.err.startswith("kdump: error: ") and ":667: " in r.err


def test_info_nested_log_dirs_named_like_partitions():
    """data/kafka-1 is a log dir, not partition 1 of topic 'kafka'."""
    r = run_kdump("info", REAL / "tuyen-nnt__kafka_2.13-3.0.0" / "data", "--json")
    topics = {json.loads(line)["topic"] for line in r.out.splitlines()}
    assert "kafka" not in topics and "__consumer_offsets" in topics
