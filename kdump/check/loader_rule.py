"""Kafka's ``LogLoader.load`` as a plan: what a broker's startup does to a partition directory.

``plan_partition`` reads a partition directory and lists, in the order a broker works,
what its startup would do (kafka-reference.md section 5.2), taking the per-segment rule
from ``check.broker_rule``:

1. temp files: ``*.swap`` at or above the lowest ``*.cleaned`` offset (an unfinished
   split), then every ``*.cleaned``, then every ``*.deleted`` go away;
2. the remaining ``*.log.swap`` files cover [lowest base, highest next offset): every
   other file named with an offset in that range is an original the swap replaces and
   goes away; then the ``.swap`` suffixes are dropped;
3. index files without a ``.log`` are orphans and go away; a segment without its
   ``.index``, or whose ``.txnindex`` fails its sanity check, is recovered at load;
4. from the segment holding the recovery point onward (all of them with ``full``, none
   after a clean shutdown), each segment goes through ``LogSegment.recover``: the first
   one with damage is cut at ``ScanReport.valid_bytes`` and every later segment goes away;
   a log start offset above the new log end makes every segment go;
5. the indexes and ``.txnindex`` of recovered segments are written as recovery writes
   them, the leader epochs of the batches read are assigned (entries past the new log end
   dropped), and producer snapshots past it go away. The new recovery point is
   min(checkpoint, LEO).

Where the broker deletes, kdump moves the file into a quarantine directory (``recovery``
carries the plan out); ``tests/kafka/test_recovery_parity.py`` checks the plan against a
real broker starting on the same files.
"""

from __future__ import annotations

import os

from kdump.storage import logdir as K
from kdump.errors import KdumpError
from kdump.format.walk import Walker
from kdump.storage.logdir import LogFile
from kdump.repair.cut import index_bytes
from kdump.storage.safewrite import TEMP_SUFFIX
from kdump.check.scan import ScanReport
from kdump.storage.names import (CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SEGMENT_SUFFIXES,
                                 SNAPSHOT_SUFFIX, SWAP_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX, filename_offset,
                                 offset_name)
from kdump.storage.segment import MappedFile, read_small
from kdump.check.broker_rule import log_start_past_end, recovered_epochs
from kdump.check.plan import (
    NOTE,
    QUARANTINE,
    REBUILD,
    RENAME,
    TRIM_EPOCHS,
    TRUNCATE,
    WRITE_TXN,
    LogDirState,
    PartitionPlan,
    RecoverOptions,
    Step,
)

# -- planning ---------------------------------------------------------------------------------

def _raw_offset_files(directory: str) -> list[str]:
    """Every regular file whose name starts with digits then a dot (Kafka's offsetFromFile)."""
    out = []
    for e in os.scandir(directory):
        if not e.is_file(follow_symlinks=False):
            continue
        if filename_offset(e.name) is not None and not e.name.endswith(TEMP_SUFFIX):
            out.append(e.name)
    return sorted(out)


def _txnindex_corrupt(source: dict[str, str], base: int) -> bool:
    """``TransactionIndex.sanityCheck``: an entry ending below the segment base."""
    from kdump.format.txnindex import parse_txnindex

    path = source.get(offset_name(base, TXNINDEX_SUFFIX))
    if path is None:
        return False
    try:
        entries = parse_txnindex(read_small(path, 256 << 20)).entries
    except KdumpError:
        return False
    return any(e.last_offset < base for e in entries)


def _next_offset(path: str, base: int) -> int:
    """``LogSegment.readNextOffset`` of a swap segment: last batch's offset + 1, or its base."""
    nxt = base
    with MappedFile(path) as m:
        for b in Walker(m.buf):
            nxt = b.last_offset + 1
    return nxt


