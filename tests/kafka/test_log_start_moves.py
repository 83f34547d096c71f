"""A log whose start a real broker moved (retention, DeleteRecords) against one whose first
segment was deleted by hand: ``records_missing`` tells them apart by the leader-epoch-checkpoint.

One broker writes three topics of several segments each, then:

- `ret`: time retention (`retention.ms` of 3 s) deletes every segment but the active one;
- `dr`: DeleteRecords moves the log start into the third segment (the broker deletes the
  segments wholly below it and checkpoints the log start offset);
- `keep`: nothing; it stops cleanly. A copy of its log dir then loses `keep`'s first segment
  by hand, and another copy the first two.

The broker moves the first epoch's start with the log start (``truncateFromStart``), so the
states it leaves verify clean (exit 0, no finding); the hand-deleted segments are
``records_missing`` from offset 0 to the first segment left, and a broker started on that
copy serves from there, without them.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import kafka_jars
import pytest
from broker import KafkaBroker

from support.run import run_kdump

pytestmark = pytest.mark.slow

TOPIC_CONFIG = {"segment.index.bytes": "80"}    # a segment rolls every ~60 records of 200 bytes
RECORDS = 300
DELETE_BELOW = 150


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("ret", 1, 1, topic_configs={**TOPIC_CONFIG, "retention.ms": "3000"}),
                         NewTopic("dr", 1, 1, topic_configs=TOPIC_CONFIG),
                         NewTopic("keep", 1, 1, topic_configs=TOPIC_CONFIG)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2)
    for i in range(RECORDS):
        for topic in ("ret", "dr", "keep"):
            producer.send(topic, value=b"%d-" % i + b"x" * 200)
        if i % 10 == 9:
            producer.flush()
    producer.flush()
    producer.close()
    admin.delete_records({TopicPartition("dr", 0): DELETE_BELOW})
    admin.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("log-start")
    broker = KafkaBroker(root / "logs", work_dir=root / "work",
                         config={"log.initial.task.delay.ms": "500", "log.segment.delete.delay.ms": "500"})
    try:
        broker.start()
        _produce(broker.bootstrap)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list((root / "logs" / "ret-0").glob("*.log"))) > 1:
            time.sleep(0.5)         # retention: every rolled segment of ret goes
        time.sleep(2)               # (their .deleted files go after log.segment.delete.delay.ms)
        broker.stop()
    finally:
        broker.kill()
    return root / "logs"


def _findings(out: str) -> list[tuple[str, str, int | None]]:
    return [(Path(o["file"]).name, f["kind"], f["offset"]) for o in map(json.loads, out.splitlines())
            for f in o["findings"] if f["class"] != "info"]


def test_the_broker_moved_the_log_starts(logs):
    assert len(list((logs / "ret-0").glob("*.log"))) == 1
    assert min(int(p.stem) for p in (logs / "dr-0").glob("*.log")) > 0
    assert "dr 0 150" in (logs / "log-start-offset-checkpoint").read_text()


@pytest.mark.parametrize("topic", ["ret", "dr", "keep"])
def test_what_the_broker_left_verifies_clean(logs, topic):
    r = run_kdump("verify", "--json", logs / f"{topic}-0")
    assert r.code == 0 and _findings(r.out) == [], r.out


@pytest.mark.parametrize("gone", [1, 2])
def test_first_segments_deleted_by_hand_are_missing(logs, tmp_path, gone):
    copy = tmp_path / "logs"
    shutil.copytree(logs, copy)
    part = copy / "keep-0"
    bases = sorted(int(p.stem) for p in part.glob("*.log"))
    for base in bases[:gone]:
        for p in part.glob(f"{base:020d}.*"):
            if p.suffix != ".snapshot":
                p.unlink()
    first = bases[gone]
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert (f"{first:020d}.log", "records_missing", 0) in _findings(r.out), r.out
    broker = KafkaBroker(copy, work_dir=tmp_path / "work")
    try:
        broker.start()
        start, end = _offsets(broker.bootstrap, "keep")
        broker.stop()
    finally:
        broker.kill()
    assert (start, end) == (first, RECORDS)         # the broker serves from there: 0..first-1 are lost


def _offsets(bootstrap: str, topic: str) -> tuple[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()
