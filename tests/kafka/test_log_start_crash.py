"""Whole files a real broker deleted on purpose, then SIGKILLed: no ``records_missing``.

One broker a case writes five topics of several segments each and is killed (no clean
shutdown) as soon as its deletions show on disk:

- `ret`: time retention deletes the first segments (their records are stamped an hour ago,
  `retention.ms` is ten minutes);
- `gone`: deleteTopics, right after a high-watermark checkpoint listed it (so that the
  replication-offset-checkpoint still does at the kill);
- `dr`: DeleteRecords below offset 150, the kill right after it answers;
- `drl`: the same early, the kill after the broker deleted the segments wholly below 150;
- `keep`: nothing.

In `delay-default` the broker keeps the deleted files as ``.deleted`` (and the deleted
partition as ``-delete``) for `file.delete.delay.ms`, 60 s; in `delay-1ms` they are gone at
the kill, and the log-start-offset checkpoint (every 60 s) lags behind. Either way `kdump
verify` finds nothing missing, the broker restarted on the crash state starts and serves
what `kdump records` reads there from its log start on, and a first segment deleted by hand
in that state is ``records_missing`` (from where the leader-epoch-checkpoint starts the log).
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from pathlib import Path
from typing import NamedTuple

import kafka_jars
import pytest
from broker import KafkaBroker

from support.run import run_kdump

pytestmark = pytest.mark.slow

TOPIC_CONFIG = {"segment.index.bytes": "80"}    # a segment rolls every ~60 records of 200 bytes
TOPICS = ("ret", "dr", "drl", "gone", "keep")
KEPT = ("ret", "dr", "drl", "keep")
RECORDS = 300
OLD = 120               # ret's first records, stamped an hour ago: retention deletes their segments
DELETE_BELOW = 150
CASES = {
    "delay-default": {},
    "delay-1ms": {"log.segment.delete.delay.ms": "1",
                  "log.flush.start.offset.checkpoint.interval.ms": "60000"},
}
FIRST = f"{0:020d}"


class Crash(NamedTuple):
    case: str
    logs: Path                          # the log dir as the kill left it (a copy)
    served: dict[str, list[tuple[int, bytes]]]     # topic -> (offset, value) the restarted broker serves
    hw_listed_gone: bool                # the replication-offset-checkpoint still named `gone` at the kill


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(t, 1, 1, topic_configs={**TOPIC_CONFIG, **(
        {"retention.ms": "600000"} if t == "ret" else {})}) for t in TOPICS])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2)
    old = int(time.time() * 1000) - 3600 * 1000
    for i in range(RECORDS):
        for topic in TOPICS:
            producer.send(topic, value=b"%d-" % i + b"x" * 200,
                          timestamp_ms=old if topic == "ret" and i < OLD else None)
        if i % 10 == 9:
            producer.flush()
    producer.flush()
    producer.close()


def _wait(what: str, done, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the broker did not get there: {what}")
        time.sleep(0.05)


def _hw_lists(logs: Path, topic: str) -> bool:
    try:
        return any(line.split()[:2] == [topic, "0"] for line in (logs / "replication-offset-checkpoint")
                   .read_text().splitlines()[2:])
    except FileNotFoundError:
        return False


def _crash(broker: KafkaBroker, logs: Path, short: bool) -> bool:
    """Produce, delete, SIGKILL as soon as the deletions show; whether the high-watermark
    checkpoint still listed `gone` then."""
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition

    _produce(broker.bootstrap)

    def first_segment_deleted(part: Path) -> None:
        if short:   # its files renamed and removed
            _wait(f"{part.name}'s first segment deleted", lambda: not list(part.glob(FIRST + ".*"))
                  and not list(part.glob("*.deleted")))
        else:       # renamed to .deleted, to be removed a minute later
            _wait(f"{part.name}'s first segment renamed", lambda: (part / (FIRST + ".log.deleted")).exists())

    first_segment_deleted(logs / "ret-0")
    # deleteTopics right after a high-watermark checkpoint (every 5 s) that lists `gone`
    hw = logs / "replication-offset-checkpoint"
    _wait("gone in the high-watermark checkpoint", lambda: _hw_lists(logs, "gone"))
    written = hw.stat().st_mtime_ns
    _wait("a fresh high-watermark checkpoint", lambda: hw.stat().st_mtime_ns != written)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.delete_topics(["gone"])
    if short:
        _wait("gone's dir removed", lambda: not list(logs.glob("gone-0*")))
    else:
        _wait("gone's dir renamed", lambda: not (logs / "gone-0").exists())
    # (after the deletion, which checkpoints the log starts)
    admin.delete_records({TopicPartition("drl", 0): DELETE_BELOW})
    first_segment_deleted(logs / "drl-0")
    admin.delete_records({TopicPartition("dr", 0): DELETE_BELOW})
    broker.kill()
    admin.close()
    return _hw_lists(logs, "gone")


def _consume(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        got: list[tuple[int, bytes]] = []
        for m in c:
            got.append((m.offset, m.value))
            if m.offset + 1 >= end:
                break
        return got
    finally:
        c.close()


@pytest.fixture(scope="module", params=list(CASES))
def crashed(request, tmp_path_factory) -> Crash:
    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp(request.param)
    logs = root / "logs"
    broker = KafkaBroker(logs, work_dir=root / "work",
                         config={"log.initial.task.delay.ms": "500", **CASES[request.param]})
    try:
        broker.start()
        hw_listed_gone = _crash(broker, logs, short=request.param == "delay-1ms")
        frozen = root / "crash"
        shutil.copytree(logs, frozen)
        broker.start()          # on the same dir: an unclean start
        served = {t: _consume(broker.bootstrap, t) for t in KEPT}
        broker.stop()
    finally:
        broker.kill()
    return Crash(request.param, frozen, served, hw_listed_gone)


def _findings(out: str) -> list[tuple[str, str, int | None]]:
    return [(Path(o["file"]).name, f["kind"], f["offset"]) for o in map(json.loads, out.splitlines())
            for f in o["findings"] if f["class"] != "info"]


def test_the_kill_came_with_the_deletions_on_disk(crashed):
    logs = crashed.logs
    assert not (logs / ".kafka_cleanshutdown").exists()
    assert not (logs / "ret-0" / (FIRST + ".log")).exists()
    assert not (logs / "drl-0" / (FIRST + ".log")).exists()
    assert not (logs / "gone-0").exists()
    leftovers = ([*(logs / "ret-0").glob("*.deleted"), *(logs / "drl-0").glob("*.deleted")],
                 list(logs.glob("gone-0.*-delete")))
    if crashed.case == "delay-1ms":
        assert leftovers == ([], [])
        assert crashed.hw_listed_gone       # the checkpoints still name the partition whose dir is gone
        assert "dr" not in (logs / "log-start-offset-checkpoint").read_text()       # it lags
    else:
        assert all(leftovers)


def test_verify_finds_no_records_missing(crashed):
    r = run_kdump("verify", "--json", crashed.logs)
    assert [f for f in _findings(r.out) if f[1] == "records_missing"] == [], r.out


@pytest.mark.parametrize("topic", KEPT)
def test_the_restarted_broker_serves_what_kdump_reads(crashed, topic):
    part = crashed.logs / f"{topic}-0"
    r = run_kdump("records", "--json", part)
    assert r.code == 0, r.err
    read = [(o["offset"], base64.b64decode(o["value"])) for o in map(json.loads, r.out.splitlines())]
    # the broker starts its log at the log start checkpointed (a later one was not) or at the
    # first segment, whichever is higher
    checkpointed = [int(line.split()[2]) for line in (crashed.logs / "log-start-offset-checkpoint")
                    .read_text().splitlines()[2:] if line.split()[:2] == [topic, "0"]]
    start = max([read[0][0], *checkpointed])
    assert crashed.served[topic] == [x for x in read if x[0] >= start]
    assert read[-1][0] == RECORDS - 1
    if topic == "keep":
        assert start == 0


@pytest.mark.parametrize("topic", ["ret", "drl", "keep"])
def test_a_first_segment_deleted_by_hand_is_missing(crashed, tmp_path, topic):
    # (beside the .deleted files of the broker's own deletion in delay-default: they lie below
    # the start the epochs were moved to)
    if f"{topic} 0 " in (crashed.logs / "log-start-offset-checkpoint").read_text():
        pytest.skip("a log start in the checkpoint (a tiered log's, maybe) leaves the head unjudged")
    copy = tmp_path / "logs"
    shutil.copytree(crashed.logs, copy)
    part = copy / f"{topic}-0"
    bases = sorted(int(p.name[:20]) for p in part.glob("*.log"))
    for p in part.glob(f"{bases[0]:020d}.*"):
        if p.suffix != ".snapshot":
            p.unlink()
    began = int((part / "leader-epoch-checkpoint").read_text().splitlines()[2].split()[1])
    assert bases[0] <= began < bases[1]
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    missing = [f for f in _findings(r.out) if f[1] == "records_missing"]
    assert missing == [(f"{bases[1]:020d}.log", "records_missing", began)], r.out
