"""Step 5 of ``LogLoader.load`` as a plan (``kdump.check.loader_rule``): what a broker's recovery
rewrites once the log is cut. The indexes and ``.txnindex`` of the segments it recovers are
written as recovery writes them; the leader epochs of the batches read are assigned (entries
past the new log end dropped) and producer snapshots past it go. A log start offset above
the new log end instead makes every segment go (``plan_delete_all``).
"""

from __future__ import annotations

import os

from kdump import findings as F
from kdump.check.broker_rule import index_bytes, recovered_epochs
from kdump.check.indexes.forward_pass import index_findings
from kdump.check.recovery_plan import CREATE_SEGMENT, NOTE, REBUILD, TRIM_EPOCHS, TRUNCATE, WRITE_TXN, Step
from kdump.check.side_file_views import SIDE_FILE_LIMIT, checkpoint_entries, read_snapshot
from kdump.check.txn_findings import aborted_transactions
from kdump.errors import KdumpError
from kdump.format.checkpoint import LEADER_EPOCH
from kdump.format.txnindex import encode_txnindex
from kdump.storage import fs
from kdump.storage import logdir as K
from kdump.storage.logdir import LogFile
from kdump.storage.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SNAPSHOT_SUFFIX,
    TIMEINDEX_SUFFIX,
    TXNINDEX_SUFFIX,
    filename_offset,
    offset_name,
)
from kdump.storage.slice_reader import SliceReader


def plan_txnindexes(plan, directory, bases, present, source, scans, recovered, vopts) -> None:
    """What recovery writes to the ``.txnindex`` of each segment it recovers: the aborted
    transactions that complete in the kept part (an empty file where there were some)."""
    logs = [(LogFile(source[offset_name(b, LOG_SUFFIX)], K.LOG, None, None, b, None), scans[b])
            for b in bases if b in scans]
    aborted = aborted_transactions(logs, vopts.limits)
    for b in bases:
        if b not in recovered or b not in scans:
            continue
        name = offset_name(b, TXNINDEX_SUFFIX)
        path = os.path.join(directory, name)
        entries = aborted.get(b, [])
        if any(first is None for _, first, _, _ in entries):
            continue
        data = encode_txnindex((0, pid, first, last, lso) for pid, first, last, lso in entries)  # type: ignore[misc]  # no first is None
        if name in present:
            try:
                with SliceReader(source.get(name, path), SIDE_FILE_LIMIT) as old:
                    if _same(old, data):
                        continue
            except KdumpError:
                pass
        elif not entries:
            continue
        plan.txnindexes[path] = data
        plan.steps.append(Step(WRITE_TXN, path, None, None, b, f"{len(entries)} aborted transaction(s) complete in "
                                                             f"the data kept: .txnindex written as recovery does", 9))


def plan_delete_all(plan, directory, bases, present, quarantine, leo, lso, rp) -> None:
    """LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd: every segment, the producer state
    and the leader epochs go; the broker then starts an empty segment at the log start offset."""
    plan.damaged = True
    why = f"the log start offset {lso} is above the log end offset {leo}: the broker deletes every segment"
    plan.steps = [st for st in plan.steps if st.action not in (TRUNCATE, REBUILD, WRITE_TXN)]
    for b in bases:
        for ext in SEGMENT_SUFFIXES:
            if offset_name(b, ext) in present:
                quarantine(offset_name(b, ext), why, 6, b)
    for n in sorted(present):
        snap = filename_offset(n, SNAPSHOT_SUFFIX)
        if snap is not None:
            quarantine(n, f"producer snapshot: {why}", 11, snap)
    if LEADER_EPOCH in present:
        plan.steps.append(Step(TRIM_EPOCHS, os.path.join(directory, LEADER_EPOCH), None, None, -1,
                               f"drop every leader epoch: {why} (the old file is kept in quarantine)", 10))
    # In the same load (LogLoader.recoverLog: no segment left), the broker opens an empty one
    # at the log start offset; its files take their owner and mode from the first segment's.
    first = offset_name(bases[0], LOG_SUFFIX) if bases else None
    plan.steps.append(Step(CREATE_SEGMENT, os.path.join(directory, offset_name(lso, LOG_SUFFIX)), first, None, lso,
                           f"an empty segment at the log start offset {lso}, as the broker creates it", 12))
    plan.log_end_offset = lso
    plan.new_recovery_point = min(rp, lso)


