"""`kdump records` against a real consumer: the records a read_committed (and a
read_uncommitted) consumer gets from a broker are what `kdump records --isolation` reads from
the broker's own files, offset for offset, with committed and aborted transactions and one
left open while both read."""

from __future__ import annotations

import json

import pytest

from support.run import run_kdump

pytestmark = pytest.mark.slow

TOPIC = "records-isolation"


def _consume(bootstrap: str, isolation: str) -> list[tuple[int, bytes | None, bytes | None]]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=3000)
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [(m.offset, m.key, m.value) for m in c]
    c.close()
    return got


def _kdump(partition, isolation: str) -> list[dict]:
    r = run_kdump("records", partition, "--json", "--isolation", isolation)
    assert r.code == 0, r.err
    return [json.loads(line) for line in r.out.splitlines()]


def test_records_read_as_a_consumer_does(kafka_broker):
    import base64

    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    plain = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all")
    tx = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, transactional_id="records-isolation", acks="all")
    tx.init_transactions()
    for n in range(6):
        tx.begin_transaction()
        for i in range(3):
            tx.send(TOPIC, key=b"t%d-%d" % (n, i), value=b"txn %d" % n, partition=0)
        plain.send(TOPIC, key=b"p%d" % n, value=b"plain %d" % n, partition=0)
        plain.flush()
        tx.flush()
        if n % 3 == 1:
            tx.abort_transaction()
        else:
            tx.commit_transaction()
    tx.begin_transaction()                       # left open while both consumers read
    tx.send(TOPIC, key=b"open", value=b"open txn", partition=0)
    tx.flush()
    plain.send(TOPIC, key=b"after", value=b"after the open one", partition=0)
    plain.flush()
    try:
        partition = kafka_broker.log_dir / f"{TOPIC}-0"
        for isolation in ("read_committed", "read_uncommitted"):
            consumed = _consume(kafka_broker.bootstrap, isolation)
            rows = _kdump(partition, isolation)

            def b(v):
                return None if v is None else base64.b64decode(v)
            assert [(r["offset"], b(r["key"]), b(r["value"])) for r in rows] == consumed, isolation
        every = _kdump(partition, "read_uncommitted")
        outcome = {b"txn %d" % n: "aborted" if n % 3 == 1 else "committed" for n in range(6)}
        for r in every:
            value = base64.b64decode(r["value"])
            want = outcome.get(value, "open" if value == b"open txn" else None)
            assert r["txn"] == want, r
        committed = _kdump(partition, "read_committed")
        assert all(r["txn"] in (None, "committed") for r in committed)
        assert b"after the open one" not in [base64.b64decode(r["value"]) for r in committed]
    finally:
        tx.abort_transaction()
        tx.close()
        plain.close()
