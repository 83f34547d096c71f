"""The real-broker harness itself: start, write, clean and unclean shutdown, restart on the
same dir and on a copy (what the recovery tests build on)."""

from __future__ import annotations

import shutil
import time

import pytest

pytestmark = pytest.mark.slow


def _produce(bootstrap: str, topic: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i in range(count):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush()
    producer.close()


def _consume_all(bootstrap: str, topic: str, timeout: float = 60, **options) -> list[bytes]:
    """Every value of partition 0, read up to its end offset (not until a quiet spell: a
    loaded machine can be slow to answer the first fetch)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **options)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    end = consumer.end_offsets([partition])[partition]
    values, deadline = [], time.monotonic() + timeout
    while consumer.position(partition) < end:
        assert time.monotonic() < deadline, f"read {len(values)} records of {topic} in {timeout}s"
        for records in consumer.poll(timeout_ms=1000).values():
            values.extend(record.value for record in records)
    consumer.close()
    return values


def test_clean_shutdown_crash_and_restart_on_a_copy(make_broker, tmp_path):
    logs = tmp_path / "logs"
    broker = make_broker(logs)
    assert broker.bootstrap.startswith("127.0.0.1:")
    _produce(broker.bootstrap, "life", 20)
    broker.stop()
    assert (logs / ".kafka_cleanshutdown").is_file()
    assert (logs / "__cluster_metadata-0").is_dir() and (logs / "meta.properties").is_file()
    assert any((logs / "life-0").glob("*.log"))

    broker.start()  # again on the same, already formatted dir
    assert not (logs / ".kafka_cleanshutdown").exists()  # removed once the logs are loaded
    _produce(broker.bootstrap, "life", 5)
    broker.kill()
    assert not broker.running
    assert not (logs / ".kafka_cleanshutdown").exists()  # a crash leaves no marker

    copy = tmp_path / "copy"
    shutil.copytree(logs, copy)
    other = make_broker(copy)  # recovers the crashed copy at startup
    assert other.bootstrap != broker.bootstrap
    assert _consume_all(other.bootstrap, "life") == [b"v%d" % i for i in range(20)] + [b"v%d" % i for i in range(5)]
    other.stop()
    assert (copy / ".kafka_cleanshutdown").is_file()
    assert "Kafka Server started" in other.log_file.read_text()


def test_session_broker_serves(kafka_broker):
    _produce(kafka_broker.bootstrap, "session-smoke", 3)
    assert _consume_all(kafka_broker.bootstrap, "session-smoke") == [b"v0", b"v1", b"v2"]


def test_kdump_reads_a_running_broker_dir(kafka_broker):
    """What an operator points kdump at: a live log dir, active segments and preallocated
    indexes included. Larger and made at test time; the committed shapes are fixtures/broker."""
    import json

    from kafka import KafkaProducer

    from support.run import run_kdump

    sent = 0
    for codec in (None, "gzip", "snappy", "lz4", "zstd"):
        producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, compression_type=codec,
                                 linger_ms=20, enable_idempotence=True)
        for i in range(400):
            producer.send("live-codecs", key=b"%d" % i, value=b"record %d of a running broker " % i * 4)
        producer.flush()
        producer.close()
        sent += 400
    partition = kafka_broker.log_dir / "live-codecs-0"
    assert any(p.stat().st_size == 10 * 1024 * 1024 for p in partition.glob("*.index"))  # preallocated
    # this partition only: the broker keeps appending to others (__cluster_metadata every
    # 500 ms), and a batch read half-written is a torn tail at that instant
    verify = run_kdump("verify", str(partition))
    assert verify.code == 0, verify.out[-3000:] + verify.err[-2000:]
    dump = run_kdump("dump", str(partition), "--records", "--json")
    assert dump.code == 0, dump.err
    batches = [json.loads(line) for line in dump.out.splitlines() if '"base_offset"' in line]
    assert sum(b["count"] for b in batches if b["file"].endswith(".log")) == sent
    assert {b["compression"] for b in batches} == {"none", "gzip", "snappy", "lz4", "zstd"}


def test_a_broker_starts_on_a_copy_of_the_committed_fixture(make_broker, tmp_path):
    """fixtures/broker/all-shapes is a log dir Kafka itself accepts (the base the recovery
    tests damage): a broker started on a copy serves its topics and their committed records."""
    from kafka import KafkaConsumer

    from support.run import FIXTURES

    copy = tmp_path / "all-shapes"
    shutil.copytree(FIXTURES / "broker" / "all-shapes", copy)
    broker = make_broker(copy)
    values = _consume_all(broker.bootstrap, "txn", isolation_level="read_committed")
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    topics = consumer.topics()
    consumer.close()
    assert {"codec-zstd", "compacted", "log-append-time", "txn"} <= topics
    assert b"java committed after abort" in values
    assert not any(b"aborted" in v for v in values)
    broker.stop()
    assert not any(copy.rglob("*.deleted"))  # the cleaner's leftovers are gone after a start