def plan_partition(directory: str, state: LogDirState | None = None,
                   opts: RecoverOptions | None = None) -> PartitionPlan:
    opts = opts or RecoverOptions()
    state = state or LogDirState()
    plan = PartitionPlan(directory)
    parsed = K.parse_partition_dir(os.path.basename(os.path.normpath(directory)))
    tp = (parsed[0], parsed[1]) if parsed else None
    if parsed and parsed[2] == "delete":
        plan.steps.append(Step(NOTE, "", None, None, None, "partition marked for deletion: the broker deletes it "
                                                          "without recovering", 0))
        return plan
    files = K.partition_files(directory)
    gone: set[str] = set()                    # names the plan moves away
    renamed: dict[str, str] = {}              # swap name -> live name

    def quarantine(name: str, reason: str, phase: int, offset: int | None = None) -> None:
        if name not in gone:
            gone.add(name)
            plan.steps.append(Step(QUARANTINE, os.path.join(directory, name), None, None, offset, reason, phase))

    # 1. temporary files (LogLoader.removeTempFilesAndCollectSwapFiles)
    cleaned = [f for f in files if f.leftover == CLEANED_SUFFIX]
    min_cleaned = min((f.base_offset for f in cleaned if f.base_offset is not None), default=None)
    swaps = [f for f in files if f.leftover == SWAP_SUFFIX]
    for f in swaps:
        if min_cleaned is not None and f.base_offset is not None and f.base_offset >= min_cleaned:
            quarantine(f.name, f"swap file of an unfinished split (at or above the .cleaned offset {min_cleaned})", 1,
                       f.base_offset)
    for f in cleaned:
        quarantine(f.name, "output of an interrupted log-cleaner run", 2, f.base_offset)
    for f in files:
        if f.leftover == DELETED_SUFFIX and not f.name.endswith(".checkpoint.deleted"):
            quarantine(f.name, "file awaiting asynchronous deletion", 2, f.base_offset)
    good_swaps = [f for f in swaps if f.name not in gone]
    # 2. swap range: originals the swap replaces, then the renames.
    log_swaps = [f for f in good_swaps if f.kind == K.LOG and f.base_offset is not None]
    if log_swaps:
        lo = min(f.base_offset for f in log_swaps)
        hi = max(_next_offset(f.path, f.base_offset) for f in log_swaps)
        for name in _raw_offset_files(directory):
            if name.endswith(SWAP_SUFFIX) or name in gone:
                continue
            off = filename_offset(name)
            if lo <= off < hi:
                quarantine(name, f"replaced by the swap segment covering offsets {lo}..{hi - 1}", 3, off)
    # The .log.swap first: once it is renamed no range is computed from it again, so a rerun
    # after an interruption never takes an already-renamed index for an original to replace.
    for f in sorted(good_swaps, key=lambda f: (f.kind != K.LOG, f.name)):
        live = f.name[: -len(SWAP_SUFFIX)]
        renamed[f.name] = live
        plan.steps.append(Step(RENAME, f.path, live, None, f.base_offset, "finish the interrupted swap", 4))

    # The directory as the broker sees it after steps 1-2.
    present = {f.name for f in files if f.name not in gone and f.leftover is None} | set(renamed.values())
    source = {f.name: f.path for f in files if f.leftover is None}
    source.update({live: os.path.join(directory, swap) for swap, live in renamed.items()})
    logs = sorted((b, n) for n in present if (b := filename_offset(n, LOG_SUFFIX)) is not None)
    log_bases = {b for b, _ in logs}
    # 3. orphan indexes
    for n in sorted(present):
        ext = os.path.splitext(n)[1]
        b = filename_offset(n, ext) if ext in (INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX) else None
        if b is not None and b not in log_bases:
            quarantine(n, "index without a segment (orphan)", 5, b)
    vopts = opts.verify_options()
    scans: dict[int, ScanReport] = {}
    for base, n in logs:
        try:
            scans[base] = vopts.scan(LogFile(source[n], K.LOG, None, None, base, None))
        except KdumpError as e:
            plan.incomplete = True
            why = e.message if e.message.startswith("cannot ") else f"cannot read: {e.message}"
            plan.steps.append(Step(NOTE, source[n], None, None, base, why, 0))
    # LogLoader recovers at load a segment without .index or whose .txnindex fails its sanity check.
    load_recover = {b for b, _ in logs if offset_name(b, INDEX_SUFFIX) not in present or _txnindex_corrupt(source, b)}
    # 4. recoverLog
    rp = (state.recovery_points.get(tp) if tp else None) or 0     # a missing checkpoint means 0
    plan.recovery_point = rp
    start_from = 0 if opts.full else rp
    skip_log = state.clean_shutdown and not opts.full
    if skip_log:
        plan.steps.append(Step(NOTE, "", None, None, None, "clean shutdown marker present: the broker skips segment "
                                                          "recovery (use --full to recover anyway)", 0))
    bases = [b for b, _ in logs]
    first_recovered = 0
    for i, b in enumerate(bases):
        if b <= start_from:
            first_recovered = i
    recovered = set() if skip_log else set(bases[first_recovered:])
    truncated_at: int | None = None
    cut_segments: set[int] = set()
    later_sources: list[tuple[str, list[tuple[int, int]]]] = []
    for b in bases:
        s = scans.get(b)
        if s is None or s.cut is None or s.valid_bytes >= s.size:
            continue
        if b in recovered and truncated_at is None:
            truncated_at = b
            cut_segments.add(b)
        elif b in load_recover and (truncated_at is None or b < truncated_at):
            cut_segments.add(b)
        elif truncated_at is None or b < truncated_at:
            plan.damaged = True
            why = "after a clean shutdown" if skip_log else f"before the recovery point {rp}"
            plan.steps.append(Step(NOTE, source[offset_name(b, LOG_SUFFIX)], None, s.valid_bytes, b,
                                   f"damaged ({s.cut.kind} at byte {s.valid_bytes}) but a broker would not recover it "
                                   f"{why} (use --full, or kdump verify --truncate)", 0))
    if truncated_at is not None:
        # Later segments go first (phase 6) so that a rerun after the cut still sees them as later.
        for b in bases:
            if b > truncated_at:
                s = scans.get(b)
                if s is not None:
                    regions = [(0, s.valid_bytes)] if s.valid_bytes > 0 else []
                    regions += [(a, e) for a, e, *_ in s.intact_beyond]
                    if regions:
                        later_sources.append((source[offset_name(b, LOG_SUFFIX)], regions))
                for ext in SEGMENT_SUFFIXES:
                    n = offset_name(b, ext)
                    if n in present:
                        quarantine(n, f"segment after the corruption in {offset_name(truncated_at, LOG_SUFFIX)}: the broker deletes "
                                      f"it", 6, b)
                present.discard(offset_name(b, LOG_SUFFIX))
        bases = [b for b in bases if b <= truncated_at]
    for b in sorted(cut_segments):
        s = scans[b]
        name = offset_name(b, LOG_SUFFIX)
        plan.damaged = True
        plan.steps.append(Step(TRUNCATE, os.path.join(directory, name), f"{name}.corrupt-{s.valid_bytes}",
                               s.valid_bytes, s.cut.offset,
                               f"{s.cut.kind}: {s.cut.message}; {s.cut_bytes} bytes cut and saved", 7))
        if s.intact_beyond:
            plan.salvage_sources.append((source[name], [(a, e) for a, e, *_ in s.intact_beyond]))
    plan.salvage_sources += later_sources
    if truncated_at is not None:
        plan.damaged = True
    for b in bases:
        s = scans.get(b)
        if s is not None and any(f.kind == "offset_overflow" for f in s.findings):
            plan.steps.append(Step(NOTE, source[offset_name(b, LOG_SUFFIX)], None, None, b,
                                   "offsets do not fit an int32 above the base: the broker would split this segment "
                                   "(LogSegmentOffsetOverflowException); kdump does not split", 0))
    # 5. indexes, txnindex, epochs, snapshots, recovery point
    leo = None
    for b in bases:
        s = scans.get(b)
        if s is None:
            continue
        leo = s.next_offset if s.next_offset is not None else b     # an empty segment ends at its base
    plan.log_end_offset = leo
    lso = state.log_start_offsets.get(tp) if tp else None
    if log_start_past_end(leo, lso):
        _plan_delete_all(plan, directory, bases, present, quarantine, leo, lso, rp)
        return plan
    _plan_indexes(plan, directory, bases, present, source, scans, cut_segments, recovered | load_recover, vopts)
    if leo is not None:
        epochs = [e for b in bases if b in recovered | load_recover and b in scans for e in scans[b].epochs]
        _plan_epochs_and_snapshots(plan, directory, present, leo, quarantine, epochs, lso)
        plan.new_recovery_point = leo if state.clean_shutdown else min(rp, leo)
    return plan


