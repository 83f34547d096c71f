"""Recovery parity: `kdump recover` against a real Kafka broker starting on the same bytes.

One broker writes the source log dir (plain and transactional partitions, several segments
each), then stops cleanly. A copy of it gets one kind of damage per partition and loses its
clean-shutdown marker. That damaged tree is copied twice: `kdump recover` plans (copy A, then
`--apply --yes`), and a real broker starts on copy B, recovers it, and stops cleanly. Each
partition is then compared, one test per case:

- the same live segments, each `.log` byte-identical (so the same truncation points), and
  the plan predicted exactly the cuts and deletions the broker made;
- the `.index`/`.timeindex` of every segment the broker rebuilt are byte-identical in A
  (where kdump rebuilt them too), or carry the same entries (where kdump found the old file
  agreeing and kept it: a broker writes the same entries when it appends one batch at a
  time, as here). Segments the broker did not recover must be untouched in both;
- leader-epoch entries below the log end offset are the same (the restarted broker adds
  its new leadership at the log end);
- producer snapshots: kdump keeps those at or below the new log end, unchanged.

Named departures, tested to stay within them: kdump moves into a quarantine folder what the
broker deletes, and saves the bytes it cuts as `<segment>.corrupt-<position>`; it does not
create the empty files a broker makes on load (an empty `.timeindex`, the empty segment at
the log start offset after deleting everything), does not rewrite `.txnindex` files, and does
not write producer snapshots (the broker rebuilds producer state from the log at startup).
After finishing an interrupted swap, kdump rebuilds the indexes of the swapped-in segment,
where the broker keeps the empty ones it made while opening the `.swap` file.

All cases share one broker start for the source and one for the recovery (~5-10 s each).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import kafka_jars
import pytest
from broker import KafkaBroker
from kdumptest import run_kdump
from parity_cases import CASES, partition_of, produce, set_checkpoint
from parity_compare import Outcome, compare_partition, run_both

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
    return run_both(before, root)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kdump_recover_matches_the_broker(outcome, case):
    compare_partition(outcome, partition_of(case), case)


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
    where the broker leaves the damage in place."""
    part = partition_of(case)
    r = run_kdump("verify", "--json", outcome.before / part)
    assert r.code == (1 if case.damage else 0), r.out
    if case.expect != "kept" or case.log_start is not None:
        assert case.damage
    for tree in (outcome.a, outcome.b):
        r = run_kdump("verify", tree / part)
        assert r.code == (1 if case.stays else 0), r.out