def plan_indexes(plan, directory, bases, present, source, scans, cut_segments, recovered, vopts) -> None:
    """The indexes recovery rewrites. The exit status follows the finding registry, as
    ``verify``'s does: an index with damage makes the plan damaged, and one the broker would
    not rewrite (a segment it does not recover) is noted, since readers trust it."""
    for b in bases:
        s = scans.get(b)
        if s is None:
            continue
        log = source[offset_name(b, LOG_SUFFIX)]
        rewritten = b in recovered or b in cut_segments
        for i, ext in enumerate((INDEX_SUFFIX, TIMEINDEX_SUFFIX)):
            n = offset_name(b, ext)
            path = os.path.join(directory, n)
            if not rewritten:
                _note_kept_index(plan, path, source.get(n, path), log, b, s, i, n in present, vopts)
                continue
            if n not in present:
                if s.valid_bytes > 0:      # an empty segment's indexes are empty: the broker makes them
                    plan.steps.append(Step(REBUILD, path, None, None, b, f"{ext} is missing: rebuilt from the log", 8))
                continue
            if b in cut_segments:
                plan.steps.append(Step(REBUILD, path, None, None, b, "rebuilt after the cut if it points past it", 8))
                continue
            try:
                data = SliceReader(source.get(n, path), SIDE_FILE_LIMIT)     # walked, never held whole
            except KdumpError as e:
                plan.steps.append(Step(REBUILD, path, None, None, b, f"cannot be read ({e.message}): rebuilt from "
                                       "the log", 8))
                continue
            try:
                with data:
                    try:
                        if _same(data, index_bytes(log, b, vopts.index_interval_bytes, vopts.limits)[i]):
                            continue
                    except KdumpError:
                        continue
                    # The broker rewrites the indexes of every segment it recovers.
                    bad = index_findings(log, b, s, data if i == 0 else None, data if i == 1 else None,
                                         limits=vopts.limits)[i]
            except KdumpError as e:
                plan.steps.append(Step(REBUILD, path, None, None, b, f"cannot be read ({e.message}): rebuilt from "
                                       "the log", 8))
                continue
            why = (f"disagrees with the log: {bad[0].message}" if bad else
                   "differs from what recovery writes (a preallocated tail, the last time index entry): rewritten")
            plan.damaged |= any(F.is_damage(f.kind) for f in bad)
            plan.steps.append(Step(REBUILD, path, None, None, b, why, 8))
    plan_txnindexes(plan, directory, bases, present, source, scans, cut_segments | recovered, vopts)


def _note_kept_index(plan, path, source_path, log, b, scan, i, present, vopts) -> None:
    """An index of a segment the broker does not recover: kept as it is, and trusted."""
    if not present:
        return
    try:
        with SliceReader(source_path, SIDE_FILE_LIMIT) as data:     # walked, never held whole
            if _same(data, index_bytes(log, b, vopts.index_interval_bytes, vopts.limits)[i]):
                return
            bad = [f for f in index_findings(log, b, scan, data if i == 0 else None, data if i == 1 else None,
                                             limits=vopts.limits, whole=True)[i] if F.is_damage(f.kind)]
    except KdumpError:
        return
    if bad:
        plan.damaged = True
        plan.steps.append(Step(NOTE, path, None, bad[0].position, b, f"{bad[0].kind}: {bad[0].message}; the broker "
                               f"does not recover this segment and trusts the index (readers are sent astray): "
                               f"kdump index --rebuild, or recover --full", 0))


