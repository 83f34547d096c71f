"""`kdump groups` on transactional offset commits against Kafka itself, live.

A broker takes the six shapes of tests/kafka/txn_offsets.py (commit, abort, open, a plain
commit before the COMMIT marker, an OffsetDelete tombstone while the transaction is open,
a producer killed mid transaction). While it runs, ConsumerGroupCommand --describe says
what the coordinator serves; the broker is stopped and kdump, run on its files, must give
the same committed offsets, and the two open transactions' commits as pending, with the
producer ids __transaction_state gives them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import kafka_jars
import pytest
import txn_offsets

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from broker import KafkaBroker

    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("txn-offsets")
    broker = KafkaBroker(root / "logs", work_dir=root / "work", config={"auto.create.topics.enable": "false"})
    left = []
    try:
        broker.start()
        seen = txn_offsets.run(broker.bootstrap)
        left = seen["left"]
        broker.stop()
    finally:
        broker.kill()
        for t in left:
            t.kill()
    return broker.log_dir, seen["describe"]


def _kdump_json(*args) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "kdump", *args, "--json", "--quiet"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_committed_offsets_are_consumer_group_commands(recorded):
    logs, describe = recorded
    theirs = txn_offsets.describe_rows(describe)
    assert theirs == {("g-abort", "src", 0): 50, ("g-commit", "src", 0): 100, ("g-crash", "src", 0): 50,
                      ("g-open", "src", 0): 50, ("g-plain-after", "src", 0): 200}
    groups = [o for o in _kdump_json("groups", str(logs)) if o["object"] == "group"]
    ours = {(g["group_id"], o["topic"], o["partition"]): o["offset"] for g in groups for o in g["offsets"]}
    assert ours == theirs
    assert {g["group_id"] for g in groups} == set(txn_offsets.GROUPS)


def test_open_transactions_commits_are_pending_with_their_producer_ids(recorded):
    logs, _ = recorded
    groups = {o["group_id"]: o for o in _kdump_json("groups", str(logs)) if o["object"] == "group"}
    ids = {o["transactional_id"]: (o["producer_id"], o["state"])
           for o in _kdump_json("txn", str(logs)) if o["object"] == "transactional_id"}
    pending = {gid: [(o["offset"], o["producer_id"]) for o in g["pending_offsets"]]
               for gid, g in groups.items() if g["pending_offsets"]}
    assert pending == {"g-open": [(100, ids["t-open"][0])], "g-crash": [(100, ids["t-crash"][0])]}
    assert ids["t-open"][1] == ids["t-crash"][1] == "Ongoing"
