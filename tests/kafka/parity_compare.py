"""Running kdump recover and the broker on copies of one damaged tree, and comparing the results
(tests/kafka/test_recovery_parity.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from broker import KafkaBroker
from parity_cases import INTERVAL, Case, _logs, leftover_swap

from support.run import run_kdump


@dataclass
class Outcome:
    before: Path          # the damaged tree both started from
    a: Path               # after kdump recover --apply
    b: Path               # after the broker's recovery
    plan: list[dict]
    broker_log: str
    c: Path | None = None  # after kdump verify --truncate --broker-cut


def run_both(before: Path, root: Path, start_broker: bool = True, truncate: bool = False) -> Outcome:
    """kdump recover (plan, then --apply) on a copy A of ``before``; the broker's startup
    recovery and a clean stop on a copy B; with ``truncate``, kdump verify --truncate
    --broker-cut on a copy C."""
    a, b = root / "a", root / "b"
    shutil.copytree(before, a)
    shutil.copytree(before, b)
    c = None
    if truncate:
        c = root / "c"
        shutil.copytree(before, c)
        r = run_kdump("verify", "--truncate", "--broker-cut", "--index-interval-bytes", INTERVAL, c)
        assert r.code in (0, 1), r.err
    r = run_kdump("recover", "--json", "--index-interval-bytes", INTERVAL, a)
    assert r.code in (0, 1), r.err
    plan = [json.loads(line) for line in r.out.splitlines()]
    r = run_kdump("recover", "--apply", "--yes", "--index-interval-bytes", INTERVAL, a)
    assert r.code in (0, 1), r.err
    broker = KafkaBroker(b, work_dir=root / "work")
    try:
        if start_broker:
            broker.start()
            broker.stop()
    finally:
        broker.kill()
    log = broker.log_file.read_text(errors="replace") if broker.log_file.exists() else ""
    return Outcome(before, a, b, plan, log, c)


def _live(d: Path, ext: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.glob(f"*{ext}") if p.is_file()}


def _epochs(d: Path) -> list[tuple[int, int]]:
    ck = d / "leader-epoch-checkpoint"
    if not ck.exists():
        return []
    return [tuple(map(int, ln.split())) for ln in ck.read_text().split("\n")[2:] if ln.strip()]


def _log_end(d: Path) -> int | None:
    from kdump.check.scan import scan_file

    logs = _logs(d)
    if not logs:
        return None
    s = scan_file(str(logs[-1]), base_offset=int(logs[-1].stem))
    return s.next_offset if s.next_offset is not None else int(logs[-1].stem)


def _index_entries(path: Path, kind: str, base: int):
    from kdump.check.indexes.index_file import live_entries
    from kdump.format.index import parse_index
    from kdump.format.timeindex import parse_timeindex

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


# (partition, segment) -> the first offset of markers the broker appended after its recovery
_APPENDED: dict[tuple[str, str], int] = {}
# (partition, segment) the broker rolled to hold nothing but those markers
_ROLLED: set[tuple[str, str]] = set()


def _without_completed_markers(b: bytes, a: bytes) -> bytes:
    """The broker's log ``b`` less the transaction markers its coordinator appended after recovery.

    A broker killed while a transaction was prepared (PrepareCommit/PrepareAbort) finishes it
    once it is back up by appending COMMIT/ABORT markers: that is the coordinator at work, not
    log recovery, and kdump writes no markers (a named departure). Only a tail made wholly of
    intact control batches is taken off; anything else still counts as a difference.
    """
    if len(b) <= len(a) or not b.startswith(a):
        return b
    from kdump.format.walk import Walker

    tail = b[len(a):]
    walker = Walker(tail)
    batches = list(walker)
    if walker.stop is None and batches and all(x.is_control for x in batches):
        return a
    return b


def _marker_offsets(b: bytes, a: bytes) -> int | None:
    """The first offset of the markers _without_completed_markers took off, if it took any."""
    if _without_completed_markers(b, a) is b:
        return None
    from kdump.format.walk import Walker

    return next(iter(Walker(b[len(a):]))).base_offset


def compare_partition(outcome: Outcome, part: str, case: Case) -> None:
    """Assert that kdump's recovery of ``part`` (tree A) matches the broker's (tree B)."""
    pa, pb, p0 = outcome.a / part, outcome.b / part, outcome.before / part
    logs_a, logs_b, logs_0 = _live(pa, ".log"), _live(pb, ".log"), _live(p0, ".log")
    if case.log_start is not None:
        # The broker deletes every segment and starts an empty one at the log start offset;
        # kdump moves them all into quarantine and creates the same empty segment.
        assert logs_b == {f"{case.log_start:020d}.log": b""}
        assert logs_a == logs_b
    else:
        for name in set(logs_b) - set(logs_a):
            # A segment the restarted broker rolled for the markers it appended (see below).
            first = _marker_offsets(logs_b[name], b"")
            if first is not None:
                _APPENDED[(str(pb), name)] = first
                _ROLLED.add((str(pb), name))
                del logs_b[name]
        assert logs_a.keys() == logs_b.keys()
        for name in logs_a:
            first = _marker_offsets(logs_b[name], logs_a[name])
            if first is not None:
                _APPENDED[(str(pb), name)] = first
            logs_b[name] = _without_completed_markers(logs_b[name], logs_a[name])
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
    appended = [first for (part_dir, _), first in _APPENDED.items() if part_dir == str(pb)]
    if leo is not None and appended:
        leo = min(leo, *appended)    # the restarted leader's epoch starts where its markers do
    if leo is not None:
        assert [e for e in _epochs(pa) if e[1] < leo] == [e for e in _epochs(pb) if e[1] < leo]
    # Producer snapshots, against the broker: kdump keeps each one the broker kept (the same
    # bytes after its start), keeps none the broker deleted, and may keep or drop one the
    # broker deleted and wrote anew (kdump writes none); it changes none it keeps.
    snaps_a, snaps_b, snaps_0 = _live(pa, ".snapshot"), _live(pb, ".snapshot"), _live(p0, ".snapshot")
    for name, data in snaps_0.items():
        if name not in snaps_b:
            assert name not in snaps_a, f"{part}/{name}: the broker deleted it, kdump kept it"
        elif snaps_b[name] == data:
            assert snaps_a.get(name) == data, f"{part}/{name}: the broker kept it, kdump did not"
    assert all(snaps_0.get(n) == v for n, v in snaps_a.items())


def _compare_indexes(outcome: Outcome, case: Case, pa: Path, pb: Path, p0: Path) -> None:
    rows = _rows(outcome, pa.name)
    rebuilt = {Path(r["file"]).name for r in rows if r["action"] == "rebuild_index"}
    if case.log_start is not None:
        return          # no segment left in A; the broker's new one is empty
    for log in _logs(pb):
        if (str(pb), log.name) in _ROLLED:
            continue
        base = int(log.stem)
        # The .txnindex: the same aborted transactions in both (an absent file = none).
        ta, tb = pa / f"{base:020d}.txnindex", pb / f"{base:020d}.txnindex"
        txn_a, txn_b = (ta.read_bytes() if ta.exists() else b""), (tb.read_bytes() if tb.exists() else b"")
        appended = _APPENDED.get((str(pb), log.name))
        if appended is not None:
            # The markers appended after recovery may add aborted transactions of their own.
            assert txn_b.startswith(txn_a), ta.name
            txn_b = txn_a
        assert txn_a == txn_b, ta.name
        for ext in (".index", ".timeindex"):
            name = f"{base:020d}{ext}"
            fa, fb, f0 = pa / name, pb / name, p0 / name
            if not fa.exists():
                # Departure: the broker creates an empty index file where there was none (a
                # .timeindex removed from a segment it does not recover; a kill right after a
                # roll leaves the new, empty segment without its index files); kdump does not
                # create files.
                assert not f0.exists() and fb.read_bytes() == b"", name
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
            entries_b = _index_entries(fb, ext, base)
            if appended is not None:
                # The broker indexed the markers it appended after its recovery too.
                entries_b = [e for e in entries_b if e.offset < appended]
            else:
                assert name not in rebuilt, f"{name}: kdump rebuilt it differently from the broker"
                assert fa.read_bytes() == f0.read_bytes() if f0.exists() else True
            assert _index_entries(fa, ext, base) == entries_b, name