def _plan_txnindexes(plan, directory, bases, present, source, scans, recovered, vopts) -> None:
    """What recovery writes to the ``.txnindex`` of each segment it recovers: the aborted
    transactions that complete in the kept part (an empty file where there were some)."""
    from kdump.check.partition import aborted_transactions
    from kdump.format.txnindex import encode_txnindex

    logs = [(LogFile(source[offset_name(b, LOG_SUFFIX)], K.LOG, None, None, b, None), scans[b]) for b in bases if b in scans]
    aborted = aborted_transactions(logs, vopts.limits)
    for b in bases:
        if b not in recovered or b not in scans:
            continue
        name = offset_name(b, TXNINDEX_SUFFIX)
        path = os.path.join(directory, name)
        entries = aborted.get(b, [])
        if any(first is None for _, first, _, _ in entries):
            continue
        data = encode_txnindex((0, pid, first, last, lso) for pid, first, last, lso in entries)
        if name in present:
            try:
                old = read_small(source.get(name, path), 256 << 20)
            except KdumpError:
                old = None
            if old == data:
                continue
        elif not entries:
            continue
        plan.txnindexes[path] = data
        plan.steps.append(Step(WRITE_TXN, path, None, None, b, f"{len(entries)} aborted transaction(s) complete in "
                                                             f"the data kept: .txnindex written as recovery does", 9))


