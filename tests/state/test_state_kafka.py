"""kdump txn / groups / metadata against Kafka itself.

One broker runs a scenario (plain, committed, aborted, open and hanging transactions; a
classic and a KIP-848 consumer group; topics with configs). While it runs, Kafka's own
tools say what they see: TransactionsCommand find-hanging/list, the last stable offset
(a read_committed consumer's end offsets), ConsumerGroupCommand --describe and
TopicCommand --describe. The broker is stopped and kdump, run on its files, must give
the same answers.

The hanging transaction is made the way they happen: its producer is killed mid
transaction and the coordinator's state is lost (here: __transaction_state is removed
while the broker is down), so nobody will ever end it.

TopicCommand and ConfigCommand answer one after the other, over seconds on a loaded
machine, while `kdump metadata --at` shows one point. The two agree only if the cluster
did not change while the tools were asked. It can: a broker whose heartbeats stall past
broker.session.timeout.ms is fenced and unfenced, which rewrites every partition (leader
-1, ISR [] and back). So the tools are asked again until __cluster_metadata shows no
change to topics or configs between the first question and the last answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings

import kafka_jars
import pytest

from kdump.errors import KdumpError
from kdump.state.cluster_image import Point, load
from kdump.state.image_objects import diff
from kdump.state.source import LogDirs

pytestmark = pytest.mark.slow
DESCRIBE_ROUNDS = 5          # tries at a round of answers with no metadata change under it
ON_DISK_TIMEOUT = 60         # seconds for the metadata log to show a batch past a point

HANG = """
import os, sys
from kafka import KafkaProducer
tid, topic, partition, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = KafkaProducer(bootstrap_servers=sys.argv[5], transactional_id=tid, transaction_timeout_ms=900000)
p.init_transactions()
p.begin_transaction()
for i in range(n):
    p.send(topic, value=b"open-%d" % i, partition=partition)
p.flush()
os._exit(0)      # killed mid transaction: no commit, no abort
"""


def _tool(main_class: str, *args: str) -> str:
    proc = kafka_jars.java(main_class, *args, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _rows(text: str, first: str) -> list[list[str]]:
    """Rows of a Kafka tool's table whose header starts with ``first``."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return [r for r in lines if r and r[0] != first and len(r) > 1]


def _hang(bootstrap: str, tid: str, topic: str, partition: int, n: int) -> None:
    subprocess.run([sys.executable, "-c", HANG, tid, topic, str(partition), str(n), bootstrap], check=True,
                   timeout=120)


def _transaction(bs: str, tid: str, partitions: list[int], *, commit: bool) -> None:
    from kafka import KafkaProducer

    t = KafkaProducer(bootstrap_servers=bs, transactional_id=tid)
    t.init_transactions()
    t.begin_transaction()
    for i, partition in enumerate(partitions):
        t.send("orders", value=b"%s-%d" % (tid.encode(), i), partition=partition)
    t.flush()
    if commit:
        t.commit_transaction()
    else:
        t.abort_transaction()
    t.close()


def _scenario_phase1(bs: str, logs) -> dict:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bs)
    admin.create_topics([NewTopic("orders", 3, 1),
                         NewTopic("payments", 1, 1, topic_configs={"retention.ms": "86400000",
                                                                   "max.message.bytes": "200000"})])
    admin.close()
    time.sleep(1)
    p = KafkaProducer(bootstrap_servers=bs)
    for i in range(6):
        p.send("orders", key=b"o%d" % i, value=b"plain-%d" % i, partition=i % 3)
    p.flush()
    p.close()
    _transaction(bs, "t-commit", [i % 2 for i in range(5)], commit=True)
    _transaction(bs, "t-abort", [0, 0, 0], commit=False)
    _hang(bs, "t-hang", "payments", 0, 2)
    c = KafkaConsumer("orders", bootstrap_servers=bs, group_id="g-classic", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=4000)
    for n, _ in enumerate(c, 1):
        if n >= 5:
            break
    c.commit()
    c.close()
    _tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bs, "--topic", "orders",
          "--group", "g-new", "--consumer-property", "group.protocol=consumer", "--from-beginning",
          "--max-messages", "4", "--timeout-ms", "20000")
    return _quiet_description(bs, logs)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _describe(bs: str) -> dict:
    """TopicCommand and ConfigCommand's answers, with the times just before and after them."""
    since = _now_ms()
    topics = _tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--describe",
                   "--topic", "orders,payments")
    # ConfigCommand is org.apache.kafka.tools' since Kafka 4.4 (kafka.admin's, Scala, before)
    configs = _tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bs, "--describe",
                    "--entity-type", "topics")
    defaults = _tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bs, "--describe", "--entity-type",
                     "brokers", "--entity-default")
    return {"since": since, "topics": topics, "configs": configs, "defaults": defaults, "at": _now_ms()}


