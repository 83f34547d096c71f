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
from typing import cast

from kdump import findings as F
from kdump.check.broker_rule import log_start_past_end
from kdump.check.loader_rewrites import plan_delete_all, plan_epochs_and_snapshots, plan_indexes
from kdump.check.recover_log import recovered_bases, recovery_cut, txnindex_corrupt
from kdump.check.recovery_plan import (
    CREATE_SEGMENT,
    NOTE,
    QUARANTINE,
    RENAME,
    TRUNCATE,
    LogDirState,
    PartitionPlan,
    RecoverOptions,
    Step,
)
from kdump.check.scan import ScanReport
from kdump.check.side_file_views import SIDE_FILE_LIMIT
from kdump.errors import KdumpError
from kdump.format.walk import Walker
from kdump.model import Finding
from kdump.storage import fs
from kdump.storage import logdir as K
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import MappedFile
from kdump.storage.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    TXNINDEX_SUFFIX,
    filename_offset,
    offset_name,
)
from kdump.storage.safewrite import TEMP_SUFFIX
from kdump.storage.slice_reader import SliceReader

# -- planning ---------------------------------------------------------------------------------

def _raw_offset_files(directory: str) -> list[str]:
    """Every regular file whose name starts with digits then a dot (Kafka's offsetFromFile)."""
    out = []
    for e in fs.scandir(directory):
        if not e.is_file(follow_symlinks=False):
            continue
        if filename_offset(e.name) is not None and not e.name.endswith(TEMP_SUFFIX):
            out.append(e.name)
    return sorted(out)


def _next_offset(path: str, base: int) -> int:
    """``LogSegment.readNextOffset`` of a swap segment: last batch's offset + 1, or its base."""
    nxt = base
    with MappedFile(path) as m:
        for b in Walker(m.buf):
            nxt = b.last_offset + 1
    return nxt


def plan_partition(directory: str, state: LogDirState | None = None,
                   opts: RecoverOptions | None = None, scans: dict[str, ScanReport] | None = None) -> PartitionPlan:
    """What a broker's startup does to ``directory``, in the five steps of the module docstring;
    ``scans``: the segments' scans already made (by path), not made again."""
    p = _Planner(directory, state or LogDirState(), opts or RecoverOptions())
    p.known_scans = scans or {}
    if p.marked_for_deletion():
        return p.plan
    p.files = K.partition_files(directory)
    p.remove_temp_files()       # 1
    p.finish_swaps()            # 2
    p.drop_orphans()            # 3
    p.scan_segments()
    p.recover_log()             # 4
    if p.clean_load():          # 4 after a clean shutdown: the log end offset, or the load fails
        p.rewrite()             # 5
    return p.plan