def plan_epochs_and_snapshots(plan, directory, present, leo, quarantine, epochs, log_start, recovered=(),
                              bases=(), clean=False, source=None, bases_before=None) -> None:
    p = os.path.join(directory, LEADER_EPOCH)
    got: tuple | None = None      # kdump does not create a missing one (the broker does)
    if LEADER_EPOCH in present and fs.isfile(p):
        try:        # parsed a line at a time (no size cap); what recovery rewrites is kept
            got = _new_epochs(checkpoint_entries(p, LEADER_EPOCH), epochs, log_start, leo)
        except KdumpError as e:
            plan.damaged = True
            plan.steps.append(Step(NOTE, p, None, None, None, f"{e.message}: the broker does not start on a "
                                                              f"malformed leader-epoch-checkpoint", 0))
    if got is not None:
        new, changed, late, added = got
        if changed:
            plan.epochs = new
            what = "; ".join(x for x in (f"drop {late} starting past the new log end offset {leo}" if late else "",
                                         f"add {added} from the batches recovery reads" if added else "") if x)
            plan.steps.append(Step(TRIM_EPOCHS, p, None, None, leo, f"leader epochs: {what} (the old file is kept "
                                                                    f"in quarantine)", 10))
    plan_snapshots(plan, present, leo, quarantine, log_start, list(recovered), list(bases), clean, source or {},
                   directory, bases_before)


def _new_epochs(entries, epochs, log_start, leo) -> tuple[list[tuple[int, int]], bool, int, int]:
    """The leader epochs recovery leaves (``recovered_epochs``), entries past the new end ``leo``
    dropped (Kafka drops those at the LEO too; kdump only those strictly past it, data that is
    gone, leaving the harmless == LEO case to the broker): (entries, changed, dropped, added).
    Without batch ``epochs`` (no segment recovered) the file is read in one pass holding only
    what stays, so a huge checkpoint costs no memory beyond the kept entries."""
    if epochs:
        old = [(e[0], e[1]) for e in entries]
        new = [e for e in recovered_epochs(old, epochs, log_start) if e[1] <= leo]
        return new, new != old, sum(1 for e in old if e[1] > leo), sum(1 for e in new if e not in old)
    kept: list[tuple[int, int]] = []
    late = total = 0
    below = None
    for e in entries:
        e = (e[0], e[1])
        total += 1
        late += e[1] > leo
        if log_start is not None and e[1] <= log_start:     # truncateFromStart: the last one moves up
            below = e
        elif e[1] <= leo:
            kept.append(e)
    added = 0
    if below is not None and log_start <= leo:
        moved = (below[0], log_start)
        added = int(moved != below)
        kept.insert(0, moved)
    return kept, bool(added or len(kept) != total), late, added     # (kept: in order, a subset but for one)


def plan_snapshots(plan, present, leo, quarantine, log_start, recovered, bases, clean, source, directory,
                   bases_before=None) -> None:
    """The producer snapshots the load deletes (``check.loader_snapshots``); the ones it writes
    are left to the broker."""
    from kdump.check.loader_snapshots import snapshots_at_load

    names = {}
    for n in present:
        snap = filename_offset(n, SNAPSHOT_SUFFIX)
        if snap is not None:
            names[snap] = n
    readable = {}
    for off, n in names.items():
        try:        # ProducerStateManager.readSnapshot: structure, version, CRC (CorruptSnapshotException)
            readable[off] = read_snapshot(source.get(n, os.path.join(directory, n)))[0].crc_valid   # streamed
        except KdumpError:
            readable[off] = False
    fate = snapshots_at_load(readable, recovered, bases, log_start or 0, leo, clean, bases_before)
    plan.snapshots_written = sorted(fate.written)
    for off in sorted(fate.deleted):
        if off in fate.written:
            continue        # deleted, then written anew at the same offset from the same log: kept
        quarantine(names[off], f"producer snapshot: {fate.deleted[off]}", 11, off)


def _same(reader: SliceReader, data: bytes) -> bool:
    """Does the file hold ``data``? (Sizes first: a 100 MB file is not read to differ.)"""
    return len(reader) == len(data) and reader[0:len(data)] == data