def _metadata_changes(metadata_dir, since: int, at: int) -> list[dict]:
    """Changes to topics and configs that __cluster_metadata records between two times, read
    once the log on disk holds a batch past ``at`` (the controller writes a NoOp record every
    metadata.max.idle.interval.ms), so that every record up to ``at`` is there."""
    deadline = time.monotonic() + ON_DISK_TIMEOUT
    while True:
        try:
            dirs = LogDirs([str(metadata_dir)])
            if (load(dirs).last_timestamp or 0) > at:
                changes = diff(load(dirs, Point(time_ms=since)), load(dirs, Point(time_ms=at)))
                return [c for c in changes if c["path"].startswith(("topics/", "configs/"))]
        except (OSError, KdumpError):      # a live log: a snapshot renamed away while read
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{metadata_dir}: no metadata batch after {at} within {ON_DISK_TIMEOUT}s")
        time.sleep(0.2)


def _quiet_description(bs: str, logs) -> dict:
    """A round of the tools' answers under which the metadata did not change, so that they
    all describe the image at its end; rounds that saw a change are kept as evidence."""
    noisy = []
    for _ in range(DESCRIBE_ROUNDS):
        seen = _describe(bs)
        changes = _metadata_changes(logs / "__cluster_metadata-0", seen["since"], seen["at"])
        if not changes:
            return {**seen, "noisy_rounds": noisy}
        noisy.append({"since": seen["since"], "at": seen["at"], "changes": changes})
    raise AssertionError(f"the cluster metadata changed under each of {DESCRIBE_ROUNDS} rounds of "
                         f"TopicCommand/ConfigCommand: {json.dumps(noisy)}")


def _scenario_phase2(bs: str) -> dict:
    from kafka import KafkaConsumer, TopicPartition

    _hang(bs, "t-open", "orders", 2, 1)
    tool = "org.apache.kafka.tools.TransactionsCommand"
    hanging = _tool(tool, "--bootstrap-server", bs, "find-hanging", "--broker-id", "1",
                    "--max-transaction-timeout", "0")
    listing = _tool(tool, "--bootstrap-server", bs, "list")
    groups = _tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", bs,
                   "--describe", "--all-groups")
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed")
    tps = [TopicPartition("orders", n) for n in range(3)] + [TopicPartition("payments", 0)]
    lso = {f"{tp.topic}-{tp.partition}": off for tp, off in c.end_offsets(tps).items()}
    c.close()
    return {"hanging": hanging, "list": listing, "groups": groups, "lso": lso}


