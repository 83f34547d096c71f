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

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import kafka_jars
from broker import DEFAULT_CONFIG, KafkaBroker

from kdumptest import run_kdump

pytestmark = pytest.mark.slow

INTERVAL = int(DEFAULT_CONFIG["log.index.interval.bytes"])
# A full index rolls the segment: with 80-byte indexes, one every ~5 KB here (segment.bytes
# may not go below 1 MiB in Kafka 4).
TOPIC_CONFIG = {"segment.index.bytes": "80"}
RECORDS = 200


# -- damage, one kind per partition ----------------------------------------------------------------

def _logs(d: Path) -> list[Path]:
    return sorted(d.glob("*.log"))


def _middle(d: Path) -> Path:
    logs = _logs(d)
    return logs[len(logs) // 2]


def _batches(log: Path):
    from kdump.format.walk import Walker

    return list(Walker(log.read_bytes()))


def _patch(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def _middle_batch(log: Path):
    bs = _batches(log)
    return bs[len(bs) // 2]


def torn_tail(d, logdir):
    last = _logs(d)[-1]
    os.truncate(last, last.stat().st_size - 7)


def mid_bitflip(d, logdir):
    log = _middle(d)
    b = _middle_batch(log)
    with open(log, "r+b") as f:
        f.seek(b.position + b.size - 1)
        byte = f.read(1)[0]
        f.seek(b.position + b.size - 1)
        f.write(bytes([byte ^ 4]))


def zero_tail(d, logdir):
    with open(_logs(d)[-1], "ab") as f:
        f.write(bytes(3000))


def garbage_tail(d, logdir):
    import random

    with open(_logs(d)[-1], "ab") as f:
        f.write(random.Random(7).randbytes(200))


def absurd_length(d, logdir):
    log = _middle(d)
    _patch(log, _middle_batch(log).position + 8, (0x7FFFFF00).to_bytes(4, "big"))


def magic_3(d, logdir):
    # The magic byte is outside the v2 CRC: the broker reads the batch as v2 and keeps it.
    log = _middle(d)
    _patch(log, _middle_batch(log).position + 16, b"\x03")


def missing_index(d, logdir):
    _middle(d).with_suffix(".index").unlink()


def missing_timeindex(d, logdir):
    _middle(d).with_suffix(".timeindex").unlink()


def corrupt_index(d, logdir):
    idx = _middle(d).with_suffix(".index")
    idx.write_bytes(bytes(range(7, 7 + idx.stat().st_size)))


def stale_epochs(d, logdir):
    ck = d / "leader-epoch-checkpoint"
    lines = ck.read_text().split("\n")
    entries = [ln for ln in lines[2:] if ln.strip()] + ["9 100000"]
    ck.write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")


def leftover_cleaned(d, logdir):
    first = _logs(d)[0]
    shutil.copy(first, first.with_name(first.name + ".cleaned"))


def leftover_deleted(d, logdir):
    log = _middle(d)
    shutil.copy(log, log.with_name(log.name + ".deleted"))


def leftover_swap(d, logdir):
    # A cleaner's output not yet swapped in: same content as the segment it replaces.
    log = _middle(d)
    shutil.copy(log, log.with_name(log.name + ".swap"))


def orphan_index(d, logdir):
    shutil.copy(_logs(d)[0].with_suffix(".index"), d / f"{99999:020d}.index")


def corrupt_snapshot(d, logdir):
    snaps = sorted(d.glob("*.snapshot"))
    snap = snaps[len(snaps) // 2]
    snap.write_bytes(snap.read_bytes()[:10] + b"\xff" * 20)


def nothing(d, logdir):
    pass


@dataclass(frozen=True)
class Case:
    name: str
    harm: object
    recovery_point: int | None = None     # None: keep the checkpointed one (the log end)
    log_start: int | None = None
    txn: bool = False
    expect: str = "kept"      # what the broker does to the .log files: kept | cut | cut_and_delete
    damage: bool = False      # kdump verify's verdict on the damaged partition (exit status 1)
    stays: bool = False       # damage the broker's recovery leaves in place (it keeps or does not look)


CASES = [
    Case("control", nothing),
    Case("torn_tail", torn_tail, expect="cut", damage=True),
    Case("zero_tail", zero_tail, expect="cut", damage=True),
    Case("garbage_tail", garbage_tail, expect="cut", damage=True),
    Case("mid_bitflip", mid_bitflip, recovery_point=0, expect="cut_and_delete", damage=True),
    Case("mid_bitflip_below_recovery_point", mid_bitflip, damage=True, stays=True),
    Case("absurd_length", absurd_length, recovery_point=0, expect="cut_and_delete", damage=True),
    Case("magic_3", magic_3, recovery_point=0, damage=True, stays=True),
    Case("missing_index", missing_index),
    Case("missing_timeindex", missing_timeindex),
    Case("corrupt_index_recovered", corrupt_index, recovery_point=0, damage=True),
    Case("stale_epochs", stale_epochs),
    Case("log_start_above_end", nothing, log_start=100000, damage=True),
    Case("leftover_cleaned", leftover_cleaned),
    Case("leftover_deleted", leftover_deleted),
    Case("leftover_swap", leftover_swap),
    Case("orphan_index", orphan_index),
    Case("corrupt_snapshot", corrupt_snapshot),     # the broker never reads it: an anomaly
    Case("txn_control", nothing, txn=True),
    Case("txn_mid_bitflip", mid_bitflip, recovery_point=0, txn=True, expect="cut_and_delete", damage=True),
    Case("txn_torn_tail", torn_tail, txn=True, expect="cut", damage=True),
]
PLAIN = [c for c in CASES if not c.txn]
TXN = [c for c in CASES if c.txn]


def partition_of(case: Case) -> str:
    group = TXN if case.txn else PLAIN
    return f"{'txn' if case.txn else 'plain'}-{group.index(case)}"


# -- the source: a broker writes it --------------------------------------------------------------

def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("plain", len(PLAIN), 1, topic_configs=TOPIC_CONFIG),
                         NewTopic("txn", len(TXN), 1, topic_configs=TOPIC_CONFIG)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2)
    for i in range(RECORDS):
        for p in range(len(PLAIN)):
            producer.send("plain", key=b"k%d" % i, value=b"v%d-" % i + b"x" * 100, partition=p)
        if i % 7 == 6:
            producer.flush()
    producer.flush()
    producer.close()
    tx = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="parity", acks="all")
    tx.init_transactions()
    for n in range(RECORDS // 8):
        tx.begin_transaction()
        for i in range(8):
            for p in range(len(TXN)):
                tx.send("txn", key=b"t%d" % i, value=b"y" * 100, partition=p)
        tx.flush()
        if n % 3 == 1:
            tx.abort_transaction()
        else:
            tx.commit_transaction()
    tx.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("parity-source")
    broker = KafkaBroker(root / "logs", work_dir=root / "work")
    try:
        broker.start()
        _produce(broker.bootstrap)
        broker.stop()
    finally:
        broker.kill()
    return root / "logs"


def _set_checkpoint(path: Path, values: dict[str, int]) -> None:
    lines = path.read_text().split("\n")
    entries = {}
    for ln in lines[2:]:
        if ln.strip():
            t, p, o = ln.split()
            entries[f"{t}-{p}"] = o
    entries.update({k: str(v) for k, v in values.items()})
    body = [f"{k.rsplit('-', 1)[0]} {k.rsplit('-', 1)[1]} {v}" for k, v in entries.items()]
    path.write_text("\n".join(["0", str(len(body)), *body]) + "\n")


@dataclass
class Outcome:
    before: Path          # the damaged tree both started from
    a: Path               # after kdump recover --apply
    b: Path               # after the broker's recovery
    plan: list[dict]
    broker_log: str


@pytest.fixture(scope="module")
def outcome(source, tmp_path_factory) -> Outcome:
    root = tmp_path_factory.mktemp("parity-run")
    before = root / "before"
    shutil.copytree(source, before)
    (before / ".kafka_cleanshutdown").unlink()
    for case in CASES:
        case.harm(before / partition_of(case), before)
    _set_checkpoint(before / "recovery-point-offset-checkpoint",
                    {partition_of(c): c.recovery_point for c in CASES if c.recovery_point is not None})
    _set_checkpoint(before / "log-start-offset-checkpoint",
                    {partition_of(c): c.log_start for c in CASES if c.log_start is not None})
    a, b = root / "a", root / "b"
    shutil.copytree(before, a)
    shutil.copytree(before, b)
    r = run_kdump("recover", "--json", "--index-interval-bytes", INTERVAL, a)
    assert r.code in (0, 1), r.err
    plan = [json.loads(line) for line in r.out.splitlines()]
    r = run_kdump("recover", "--apply", "--yes", "--index-interval-bytes", INTERVAL, a)
    assert r.code in (0, 1), r.err
    broker = KafkaBroker(b, work_dir=root / "work")
    try:
        broker.start()
        broker.stop()
    finally:
        broker.kill()
    return Outcome(before, a, b, plan, broker.log_file.read_text(errors="replace"))


# -- comparing -----------------------------------------------------------------------------------

def _live(d: Path, ext: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.glob(f"*{ext}") if p.is_file()}


def _epochs(d: Path) -> list[tuple[int, int]]:
    ck = d / "leader-epoch-checkpoint"
    if not ck.exists():
        return []
    return [tuple(map(int, ln.split())) for ln in ck.read_text().split("\n")[2:] if ln.strip()]


def _log_end(d: Path) -> int | None:
    from kdump.scan import scan_file

    logs = _logs(d)
    if not logs:
        return None
    s = scan_file(str(logs[-1]), base_offset=int(logs[-1].stem))
    return s.next_offset if s.next_offset is not None else int(logs[-1].stem)


def _index_entries(path: Path, kind: str, base: int):
    from kdump.format.index import parse_index
    from kdump.format.timeindex import parse_timeindex
    from kdump.indexcheck import live_entries

    parsed = (parse_index if kind == ".index" else parse_timeindex)(path.read_bytes(), base)
    return live_entries(parsed)[0]


def _rebuilt(log: Path, base: int, ext: str) -> bytes:
    from kdump.check.broker_rule import build_indexes
    from kdump.format.index import encode_index
    from kdump.format.timeindex import encode_timeindex

    offsets, times, _ = build_indexes(log.read_bytes(), base, INTERVAL)
    return encode_index(offsets, base) if ext == ".index" else encode_timeindex(times, base)


def _rows(o: Outcome, part: str) -> list[dict]:
    return [r for r in o.plan if r.get("partition") and Path(r["partition"]).name == part]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kdump_recover_matches_the_broker(outcome, case):
    part = partition_of(case)
    pa, pb, p0 = outcome.a / part, outcome.b / part, outcome.before / part
    logs_a, logs_b, logs_0 = _live(pa, ".log"), _live(pb, ".log"), _live(p0, ".log")
    if case.log_start is not None:
        # The broker deletes every segment and starts an empty one at the log start offset;
        # kdump moves them all into quarantine and leaves the new segment to the broker.
        assert logs_b == {f"{case.log_start:020d}.log": b""}
        assert logs_a == {}
    else:
        assert logs_a.keys() == logs_b.keys()
        for name in logs_a:
            assert logs_a[name] == logs_b[name], f"{part}/{name} differs"
    # The plan predicted the broker's cuts and deletions.
    rows = _rows(outcome, part)
    planned_cuts = {(Path(r["file"]).name, r["position"]) for r in rows if r["action"] == "truncate"}
    broker_cuts = {(n, len(logs_b[n])) for n in logs_0 if n in logs_b and len(logs_b[n]) < len(logs_0[n])}
    assert planned_cuts == broker_cuts
    renamed = {r["target"] for r in rows if r["action"] == "rename"}
    planned_gone = {Path(r["file"]).name for r in rows if r["action"] == "quarantine" and r["file"].endswith(".log")}
    assert planned_gone - renamed == set(logs_0) - set(logs_b)
    if case.log_start is None:
        assert bool(broker_cuts) == (case.expect != "kept")
        assert bool(set(logs_0) - set(logs_b)) == (case.expect == "cut_and_delete")
    # Nothing is lost in A: what was cut is saved beside the segment, what went is in quarantine.
    quarantined = {p.name for q in pa.glob("kdump-quarantine-*") for p in q.iterdir()}
    assert set(logs_0) - set(logs_a) <= quarantined
    for name, position in planned_cuts:
        assert (pa / f"{name}.corrupt-{position}").read_bytes() == logs_0[name][position:]
    _compare_indexes(outcome, case, pa, pb, p0)
    # Leader epochs: the same below the log end (the restarted broker adds its leadership there).
    leo = _log_end(pb)
    if leo is not None:
        assert [e for e in _epochs(pa) if e[1] < leo] == [e for e in _epochs(pb) if e[1] < leo]
    # Producer snapshots: kdump keeps those at or below the log end that the plan does not
    # move away (the broker deletes them too: past the end, replaced by a swap, all of them
    # when the log start is above the end), unchanged; it writes none.
    snaps_a, snaps_0 = _live(pa, ".snapshot"), _live(p0, ".snapshot")
    gone = {Path(r["file"]).name for r in rows if r["action"] == "quarantine"}
    bound = leo if leo is not None else -1
    assert snaps_a == {n: v for n, v in snaps_0.items() if int(n[:20]) <= bound and n not in gone}
    assert not gone & set(_live(pb, ".snapshot")) - {f"{leo:020d}.snapshot"}


def _compare_indexes(outcome, case, pa: Path, pb: Path, p0: Path) -> None:
    rows = _rows(outcome, pa.name)
    rebuilt = {Path(r["file"]).name for r in rows if r["action"] == "rebuild_index"}
    if case.log_start is not None:
        return          # no segment left in A; the broker's new one is empty
    for log in _logs(pb):
        base = int(log.stem)
        for ext in (".index", ".timeindex"):
            name = f"{base:020d}{ext}"
            fa, fb, f0 = pa / name, pb / name, p0 / name
            if not fa.exists():
                # Departure: the broker creates an empty .timeindex for a segment it does not
                # recover; kdump does not create files.
                assert case.harm is missing_timeindex and fb.read_bytes() == b""
                continue
            if fa.read_bytes() == fb.read_bytes():
                continue
            if case.harm is leftover_swap and name in rebuilt:
                # Departure: opening the .log.swap materializes an empty index beside it, which
                # the swap renames into place; the broker then keeps that zero-filled .index and
                # empty .timeindex. kdump rebuilds both from the log.
                assert not fb.read_bytes().strip(b"\0")
                assert fa.read_bytes() == _rebuilt(pa / log.name, base, ext)
                continue
            # kdump kept the old file because it agreed with the log: the broker's rebuild
            # holds the same entries (it may differ in the zero tail a live index keeps).
            assert name not in rebuilt, f"{name}: kdump rebuilt it differently from the broker"
            assert fa.read_bytes() == f0.read_bytes() if f0.exists() else True
            assert _index_entries(fa, ext, base) == _index_entries(fb, ext, base), name


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
