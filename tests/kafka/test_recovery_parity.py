"""Recovery parity: `kdump recover` against a real Kafka broker starting on the same bytes.

One broker writes the source log dir (plain and transactional partitions, several segments
each), then stops cleanly. A copy of it gets one kind of damage per partition and loses its
clean-shutdown marker. That damaged tree is copied twice: `kdump recover` plans (copy A, then
`--apply --yes`), and a real broker starts on copy B, recovers it, and stops cleanly. Each
partition is then compared, one test per case:

- the same live segments, each `.log` byte-identical (so the same truncation points), and
  the plan predicted exactly the cuts and deletions the broker made;
- the `.txnindex` of every live segment is byte-identical (kdump writes what recovery writes);
- the `.index`/`.timeindex` of every segment the broker rebuilt are byte-identical in A
  (where kdump rebuilt them too), or carry the same entries (where kdump found the old file
  agreeing and kept it: a broker writes the same entries when it appends one batch at a
  time, as here). Segments the broker did not recover must be untouched in both;
- leader-epoch entries below the log end offset are the same (the restarted broker adds
  its new leadership at the log end; kdump also keeps an entry starting exactly there);
- producer snapshots: kdump keeps those at or below the new log end, unchanged.

Named departures, tested to stay within them: kdump moves into a quarantine folder what the
broker deletes, and saves the bytes it cuts as `<segment>.corrupt-<position>`; it does not
create the empty files a broker makes on load (an empty `.timeindex`, a missing
leader-epoch-checkpoint), and does not write producer snapshots (the broker rebuilds producer
state from the log at startup).
After finishing an interrupted swap, kdump rebuilds the indexes of the swapped-in segment,
where the broker keeps the empty ones it made while opening the `.swap` file.

The per-partition cases share one broker start for the source and one for the recovery
(~5-10 s each); the log-dir-wide cases (a lost recovery point, a malformed epoch checkpoint)
and the SIGKILL runs start their own.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import kafka_jars
import pytest
from broker import KafkaBroker
from parity_cases import CASES, TOPIC_CONFIG, Case, mid_bitflip, nothing, partition_of, produce, set_checkpoint
from parity_compare import Outcome, compare_partition, run_both

from support.run import run_kdump

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("parity-source")
    broker = KafkaBroker(root / "logs", work_dir=root / "work")
    try:
        broker.start()
        produce(broker.bootstrap)
        broker.stop()
    finally:
        broker.kill()
    return root / "logs"


@pytest.fixture(scope="module")
def outcome(source, tmp_path_factory) -> Outcome:
    root = tmp_path_factory.mktemp("parity-run")
    before = root / "before"
    shutil.copytree(source, before)
    (before / ".kafka_cleanshutdown").unlink()
    for case in CASES:
        case.harm(before / partition_of(case), before)
    set_checkpoint(before / "recovery-point-offset-checkpoint",
                   {partition_of(c): c.recovery_point for c in CASES if c.recovery_point is not None})
    set_checkpoint(before / "log-start-offset-checkpoint",
                   {partition_of(c): c.log_start for c in CASES if c.log_start is not None})
    return run_both(before, root, truncate=True)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kdump_recover_matches_the_broker(outcome, case):
    compare_partition(outcome, partition_of(case), case)


@pytest.mark.parametrize("case", [c for c in CASES if c.expect != "kept" and c.log_start is None],
                         ids=lambda c: c.name)
def test_verify_truncate_cuts_as_the_broker_does(outcome, case):
    """verify --truncate --broker-cut on the same damage keeps exactly the segments and bytes
    the broker keeps: later segments go into quarantine, no offset gap is left unless the broker
    leaves one (a segment it cuts where it opens it: the later ones stay)."""
    part = partition_of(case)
    pc, pb = outcome.c / part, outcome.b / part
    assert {p.name: p.read_bytes() for p in pc.glob("*.log")} == {p.name: p.read_bytes() for p in pb.glob("*.log")}
    gone = {p.name for p in (outcome.before / part).glob("*.log")} - {p.name for p in pc.glob("*.log")}
    assert gone <= {p.name for q in pc.glob("kdump-quarantine-*") for p in q.iterdir()}
    assert run_kdump("verify", pc).code == (1 if case.stays else 0)


def test_recovery_rebuilds_a_lagging_leader_epoch_checkpoint(outcome):
    """Both assign the epochs of the batches recovery reads to an empty checkpoint."""
    part = partition_of(next(c for c in CASES if c.name == "lagging_epochs"))
    assert any(r["action"] == "trim_epochs" for r in outcome.plan if r.get("partition", "").endswith(part))
    text = (outcome.a / part / "leader-epoch-checkpoint").read_text()
    assert text.startswith("0\n1\n0 ") and text != "0\n0\n"


def test_the_broker_saw_the_damage(outcome):
    """The broker's own log names the corruption it cut: the cases are not vacuous."""
    assert "Corruption found in segment" in outcome.broker_log or "Found invalid messages" in outcome.broker_log
    assert "Deleting all segments because logEndOffset" in outcome.broker_log


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verify_classes_follow_the_broker(outcome, case):
    """kdump verify's verdict on each damaged partition, decided by what the broker did: exit 1
    where it cut, deleted, or left data readers lose (a magic-3 batch it keeps, damage below
    the recovery point it does not look at, a corrupt index, a snapshot it discards); exit 0
    for states it finishes or accepts (leftovers, orphans, a missing index it rebuilds, stale
    epochs). Then the trees after recovery, the broker's and kdump's, verify clean except
    where the broker leaves the damage in place. The summary's loss is the bytes of .log the
    broker removed."""
    part = partition_of(case)
    r = run_kdump("verify", "--json", outcome.before / part)
    assert r.code == (1 if case.damage else 0), r.out
    # The summary's loss is the bytes of .log the broker removed (cut, or deleted whole).
    if case.log_start is None:
        assert _said_removed(r.err) == _log_bytes(outcome.before / part) - _log_bytes(outcome.b / part), r.err
    if case.name == "mid_bitflip_below_recovery_point":
        assert "1 damaged segment before the recovery point is not recovered" in r.err, r.err
    if case.finding is not None:
        assert f'"kind":"{case.finding}"' in r.out
    if case.expect != "kept" or case.log_start is not None:
        assert case.damage
    for tree in (outcome.a, outcome.b):
        r = run_kdump("verify", tree / part)
        assert r.code == (1 if case.stays else 0), r.out