@pytest.fixture(scope="module")
def state_broker(tmp_path_factory):
    """The scenario's broker (not started), a fixture of its own so that a failing test
    gets its log (tests/kafka/broker_fixtures.py)."""
    from broker import KafkaBroker

    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("state-kafka")
    return KafkaBroker(root / "logs", work_dir=root / "work", config={
        "offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "2"})


@pytest.fixture(scope="module")
def recorded(state_broker):
    broker = state_broker
    logs = broker.log_dir
    try:
        # A fixed id: a random one may start with '-', which kafka-storage takes for an option.
        broker.format(cluster_id="MkU3OEVBNTcwNTJENDM2Qk")
        broker.start()
        seen = _scenario_phase1(broker.bootstrap, logs)
        broker.stop()
        for d in logs.glob("__transaction_state-*"):     # the coordinator forgets t-hang
            shutil.rmtree(d)
        broker.start()
        seen.update(_scenario_phase2(broker.bootstrap))
        broker.stop()
    finally:
        broker.kill()
    return logs, seen


def _kdump_json(*args) -> tuple[int, list[dict]]:
    proc = subprocess.run([sys.executable, "-m", "kdump", *args, "--json", "--quiet"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_txn_finds_the_hanging_transactions_find_hanging_finds(recorded):
    logs, seen = recorded
    theirs = {(r[0], int(r[1]), int(r[2]), int(r[3]), int(r[5])) for r in _rows(seen["hanging"], "Topic")}
    assert theirs, seen["hanging"]
    _, objs = _kdump_json("txn", str(logs), "--hanging-after", "0")
    ours = {(p["topic"], p["partition"], d["producer_id"], d["producer_epoch"], d["open_txn"]["first_offset"])
            for p in objs if p["object"] == "partition" for d in p["producers"] if d.get("hanging")}
    assert ours == theirs


def test_txn_open_transactions_and_transactional_ids_match_the_coordinator(recorded):
    logs, seen = recorded
    listed = {r[0]: (int(r[2]), r[3]) for r in _rows(seen["list"], "TransactionalId")}
    _, objs = _kdump_json("txn", str(logs), "--hanging-after", "0")
    ids = {o["transactional_id"]: (o["producer_id"], o["state"]) for o in objs if o["object"] == "transactional_id"}
    assert ids == listed          # only t-open survived the loss of __transaction_state
    opened = {(p["topic"], p["partition"], d["transactional_id"], d["hanging"])
              for p in objs if p["object"] == "partition" for d in p["producers"] if d.get("open_txn")}
    assert ("orders", 2, "t-open", False) in opened
    assert ("payments", 0, None, True) in opened
    orders0 = next(p for p in objs if p["object"] == "partition" and (p["topic"], p["partition"]) == ("orders", 0))
    assert orders0["committed"]["count"] == 1 and orders0["aborted"]["count"] == 1
    assert orders0["aborted"]["records"] == 3
    assert [f["kind"] for p in objs if p["object"] == "partition" for f in p["findings"]] == \
        ["txn_coordinator_mismatch"]        # the hanging one; .txnindex and snapshots agree


def test_txn_last_stable_offset_is_the_brokers(recorded):
    logs, seen = recorded
    _, objs = _kdump_json("txn", str(logs))
    ours = {f"{p['topic']}-{p['partition']}": p["last_stable_offset"] for p in objs
            if p["object"] == "partition" and p["topic"] in ("orders", "payments")}
    assert ours == seen["lso"]
    assert seen["lso"]["payments-0"] == 0        # held at the hanging transaction's first offset


def test_groups_committed_offsets_are_consumer_group_commands(recorded):
    logs, seen = recorded
    theirs = {(r[0], r[1], int(r[2])): (int(r[3]), int(r[4]), int(r[5]))
              for r in _rows(seen["groups"], "GROUP") if r[2].isdigit()}
    assert {g for g, _, _ in theirs} == {"g-classic", "g-new"}
    _, objs = _kdump_json("groups", str(logs))
    ours = {(g["group_id"], o["topic"], o["partition"]): (o["offset"], o["log_end_offset"], o["lag"])
            for g in objs if g["object"] == "group" for o in g["offsets"]}
    assert ours == theirs
    protocols = {g["group_id"]: g["protocol"] for g in objs if g["object"] == "group"}
    assert protocols == {"g-classic": "classic", "g-new": "consumer"}


def test_groups_names_the_coordinator_partition(recorded):
    logs, _ = recorded
    _, objs = _kdump_json("groups", str(logs), "--group", "g-new")
    header, group = objs
    assert header["partitions"] == 3 and header["partitions_from"] == "__cluster_metadata"
    assert group["coordinator_partition"] == header["coordinator_partition"]


def _dynamic_configs(text: str) -> dict[str, dict[str, str]]:
    """ConfigCommand --describe: 'Dynamic configs for topic X are:' then '  k=v sensitive=... synonyms=...'."""
    out: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("Default configs for"):
            current = out.setdefault("", {})
        elif line.startswith("Dynamic configs for"):
            current = out.setdefault(line.split(" are:")[0].split()[-1], {})
        elif current is not None and line.startswith("  ") and "=" in line:
            key, value = line.strip().split(" sensitive=")[0].split("=", 1)
            current[key] = value
    return out


def test_metadata_matches_topic_and_config_commands(recorded):
    logs, seen = recorded
    if seen["noisy_rounds"]:
        warnings.warn(f"the metadata changed while Kafka's tools were asked; asked again: {seen['noisy_rounds']}")
    theirs_parts, theirs_topics = {}, {}
    for line in seen["topics"].splitlines():
        fields = dict(zip(line.split()[::2], line.split()[1::2]))
        if "PartitionCount:" in fields:
            theirs_topics[fields["Topic:"]] = (fields["TopicId:"], int(fields["PartitionCount:"]))
        elif "Partition:" in fields:
            theirs_parts[(fields["Topic:"], int(fields["Partition:"]))] = (
                int(fields["Leader:"]), fields["Replicas:"], fields["Isr:"])
    assert len(theirs_parts) == 4
    rc, objs = _kdump_json("metadata", str(logs), "--at", f"@{seen['at']}")
    assert rc == 0
    topics = {o["name"]: o for o in objs if o["object"] == "topic"}
    assert {name: (topics[name]["topic_id"], len(topics[name]["partitions"])) for name in theirs_topics} == \
        theirs_topics
    ours_parts = {(name, p["partition"]): (p["leader"], ",".join(map(str, p["replicas"])),
                                           ",".join(map(str, p["isr"])))
                  for name in theirs_topics for p in topics[name]["partitions"]}
    assert ours_parts == theirs_parts
    # Dynamic topic configs (what the controller stores), for every topic, internal ones too.
    ours_configs = {o["resource_name"]: o["configs"] for o in objs
                    if o["object"] == "config" and o["resource_type"] == "topic"}
    theirs_configs = {k: v for k, v in _dynamic_configs(seen["configs"]).items() if v}
    assert ours_configs == theirs_configs
    assert theirs_configs["payments"] == {"retention.ms": "86400000", "max.message.bytes": "200000"}
    ours_defaults = next(o["configs"] for o in objs if o["object"] == "config" and o["resource_type"] == "broker"
                         and o["resource_name"] == "")
    assert ours_defaults == _dynamic_configs(seen["defaults"])[""]


def test_metadata_after_shutdown_shows_no_leader(recorded):
    """At the end of the log the broker had shut down: a single replica leaves no leader
    (its partitions keep it only as an eligible leader replica, KIP-966)."""
    logs, _ = recorded
    rc, objs = _kdump_json("metadata", str(logs))
    assert rc == 0
    orders = next(o for o in objs if o["object"] == "topic" and o["name"] == "orders")
    assert {p["leader"] for p in orders["partitions"]} == {-1}
    assert [b["fenced"] for b in objs if b["object"] == "broker"] in ([], [True])
