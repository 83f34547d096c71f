"""The real-broker harness itself: start, write, clean and unclean shutdown, restart on the
same dir and on a copy (what the recovery tests build on)."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.slow


def _produce(bootstrap: str, topic: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i in range(count):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush()
    producer.close()


def _consume_all(bootstrap: str, topic: str) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    values = [record.value for record in consumer]
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
