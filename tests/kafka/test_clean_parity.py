"""Load parity on both shutdown paths: `kdump recover` (no --full) against Kafka 4.3.1's own load.

Every real broker-written partition of fixtures/broker/ gets each damage kind of the recovery
parity suite (and those of the clean path: a flipped record byte in the first batch, a batch
torn at the last index entry, a garbage or partial active index, stray snapshots, a zero
length), in a log dir that keeps its `.kafka_cleanshutdown` marker or loses it, with its
recovery-point checkpoint as the broker wrote it, at 0, missing or unreadable. Each damaged
tree is copied twice: `kdump recover --apply` runs on copy A, and Kafka's `UnifiedLog.create`
(tests/kafka/LoadLogs.java, as LogManager loads a log at a broker's start) loads copy B and
closes it, as a clean stop does. Per partition:

- Kafka fails to load it: kdump's plan says so with Kafka's exception text, and changes no
  `.log`;
- otherwise the same live segments, each `.log` byte-identical; the log end offset kdump
  reports is Kafka's; the `.index`/`.timeindex` of every segment are byte-identical, or
  (where Kafka rebuilt an index that kdump found agreeing and kept) hold the same entries;
- pre-existing producer snapshots: kdump keeps exactly those that Kafka kept (the same bytes
  after the load), deletes those Kafka deleted, and may keep or drop those that Kafka deleted
  and wrote anew (it writes none);
- and, whatever else differs: A keeps at least every byte of every segment Kafka keeps.

Named departures (as in test_recovery_parity.py): kdump creates no empty `.timeindex` for a
segment missing one, and after finishing a swap rebuilds the indexes the broker leaves empty.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import load_logs
import pytest
from parity_cases import (
    absurd_length,
    absurd_length_last,
    corrupt_index,
    corrupt_snapshot,
    corrupt_txnindex,
    first_batch_flip,
    garbage_active_index,
    garbage_tail,
    lagging_epochs,
    leftover_cleaned,
    leftover_deleted,
    leftover_swap,
    magic_3,
    mid_bitflip,
    missing_index,
    missing_middle_log,
    missing_timeindex,
    missing_txnindex,
    no_log_left,
    nothing,
    orphan_index,
    overlap_after_clean,
    partial_index_entry,
    set_checkpoint,
    stale_epochs,
    stray_snapshots,
    torn_at_last_index_entry,
    torn_tail,
    zero_size_mid,
    zero_tail,
)

from support.run import run_kdump

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TREES = ("all-shapes", "txn-offsets", "cleaner-crash")
HARMS = [nothing, torn_tail, zero_tail, garbage_tail, mid_bitflip, first_batch_flip, absurd_length,
         absurd_length_last, zero_size_mid, magic_3, missing_index, missing_timeindex, corrupt_index,
         garbage_active_index, partial_index_entry, torn_at_last_index_entry, stale_epochs, leftover_cleaned,
         leftover_deleted, leftover_swap, orphan_index, corrupt_snapshot, stray_snapshots, lagging_epochs,
         overlap_after_clean, missing_txnindex, corrupt_txnindex, missing_middle_log, no_log_left]
# What the log dir's recovery-point-offset-checkpoint says: as written, 0, gone, unreadable, or
# each partition twice, past its log end and then 0 (a map filled in order: the last counts).
CHECKPOINTS = ("as_written", "zero", "missing", "unreadable", "duplicate")
KINDS = [(h.__name__, "as_written") for h in HARMS] + [(n, c) for n in ("nothing", "mid_bitflip", "first_batch_flip")
                                                       for c in CHECKPOINTS[1:]] + [
    ("first_batch_flip", "log_start_inside"), ("nothing", "log_start_inside"), ("nothing", "log_start_above"),
    ("first_batch_flip", "log_start_duplicate")]
STATES = ("clean", "unclean")
# Damage that makes even a clean load recover a segment (no .index) or finish a swap.
REBUILT_AT_LOAD = ("missing_index", "leftover_swap", "corrupt_txnindex")


def _partitions(tree: Path) -> list[str]:
    # The KRaft metadata log is not a UnifiedLog (KafkaMetadataLog loads it).
    return sorted(p.name for p in tree.iterdir() if p.is_dir() and p.name[-1].isdigit()
                  and not p.name.startswith("__cluster_metadata"))


def _harm(tree: Path, harm_name: str, checkpoint: str) -> set[str]:
    """Damage every partition of ``tree`` one way; the partitions the damage fits."""
    harm = next(h for h in HARMS if h.__name__ == harm_name)
    fits = set()
    for part in _partitions(tree):
        try:
            harm(tree / part, tree)
            fits.add(part)
        except (IndexError, FileNotFoundError, StopIteration, ValueError):
            pass        # e.g. no .txnindex, one segment where two are needed
    ck = tree / "recovery-point-offset-checkpoint"
    if checkpoint == "log_start_duplicate":
        starts = {p: _log_start(tree / p, "log_start_inside") for p in _partitions(tree)}
        _twice(tree / "log-start-offset-checkpoint", {p: (10 ** 6, v) for p, v in starts.items() if v is not None})
    elif checkpoint.startswith("log_start"):
        starts = {p: _log_start(tree / p, checkpoint) for p in _partitions(tree)}
        set_checkpoint(tree / "log-start-offset-checkpoint", {p: v for p, v in starts.items() if v is not None})
    elif checkpoint == "duplicate":
        _twice(ck, {p: (10 ** 6, 0) for p in _partitions(tree)})
    elif checkpoint == "zero":
        set_checkpoint(ck, dict.fromkeys(_partitions(tree), 0))
    elif checkpoint == "missing":
        ck.unlink()
    elif checkpoint == "unreadable":
        ck.write_text("0\n3\nnot a checkpoint\n")
    return fits


def _twice(path: Path, values: dict[str, tuple[int, int]]) -> None:
    """A checkpoint listing each partition of ``values`` twice, with its first value then its second."""
    body = [f"{k.rsplit('-', 1)[0]} {k.rsplit('-', 1)[1]} {v}" for k, pair in values.items() for v in pair]
    path.write_text("\n".join(["0", str(len(body)), *body]) + "\n")


def _log_start(d: Path, how: str) -> int | None:
    """A log start offset inside the first segment (retention or deleteRecords moved it past
    the first batch), or above the log end (segments deleted by hand)."""
    from kdump.format.walk import Walker

    logs = sorted(d.glob("*.log"))
    if not logs:
        return None
    if how == "log_start_above":
        return 10 ** 6
    first = next(iter(Walker(logs[0].read_bytes())), None)
    return None if first is None else first.last_offset + 1


CASES = [(state, kind, ck, tree, part) for state in STATES for kind, ck in KINDS for tree in TREES
         for part in _partitions(REPO / "fixtures" / "broker" / tree)]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean-parity")
    fits: dict[tuple, set[str]] = {}
    groups = []
    trees_a = []
    for state in STATES:
        for kind, ck in KINDS:
            for tree in TREES:
                before = root / state / f"{kind}-{ck}" / "before" / tree
                shutil.copytree(REPO / "fixtures" / "broker" / tree, before)
                marker = before / ".kafka_cleanshutdown"
                if state == "clean" and not marker.exists():
                    marker.write_text('{"version":0,"brokerEpoch":1}')
                elif state == "unclean" and marker.exists():
                    marker.unlink()
                fits[(state, kind, ck, tree)] = _harm(before, kind, ck)
                a, b = before.parent.parent / "a" / tree, before.parent.parent / "b" / tree
                shutil.copytree(before, a)
                shutil.copytree(before, b)
                trees_a.append(a)
                groups.append((b, state == "clean", _partitions(b)))
    loaded = load_logs.load(groups)
    r = run_kdump("recover", "--json", *trees_a)
    assert r.code in (0, 1, 3), r.err
    plans = {}
    for line in r.out.splitlines():
        row = json.loads(line)
        plans.setdefault(row["partition"], []).append(row)
    r = run_kdump("recover", "--apply", "--yes", *trees_a)
    assert r.code in (0, 1, 3), r.err
    return root, fits, loaded, plans


def _files(d: Path, ext: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.glob(f"*{ext}") if p.is_file()}


def _entries(data: bytes, ext: str, base: int):
    from kdump.check.indexes.index_file import live_entries
    from kdump.format.index import parse_index
    from kdump.format.timeindex import parse_timeindex

    return live_entries((parse_index if ext == ".index" else parse_timeindex)(data, base))[0]


def _paths(outcome, state, kind, ck, tree, part):
    root, fits, loaded, plans = outcome
    case = root / state / f"{kind}-{ck}"
    if part not in fits[(state, kind, ck, tree)]:
        pytest.skip(f"{kind} does not fit {part}")
    p0, pa, pb = (case / x / tree / part for x in ("before", "a", "b"))
    return p0, pa, pb, loaded[str(pb)], plans.get(str(pa), [])


@pytest.mark.parametrize("state,kind,ck,tree,part", CASES, ids=["-".join(c) for c in CASES])
def test_kdump_loads_as_kafka_does(outcome, state, kind, ck, tree, part):
    p0, pa, pb, kafka, rows = _paths(outcome, state, kind, ck, tree, part)
    summary = rows[-1]
    logs_0, logs_a, logs_b = _files(p0, ".log"), _files(pa, ".log"), _files(pb, ".log")
    if kafka.failure is not None:
        assert summary.get("load_failure") == kafka.failure.replace(str(pb), str(pa)), kafka.failure
        assert logs_a == logs_0
        return
    assert summary.get("load_failure") is None, (summary.get("load_failure"), kafka)
    assert logs_a.keys() == logs_b.keys()
    for name in logs_a:
        assert logs_a[name] == logs_b[name], f"{name}: {len(logs_a[name])} bytes kept, Kafka {len(logs_b[name])}"
    assert summary["log_end_offset"] == kafka.log_end_offset
    for name in logs_b:
        base = int(name[:20])
        for ext in (".index", ".timeindex"):
            fa, fb = pa / f"{name[:20]}{ext}", pb / f"{name[:20]}{ext}"
            if not fa.exists():
                assert kind in ("missing_timeindex", "nothing") or not fb.read_bytes(), fa.name
                continue
            da, db = fa.read_bytes(), fb.read_bytes()
            if state == "clean" and kind not in REBUILT_AT_LOAD:
                assert da == db, fa.name        # kept as they are, the active one trimmed to whole entries
            elif da != db and not (kind == "leftover_swap" and not db.strip(b"\0")):
                assert _entries(da, ext, base) == _entries(db, ext, base), fa.name
    snaps_0, snaps_a, snaps_b = _files(p0, ".snapshot"), _files(pa, ".snapshot"), _files(pb, ".snapshot")
    for name, data in snaps_0.items():
        if name not in snaps_b:
            assert name not in snaps_a, f"{name}: Kafka deleted it, kdump kept it"
        elif snaps_b[name] == data:
            assert snaps_a.get(name) == data, f"{name}: Kafka kept it, kdump did not"


@pytest.mark.parametrize("state,kind,ck,tree,part", CASES, ids=["-".join(c) for c in CASES])
def test_recover_never_drops_what_kafka_keeps(outcome, state, kind, ck, tree, part):
    """Never empty a log the broker keeps: every byte of every segment Kafka keeps is in A."""
    p0, pa, pb, kafka, _ = _paths(outcome, state, kind, ck, tree, part)
    logs_a, logs_b = _files(pa, ".log"), _files(pb, ".log")
    for name, data in logs_b.items():
        assert logs_a.get(name, b"").startswith(data), f"{name}: kdump kept {len(logs_a.get(name, b''))} bytes " \
                                                         f"of Kafka's {len(data)}"


def _kafka(outcome, state, kind, ck, tree, part):
    root, _, loaded, _ = outcome
    return loaded[str(root / state / f"{kind}-{ck}" / "b" / tree / part)]


def _before(outcome, state, kind, ck, tree, part) -> Path:
    return outcome[0] / state / f"{kind}-{ck}" / "before" / tree / part


def test_the_seven_classes_are_exercised(outcome):
    """Each class of damage occurs in Kafka's own outcome, so the cases above are not vacuous."""
    parts = _partitions(REPO / "fixtures" / "broker" / "all-shapes")
    intact = {p: _kafka(outcome, "clean", "nothing", "as_written", "all-shapes", p) for p in parts}
    # 1, 2: a record byte flipped in the first batch: Kafka's header walk does not see it and
    # keeps the log end (with the log start past that batch, too), where a CRC scan ends at 0.
    for ck in ("as_written", "log_start_inside"):
        same = [p for p in parts if _kafka(outcome, "clean", "first_batch_flip", ck, "all-shapes", p).log_end_offset
                == intact[p].log_end_offset]
        assert len(same) >= len(parts) - 1, ck
    # 3: torn inside the batch of the last index entry: Kafka falls back to the segment's base.
    torn = [p for p in parts if _kafka(outcome, "clean", "torn_at_last_index_entry", "as_written", "all-shapes",
                                       p).log_end_offset == int(sorted(_before(
                                           outcome, "clean", "torn_at_last_index_entry", "as_written", "all-shapes",
                                           p).glob("*.log"))[-1].stem)]
    assert torn
    # 4: a garbage active index moves Kafka's log end offset.
    assert any(_kafka(outcome, "clean", "garbage_active_index", "as_written", "all-shapes", p).log_end_offset
               != intact[p].log_end_offset for p in parts)
    # 5: a zero tail stops the load.
    failures = {_kafka(outcome, "clean", "zero_tail", "as_written", "all-shapes", p).failure for p in parts}
    assert all(f and f.startswith("CorruptRecordException: Found record size 0 smaller than minimum record "
                                  "overhead (14) in file ") for f in failures)
    # 6: a partial trailing entry of the active index is trimmed.
    b = outcome[0] / "clean" / "partial_index_entry-as_written" / "b" / "all-shapes" / "codec-none-0"
    assert all(p.stat().st_size % 8 == 0 for p in b.glob("*.index"))
    # 7: stray snapshots are deleted, after a clean shutdown or not.
    for state in STATES:
        d = outcome[0] / state / "stray_snapshots-as_written"
        gone = [p for p in (d / "before").rglob("*.snapshot")
                if not (d / "b" / p.relative_to(d / "before")).exists()]
        assert gone, state