def _plan_delete_all(plan, directory, bases, present, quarantine, leo, lso, rp) -> None:
    """LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd: every segment, the producer state
    and the leader epochs go; the broker then starts an empty segment at the log start offset."""
    from kdump.format.checkpoint import LEADER_EPOCH

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
    plan.steps.append(Step(NOTE, "", None, None, lso, f"at its next start the broker creates an empty segment at "
                                                     f"offset {lso}", 0))
    plan.log_end_offset = lso
    plan.new_recovery_point = min(rp, lso)


def _plan_indexes(plan, directory, bases, present, source, scans, cut_segments, recovered, vopts) -> None:
    from kdump.check.partition import index_findings

    for b in bases:
        if b not in recovered and b not in cut_segments:
            continue
        s = scans.get(b)
        if s is None:
            continue
        log = source[offset_name(b, LOG_SUFFIX)]
        for i, ext in enumerate((INDEX_SUFFIX, TIMEINDEX_SUFFIX)):
            n = offset_name(b, ext)
            path = os.path.join(directory, n)
            if n not in present:
                if s.valid_bytes > 0:      # an empty segment's indexes are empty: the broker makes them
                    plan.steps.append(Step(REBUILD, path, None, None, b, f"{ext} is missing: rebuilt from the log", 8))
                continue
            if b in cut_segments:
                plan.steps.append(Step(REBUILD, path, None, None, b, "rebuilt after the cut if it points past it", 8))
                continue
            try:
                data = read_small(source.get(n, path), 256 << 20)
            except KdumpError as e:
                plan.steps.append(Step(REBUILD, path, None, None, b, f"cannot be read ({e.message}): rebuilt from "
                                       "the log", 8))
                continue
            try:
                if data == index_bytes(log, b, vopts.index_interval_bytes, vopts.limits)[i]:
                    continue
            except KdumpError:
                continue
            # The broker rewrites the indexes of every segment it recovers.
            bad = index_findings(log, b, s, **{ext[1:]: data}, limits=vopts.limits)[i]
            why = (f"disagrees with the log: {bad[0].message}" if bad else
                   "differs from what recovery writes (a preallocated tail, the last time index entry): rewritten")
            plan.steps.append(Step(REBUILD, path, None, None, b, why, 8))
    _plan_txnindexes(plan, directory, bases, present, source, scans, cut_segments | recovered, vopts)


def _plan_epochs_and_snapshots(plan, directory, present, leo, quarantine, epochs, log_start) -> None:
    from kdump.format.checkpoint import LEADER_EPOCH
    from kdump.check.sidefiles import checkpoint_entries

    p = os.path.join(directory, LEADER_EPOCH)
    entries: list[tuple[int, int]] | None = None      # kdump does not create a missing one (the broker does)
    if LEADER_EPOCH in present and os.path.isfile(p):
        try:        # parsed a line at a time (no size cap); the entries are kept: recovery rewrites them
            entries = [tuple(e) for e in checkpoint_entries(p, LEADER_EPOCH)]
        except KdumpError as e:
            plan.damaged = True
            plan.steps.append(Step(NOTE, p, None, None, None, f"{e.message}: the broker does not start on a "
                                                              f"malformed leader-epoch-checkpoint", 0))
            entries = None
    if entries is not None:
        # Recovery assigns the epochs of the batches it reads; entries past the new end go. Kafka
        # drops those at the LEO too; kdump only those strictly past it (data that is gone),
        # leaving the harmless == LEO case to the broker.
        new = recovered_epochs(entries, epochs, log_start)
        new = [e for e in new if e[1] <= leo]
        if new != entries:
            plan.epochs = new
            late = len([e for e in entries if e[1] > leo])
            added = len([e for e in new if e not in entries])
            what = "; ".join(x for x in (f"drop {late} starting past the new log end offset {leo}" if late else "",
                                         f"add {added} from the batches recovery reads" if added else "") if x)
            plan.steps.append(Step(TRIM_EPOCHS, p, None, None, leo, f"leader epochs: {what} (the old file is kept "
                                                                    f"in quarantine)", 10))
    for n in sorted(present):
        snap = filename_offset(n, SNAPSHOT_SUFFIX)
        if snap is not None and snap > leo:
            quarantine(n, f"producer snapshot past the log end offset {leo}", 11, snap)