class _Planner:
    """The state of one plan as the steps build it."""

    def __init__(self, directory: str, state: LogDirState, opts: RecoverOptions) -> None:
        self.dir, self.state, self.opts = directory, state, opts
        self.plan = PartitionPlan(directory)
        self.parsed = K.parse_partition_dir(os.path.basename(fs.normpath(directory)))
        self.tp = (self.parsed[0], self.parsed[1]) if self.parsed else None
        self.files: list[LogFile] = []
        self.gone: set[str] = set()                 # names the plan moves away
        self.renamed: dict[str, str] = {}           # swap name -> live name
        self.good_swaps: list[LogFile] = []
        self.known_scans: dict[str, ScanReport] = {}

    def quarantine(self, name: str, reason: str, phase: int, offset: int | None = None) -> None:
        if name not in self.gone:
            self.gone.add(name)
            self.plan.steps.append(Step(QUARANTINE, os.path.join(self.dir, name), None, None, offset, reason, phase))

    def note(self, path: str, offset: int | None, reason: str, position: int | None = None) -> None:
        self.plan.steps.append(Step(NOTE, path, None, position, offset, reason, 0))

    def marked_for_deletion(self) -> bool:
        if self.parsed and self.parsed[2] == "delete":
            self.note("", None, "partition marked for deletion: the broker deletes it without recovering")
            return True
        return False

    def remove_temp_files(self) -> None:
        """1. LogLoader.removeTempFilesAndCollectSwapFiles."""
        files = self.files
        cleaned = [f for f in files if f.leftover == CLEANED_SUFFIX]
        min_cleaned = min((f.base_offset for f in cleaned if f.base_offset is not None), default=None)
        swaps = [f for f in files if f.leftover == SWAP_SUFFIX]
        for f in swaps:
            if min_cleaned is not None and f.base_offset is not None and f.base_offset >= min_cleaned:
                self.quarantine(f.name, f"swap file of an unfinished split (at or above the .cleaned offset "
                                        f"{min_cleaned})", 1, f.base_offset)
        for f in cleaned:
            self.quarantine(f.name, "output of an interrupted log-cleaner run", 2, f.base_offset)
        for f in files:
            if f.leftover == DELETED_SUFFIX and not f.name.endswith(".checkpoint.deleted"):
                self.quarantine(f.name, "file awaiting asynchronous deletion", 2, f.base_offset)
        self.good_swaps = [f for f in swaps if f.name not in self.gone]

    def finish_swaps(self) -> None:
        """2. The swap range: originals the swap replaces, then the renames."""
        log_swaps = [(f.path, f.base_offset) for f in self.good_swaps if f.kind == K.LOG and f.base_offset is not None]
        if log_swaps:
            lo = min(base for _, base in log_swaps)
            hi = max(_next_offset(path, base) for path, base in log_swaps)
            for name in _raw_offset_files(self.dir):
                if name.endswith(SWAP_SUFFIX) or name in self.gone:
                    continue
                off = cast(int, filename_offset(name))     # _raw_offset_files: named by an offset
                if lo <= off < hi:
                    self.quarantine(name, f"replaced by the swap segment covering offsets {lo}..{hi - 1}", 3, off)
        # The .log.swap first: once it is renamed no range is computed from it again, so a rerun
        # after an interruption never takes an already-renamed index for an original to replace.
        for f in sorted(self.good_swaps, key=lambda f: (f.kind != K.LOG, f.name)):
            live = f.name[: -len(SWAP_SUFFIX)]
            self.renamed[f.name] = live
            self.plan.steps.append(Step(RENAME, f.path, live, None, f.base_offset, "finish the interrupted swap", 4))
        # The directory as the broker sees it after steps 1-2.
        self.present = {f.name for f in self.files if f.name not in self.gone and f.leftover is None} | \
            set(self.renamed.values())
        self.source = {f.name: f.path for f in self.files if f.leftover is None}
        self.source.update({live: os.path.join(self.dir, swap) for swap, live in self.renamed.items()})
        self.logs = sorted((b, n) for n in self.present if (b := filename_offset(n, LOG_SUFFIX)) is not None)

    def drop_orphans(self) -> None:
        """3. Index files without a .log."""
        log_bases = {b for b, _ in self.logs}
        for n in sorted(self.present):
            ext = os.path.splitext(n)[1]
            b = filename_offset(n, ext) if ext in (INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX) else None
            if b is not None and b not in log_bases:
                self.quarantine(n, "index without a segment (orphan)", 5, b)

    def scan_segments(self) -> None:
        self.vopts = self.opts.verify_options()
        self.scans: dict[int, ScanReport] = {}
        for base, n in self.logs:
            known = self.known_scans.get(self.source[n])
            if known is not None:
                self.scans[base] = known
                continue
            try:
                self.scans[base] = self.vopts.scan(LogFile(self.source[n], K.LOG, None, None, base, None))
            except KdumpError as e:
                self.plan.incomplete = True
                self.note(self.source[n], base, e.message if e.message.startswith("cannot ") else
                          f"cannot read: {e.message}")
        # LogLoader recovers at load a segment without .index or whose .txnindex fails its sanity check.
        self.load_recover = {b for b, _ in self.logs
                             if offset_name(b, INDEX_SUFFIX) not in self.present
                             or txnindex_corrupt(self.source.get(offset_name(b, TXNINDEX_SUFFIX)), b)}

    def recover_log(self) -> None:
        """4. recoverLog: from the recovery point on, the first damaged segment is cut and every later one goes."""
        rp = (self.state.recovery_points.get(self.tp) if self.tp else None) or 0     # a missing checkpoint means 0
        self.plan.recovery_point = self.rp = rp
        start_from = 0 if self.opts.full else rp
        self.skip_log = self.state.clean_shutdown and not self.opts.full
        if self.skip_log:
            self.note("", None, "clean shutdown marker present: the broker skips segment recovery (use --full to "
                                "recover anyway)")
        self.bases = bases = [b for b, _ in self.logs]
        self.all_bases = list(bases)
        self.recovered = recovered_bases(bases, start_from, self.skip_log)
        truncated_at = self._find_cut()
        from kdump.check.loss import load_cut, partition_loss
        self.plan.losses = [load_cut(self.dir, self.scans[b]) for b in sorted(self.cut_segments) if b != truncated_at]
        if truncated_at is not None:
            segments = sorted((b, s) for b, s in self.scans.items() if b >= truncated_at)
            self.plan.losses.append(partition_loss(self.dir, segments, 0))
        later_sources = self._drop_later(truncated_at) if truncated_at is not None else []
        s: ScanReport | None
        for b in sorted(self.cut_segments):
            s = self.scans[b]
            cut = cast(Finding, s.cut)      # a cut segment's
            name = offset_name(b, LOG_SUFFIX)
            self.plan.damaged = True
            self.plan.steps.append(Step(TRUNCATE, os.path.join(self.dir, name), f"{name}.corrupt-{s.valid_bytes}",
                                        s.valid_bytes, cut.offset,
                                        f"{cut.kind}: {cut.message}; {s.cut_bytes} bytes cut and saved", 7))
            if s.intact_beyond:
                self.plan.salvage_sources.append((self.source[name], [(a, e) for a, e, *_ in s.intact_beyond]))
        self.plan.salvage_sources += later_sources
        if truncated_at is not None:
            self.plan.damaged = True
        for b in self.bases:
            s = self.scans.get(b)
            if s is not None and any(f.kind == F.OFFSET_OVERFLOW for f in s.findings):
                self.note(self.source[offset_name(b, LOG_SUFFIX)], b, "offsets do not fit an int32 above the base: "
                          "the broker would split this segment (LogSegmentOffsetOverflowException); kdump does not "
                          "split")

    def _find_cut(self) -> int | None:
        """The segment recovery cuts (the first damaged one recoverLog recovers), and the
        segments cut (check.recover_log). Damage a broker would not look at is noted."""
        damaged = {b for b in self.bases if (s := self.scans.get(b)) is not None and s.cut is not None
                   and s.valid_bytes < s.size}
        cut = recovery_cut(self.bases, damaged, self.recovered, self.load_recover)
        self.cut_segments: set[int] = cut.cut_segments
        for b in cut.unrecovered:
            s = self.scans[b]
            self.plan.damaged = True
            why = "after a clean shutdown" if self.skip_log else f"before the recovery point {self.rp}"
            # (verify --truncate keeps what a clean load keeps, unless that load fails: repair.cut)
            fix = "use --full to cut it" if self.skip_log else "use --full, or kdump verify --truncate"
            self.note(self.source[offset_name(b, LOG_SUFFIX)], b, f"damaged ({cast(Finding, s.cut).kind} at byte "
                      f"{s.valid_bytes}) but a broker would not recover it {why} ({fix})",
                      position=s.valid_bytes)
        return cut.truncated_at

    def _drop_later(self, truncated_at: int) -> list[tuple[str, list[tuple[int, int]]]]:
        """The segments after the cut go (phase 6, before the cut, so that a rerun after the cut
        still sees them as later); their intact bytes are salvage sources."""
        later_sources = []
        for b in self.bases:
            if b <= truncated_at:
                continue
            s = self.scans.get(b)
            if s is not None:
                regions = [(0, s.valid_bytes)] if s.valid_bytes > 0 else []
                regions += [(a, e) for a, e, *_ in s.intact_beyond]
                if regions:
                    later_sources.append((self.source[offset_name(b, LOG_SUFFIX)], regions))
            for ext in SEGMENT_SUFFIXES:
                n = offset_name(b, ext)
                if n in self.present:
                    self.quarantine(n, f"segment after the corruption in {offset_name(truncated_at, LOG_SUFFIX)}: "
                                       f"the broker deletes it", 6, b)
            self.present.discard(offset_name(b, LOG_SUFFIX))
        self.bases = [b for b in self.bases if b <= truncated_at]
        return later_sources

    def clean_load(self) -> bool:
        """After a clean shutdown no segment is recovered (``LogLoader.recoverLog``): the log end
        offset is the active segment's ``readNextOffset`` over its trusted index, and the load
        fails where that walk throws. False when the broker does not load the partition."""
        self.clean_leo: int | None = None
        if not self.skip_log or not self.bases or self.bases[-1] in self.load_recover:
            return True
        from kdump.check.clean_load import LoadFailure, read_next_offset

        base = self.bases[-1]
        name = offset_name(base, LOG_SUFFIX)
        index = offset_name(base, INDEX_SUFFIX)
        try:
            with MappedFile(self.source[name]) as m, SliceReader(self.source[index], SIDE_FILE_LIMIT) as idx:
                self.clean_leo = read_next_offset(m.buf, idx.data(), base, self.source[name])
        except LoadFailure as e:
            what = f"{self.tp[0]}-{self.tp[1]}" if self.tp else os.path.basename(fs.normpath(self.dir))
            self.plan.damaged = True
            self.plan.load_failure = str(e)
            self.note(self.source[name], base, f"the broker will not load partition {what}: {e} After a clean "
                      f"shutdown it reads the log end offset without recovery, and this walk of entry headers "
                      f"throws at byte {e.position}. Fix: kdump recover --full --apply (cuts the segment where a "
                      f"crash recovery would, keeping the cut bytes), or delete .kafka_cleanshutdown so the "
                      f"broker recovers it itself",
                      position=e.position)
            return False
        except KdumpError as e:
            self.plan.incomplete = True
            self.note(self.source[name], base, f"cannot read the log end offset as the broker does: {e.message}")
            return False
        self._plan_index_trim(base)
        return True

    def _plan_index_trim(self, base: int) -> None:
        """The active segment's indexes: resized at load, trimmed to whole entries at close
        (``AbstractIndex.resize``, ``trimToValidSize``): a partial trailing entry goes."""
        from kdump.check.clean_load import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE, trim_to_valid_size

        for ext, size in ((INDEX_SUFFIX, OFFSET_ENTRY_SIZE), (TIMEINDEX_SUFFIX, TIME_ENTRY_SIZE)):
            n = offset_name(base, ext)
            if n not in self.present or n not in self.source:
                continue
            length = fs.getsize(self.source[n])
            keep = trim_to_valid_size(length, size)
            if keep != length:
                self.plan.steps.append(Step(TRUNCATE, os.path.join(self.dir, n), f"{n}.corrupt-{keep}", keep, base,
                                            f"a partial trailing entry ({length - keep} bytes): the broker trims "
                                            f"the active segment's index to its whole entries", 7))

    def rewrite(self) -> None:
        """5. Indexes, .txnindex, epochs, snapshots, recovery point."""
        plan, bases, scans = self.plan, self.bases, self.scans
        leo = None
        for b in bases:
            s = scans.get(b)
            if s is None:
                continue
            leo = s.next_offset if s.next_offset is not None else b     # an empty segment ends at its base
        if self.clean_leo is not None:
            leo = self.clean_leo
        plan.log_end_offset = leo
        lso = self.state.log_start_offsets.get(self.tp) if self.tp else None
        if log_start_past_end(leo, lso):
            plan_delete_all(plan, self.dir, bases, self.present, self.quarantine, leo, lso, self.rp)
            return
        if not bases:
            # LogLoader.recoverLog: no segment at all, so the broker opens an empty one at the log
            # start offset, and the log ends there; the producer snapshots and epochs follow it.
            start = lso or 0
            plan.steps.append(Step(CREATE_SEGMENT, os.path.join(self.dir, offset_name(start, LOG_SUFFIX)), None, None,
                                   start, f"no segment is left: an empty one at the log start offset {start}, as "
                                          f"the broker creates it", 12))
            leo = plan.log_end_offset = start
            bases = [start]
        recovered = self.recovered | self.load_recover
        if self.opts.indexes:
            plan_indexes(plan, self.dir, bases, self.present, self.source, scans, self.cut_segments, recovered,
                         self.vopts)
        if leo is not None:
            epochs = [e for b in bases if b in recovered and b in scans for e in scans[b].epochs]
            order = [(b, True) for b in sorted(self.load_recover)] + \
                [(b, False) for b in sorted(self.recovered - self.load_recover)]
            recovered_order = [(b, scans[b].next_offset if b in scans else None, at_load) for b, at_load in order
                               if b in bases]
            plan_epochs_and_snapshots(plan, self.dir, self.present, leo, self.quarantine, epochs, lso,
                                      recovered_order, bases, self.state.clean_shutdown and not self.opts.full,
                                      self.source, self.all_bases)
            plan.new_recovery_point = leo if self.state.clean_shutdown else min(self.rp, leo)