def test_verify_says_which_partitions_the_broker_will_not_load(outcome):
    """verify's verdict on the damaged clean log dirs: the partitions Kafka fails to load, each
    with Kafka's exception, exit status 1; no such claim for the others."""
    root, fits, loaded, _ = outcome
    for kind, ck in KINDS:
        tree = root / "clean" / f"{kind}-{ck}" / "before" / "all-shapes"
        r = run_kdump("verify", *(tree / p for p in _partitions(tree)))
        for part in _partitions(tree):
            kafka = _kafka(outcome, "clean", kind, ck, "all-shapes", part)
            claim = f"the broker will not load partition {part}: "
            if kafka.failure is not None:
                assert claim + kafka.failure.replace("/b/", "/before/") in r.err, (kind, part)
                assert r.code == 1
            else:
                assert claim not in r.err, (kind, part, kafka)


def test_verify_names_the_snapshots_kafka_deletes(outcome):
    """verify's snapshot_deleted (or snapshot_stale) is on every pre-existing producer snapshot
    Kafka's load deleted, and on none it kept, on both shutdown paths and every damage kind."""
    import json

    root, fits, _, _ = outcome
    said_somewhere = False
    for state in STATES:
        for kind, ck in KINDS:
            for tree in TREES:
                before = root / state / f"{kind}-{ck}" / "before" / tree
                parts = sorted(fits[(state, kind, ck, tree)])
                if not parts:
                    continue
                r = run_kdump("verify", "--json", *(before / p for p in parts))
                said = {o["file"] for o in map(json.loads, r.out.splitlines())
                        for f in o["findings"] if f["kind"] in ("snapshot_deleted", "snapshot_stale")}
                said_somewhere |= bool(said)
                for part in parts:
                    p0, pb = before / part, root / state / f"{kind}-{ck}" / "b" / tree / part
                    snaps_b = _files(pb, ".snapshot")
                    for name, data in _files(p0, ".snapshot").items():
                        where = (state, kind, ck, part, name)
                        if name not in snaps_b:
                            assert str(p0 / name) in said, where
                        elif snaps_b[name] == data:
                            assert str(p0 / name) not in said, where
    assert said_somewhere


def test_verify_truncate_never_drops_what_kafka_keeps(outcome, tmp_path):
    """``verify --truncate`` on a copy of every damaged clean log dir Kafka loads: every byte of
    every segment Kafka keeps is still there (it cuts only what stops the load)."""
    root, fits, loaded, _ = outcome
    for kind, ck in KINDS:
        for tree in TREES:
            parts = sorted(fits[("clean", kind, ck, tree)])
            if not parts:
                continue
            case = root / "clean" / f"{kind}-{ck}"
            copy = tmp_path / f"{kind}-{ck}-{tree}"
            shutil.copytree(case / "before", copy, symlinks=True)
            run_kdump("verify", "--truncate", *(copy / tree / p for p in parts))
            for part in parts:
                if loaded[str(case / "b" / tree / part)].failure is not None:
                    continue        # Kafka does not load it: nothing it keeps
                for name, data in _files(case / "b" / tree / part, ".log").items():
                    got = (copy / tree / part / name).read_bytes() if (copy / tree / part / name).exists() else b""
                    assert got.startswith(data), (kind, ck, part, name, len(got), len(data))