def _said_removed(summary: str) -> int:
    """The bytes verify's summary says a broker's recovery would remove (0: it says none)."""
    m = re.search(r"a broker's recovery would remove ([^:(]+?)(?: \((\d+) bytes\))?:", summary)
    return 0 if m is None else int(m.group(2) or m.group(1).split()[0])


def _log_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.glob("*.log"))


# -- what the broker reads from the log dir --------------------------------------------------------

def _fresh_copy(source: Path, root: Path) -> Path:
    before = root / "before"
    shutil.copytree(source, before)
    (before / ".kafka_cleanshutdown").unlink()
    return before


def _undamaged(name: str) -> Case:
    return Case(name, nothing)


LOST_RECOVERY_POINT = {
    "missing": lambda d: (d / "recovery-point-offset-checkpoint").unlink(),
    "corrupt": lambda d: (d / "recovery-point-offset-checkpoint").write_text("0\n3\nnot a checkpoint\n"),
}


@pytest.mark.parametrize("how", sorted(LOST_RECOVERY_POINT))
def test_a_lost_recovery_point_makes_both_recover_every_segment(source, tmp_path, how):
    """No usable recovery-point-offset-checkpoint: the broker falls back to 0 and recovers every
    segment, so damage in a middle segment (below the old recovery point) is cut and what
    follows deleted; kdump plans the same. The checkpoint itself is an anomaly for verify."""
    before = _fresh_copy(source, tmp_path)
    part = partition_of(CASES[0])             # the control partition of the main run
    mid_bitflip(before / part, before)
    LOST_RECOVERY_POINT[how](before)
    if how == "corrupt":
        r = run_kdump("verify", "--json", before / "recovery-point-offset-checkpoint")
        assert r.code == 0 and '"kind":"checkpoint_invalid","class":"anomaly"' in r.out
    o = run_both(before, tmp_path)
    compare_partition(o, part, Case("lost", mid_bitflip, expect="cut_and_delete", damage=True))
    for other in sorted(p.name for p in before.iterdir() if p.name.startswith(("plain-", "txn-"))):
        if other != part:
            compare_partition(o, other, _undamaged(other))


def test_a_malformed_leader_epoch_checkpoint_stops_the_broker(source, tmp_path):
    """Why leader_epoch_invalid is damage: the broker does not start ("Error starting LogManager")."""
    before = _fresh_copy(source, tmp_path)
    part = partition_of(CASES[0])
    (before / part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\nbad line\n")
    r = run_kdump("verify", "--json", before / part)
    assert r.code == 1 and '"kind":"leader_epoch_invalid","class":"damage"' in r.out
    broker = KafkaBroker(before, work_dir=tmp_path / "work")
    try:
        with pytest.raises(RuntimeError, match="exited"):
            broker.start(timeout=120)
    finally:
        broker.kill()
    assert "Error starting LogManager" in broker.log_file.read_text(errors="replace")


# -- a broker killed while producing -----------------------------------------------------------------

PRODUCER = """
import sys
from kafka import KafkaProducer
bootstrap, transactional = sys.argv[1], sys.argv[2] == "txn"
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2,
                         transactional_id="killed" if transactional else None)
if transactional:
    producer.init_transactions()
sent = 0
while True:
    if transactional:
        producer.begin_transaction()
    for i in range(10):
        producer.send("killed", key=b"k%d" % i, value=b"z" * 120, partition=i % 2)
    producer.flush()
    if transactional:
        producer.commit_transaction()
    sent += 10
    print(sent, flush=True)
"""


def _produce_until_killed(broker: KafkaBroker, transactional: bool) -> None:
    """A producer (its own process) writes until the broker is SIGKILLed under it."""
    import subprocess
    import sys

    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("killed", 2, 1, topic_configs=TOPIC_CONFIG)])
    admin.close()
    proc = subprocess.Popen([sys.executable, "-c", PRODUCER, broker.bootstrap, "txn" if transactional else "plain"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sent = 0
    try:
        for line in proc.stdout:
            sent = int(line)
            if sent >= 600:
                break
        broker.kill()           # SIGKILL in the middle of producing
    finally:
        proc.kill()
        proc.wait()
    assert sent >= 600


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_a_broker_killed_while_producing(tmp_path, transactional):
    kafka_jars.ensure_jars()
    logs = tmp_path / "logs"
    broker = KafkaBroker(logs, work_dir=tmp_path / "source-work")
    try:
        broker.start()
        _produce_until_killed(broker, transactional)
    finally:
        broker.kill()
    assert not (logs / ".kafka_cleanshutdown").exists()
    before = tmp_path / "before"
    shutil.copytree(logs, before)
    o = run_both(before, tmp_path)
    for part in ("killed-0", "killed-1"):
        compare_partition(o, part, _undamaged(part))
        for tree in (o.before, o.a, o.b):
            assert run_kdump("verify", tree / part).code == 0
