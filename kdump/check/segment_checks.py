"""The checks one batch gets in a segment scan, and the state they keep.

``SegmentChecks`` is the scanner's state (``kdump.check.scan._Scan`` walks, this checks):
each batch goes through the broker's per-batch rule (CRC, offset range, the index step of
``LogSegment.recover``, from ``kdump.check.broker_rule``) and kdump's own checks (offsets,
codec, leader epochs, transactions, and with ``deep`` the records). The broker's checks
decide the cut; kdump's are reported without moving it.
"""

from __future__ import annotations

from kdump import findings as F
from kdump.check.broker_rule import IndexStep, assign_epoch, offset_in_range
from kdump.errors import KdumpError
from kdump.format.batch import ATTRIBUTES_OFFSET
from kdump.format.codecs import Limits
from kdump.format.crc import crc32, crc32c
from kdump.format.javalong import INT64_MAX, INT64_MIN, unwrapped_range, wrap_message
from kdump.format.walk import Walker, record_slices
from kdump.model import Batch, Finding

MAX_FINDINGS_PER_KIND = 50


def computed_crc(buf, b: Batch) -> int:
    """The CRC the stored one should have been (for the message, as Kafka prints both)."""
    view = memoryview(buf)
    try:
        if b.magic >= 2:
            return crc32c(view[b.position + ATTRIBUTES_OFFSET:b.position + b.size])
        return crc32(view[b.position + 16:b.position + b.size])
    finally:
        view.release()



class SegmentChecks:
    """State of one scan and the checks of one batch; ``kdump.check.scan._Scan`` walks."""

    def __init__(self, buf, report, deep: bool, max_size: int, interval: int, resync: bool,
                 limits: Limits) -> None:
        self.buf, self.r, self.deep, self.max_size = buf, report, deep, max_size
        self.interval, self.resync, self.limits = interval, resync, limits
        self.end = len(buf)
        self.base = report.base_offset
        # CRC bytes the resync may check in all: linear in the file, whatever it holds.
        self.crc_budget = [8 * self.end + (64 << 20)]
        # Kafka's recovery state: bytes kept, index-append bookkeeping (LogSegment.recover).
        self.step = IndexStep(interval)
        self.reach_base_at: int | None = None     # first batch with last offset >= base (truncateTo)
        # kdump's own checks.
        self.prev_last: int | None = None
        self.prev_epoch = -1
        self.base_from_name = report.base_offset is not None
        self.kept_before: tuple = ()
        self.open_txns: set[int] = set()
        self.counts: dict[str, int] = {}
        # Leader-epoch regressions by cause (the epoch and its start offset): [index in the
        # findings, first position, first offset, last offset, lowest epoch, count].
        self.cascades: dict[tuple, list] = {}
        # The offset field of entries that failed their checks, by position: a resync hint,
        # never shown (a finding does not quote an offset read from bytes that failed).
        self.unchecked_offset: dict[int | None, int | None] = {}

    def add(self, kind: str, pos: int | None, offset: int | None, message: str, checked: bool = True) -> Finding:
        if not checked:
            self.unchecked_offset[pos] = offset
            offset = None
        f = Finding(kind, pos, offset, message)
        n = self.counts[kind] = self.counts.get(kind, 0) + 1
        # A wrongly named segment would flag every batch: list the first few of each kind.
        if n <= MAX_FINDINGS_PER_KIND:
            self.r.findings.append(f)
        return f

    def note_suppressed(self) -> None:
        """The end of the scan: each epoch cascade becomes its finding, and the findings past the
        first MAX_FINDINGS_PER_KIND of a kind are counted in ``not_listed`` (never made up as one)."""
        if self.cascades:
            self.epoch_cascades()
        if self.counts:         # (a clean scan counted nothing: its report keeps the empty default)
            self.r.not_listed = {kind: n - MAX_FINDINGS_PER_KIND for kind, n in self.counts.items()
                                 if n > MAX_FINDINGS_PER_KIND}

    def epoch_regression(self, pos: int, first: int, epoch: int) -> None:
        """A batch whose leader epoch is below the highest so far: counted against the batch
        that raised the epoch to it (the broker's epoch cache names its offset)."""
        cause = (self.prev_epoch, self.r.epochs[-1][1] if self.r.epochs else None)
        run = self.cascades.get(cause)
        if run is None:
            self.cascades[cause] = [len(self.r.findings), pos, first, first, epoch, 1]
        else:
            run[3], run[4], run[5] = first, min(run[4], epoch), run[5] + 1

    def epoch_cascades(self) -> None:
        """One finding per cause: a lone regression at its batch; a run of them (one flipped epoch
        byte, which no CRC covers, sets every later batch below it) at the batch that caused it."""
        for (epoch, offset), (at, pos, first, last, low, n) in sorted(self.cascades.items(), key=lambda c: -c[1][0]):
            if n == 1:
                f = Finding(F.EPOCH_REGRESSION, pos, first,
                            f"partition leader epoch {low} is lower than the previous batch's {epoch}")
            else:
                cause = next((b.position for b in Walker(self.buf) if b.last_offset >= offset), None) \
                    if offset is not None else None
                f = Finding(F.EPOCH_REGRESSION, cause, offset,
                            f"the {n} later batches (offsets {first}..{last}) have partition leader epochs below "
                            f"{epoch}, the epoch from this batch on (down to {low}): one cause, this batch's epoch "
                            f"or theirs (the epoch field is outside the CRC: one flipped byte does this)")
            self.counts[F.EPOCH_REGRESSION] = self.counts.get(F.EPOCH_REGRESSION, 0) + 1
            if self.counts[F.EPOCH_REGRESSION] <= MAX_FINDINGS_PER_KIND:
                self.r.findings.insert(at, f)

    def batch(self, b: Batch) -> Finding | None:
        """Check one batch in order; returns the cut finding if the broker stops here."""
        pos = b.position
        first = b.base_offset if b.base_offset is not None else b.last_offset
        last = b.last_offset
        if not b.crc_valid:
            extra = f"; its length {b.size} also exceeds the maximum message size" if b.size > self.max_size else ""
            return self.add(F.CRC_MISMATCH, pos, first, f"Record is corrupt (stored crc = {b.crc}, computed crc = "
                                                      f"{computed_crc(self.buf, b)}){extra}", checked=False)
        base = self.base
        if base is None:
            base = self.base = first
        # LogSegment.recover, step by step: offset range, then (below) max timestamp and index appends.
        if not offset_in_range(base, last):
            self.add(F.OFFSET_OVERFLOW, pos, last,
                     f"last offset {last} is not within an int32 of the segment base {base}: the broker would "
                     f"split the segment (LogSegmentOffsetOverflowException)")
        if self.reach_base_at is None and last >= base:
            r = self.r
            self.reach_base_at = pos
            self.kept_before = (r.batches, r.records, r.first_offset, r.last_offset, len(r.epochs),
                                len(r.txn_events))
        # kdump's checks (before the index step, so they are reported even where the broker
        # stops): the broker keeps the batch whatever they say.
        self.offset_checks(b, pos, first, last, base)
        if b.magic >= 2:
            self.epoch_and_txn(b, pos, first)
        r = self.r
        why = self.step.take(b)
        if why is not None:
            cut = self.invalid_offset(why)
            if cut is not None:
                return cut
            # No batch reaches the base yet: truncateTo(base) finds nothing to cut, the walk goes on.
            self.step.last_entry_at = self.step.valid
            self.step.valid += b.size
        count = b.count if b.count is not None and b.count > 0 else 0
        if self.deep:
            count = self.decode(b, first, last, count)
        r.batches += 1
        r.records += count
        if r.first_offset is None:
            r.first_offset = first
        r.last_offset = last
        self.prev_last = last
        return None

    def offset_checks(self, b: Batch, pos: int, first: int, last: int, base: int) -> None:
        """kdump's checks of a batch's size, offsets and codec (the broker keeps it whatever they say)."""
        if b.size > self.max_size:
            self.add(F.OVERSIZE_BATCH, pos, first, f"batch of {b.size} bytes exceeds the maximum message size "
                                                   f"{self.max_size} (the CRC is valid, so the broker keeps it)")
        if first < base and self.base_from_name:
            self.add(F.BASE_OFFSET_MISMATCH, pos, first,
                     f"first offset {first} is below the segment's base offset {base}")
        if self.prev_last is not None and first <= self.prev_last:
            self.add(F.OFFSET_REGRESSION, pos, first,
                     f"offsets go backwards: batch {first}..{last} starts at or below the previous "
                     f"batch's last offset {self.prev_last}")
        if first > last:
            self.add(F.LAST_OFFSET_DELTA, pos, first, f"last offset {last} is below the first offset {first}")
        elif b.magic >= 2 and b.count is not None and b.count > last - first + 1:
            self.add(F.LAST_OFFSET_DELTA, pos, first,
                     f"{b.count} records do not fit lastOffsetDelta {last - first} (at most {last - first + 1})")
        codec = b.compression
        if codec > 4 or (b.magic < 2 and codec == 4):
            self.add(F.CODEC, pos, first, f"unknown compression type id {codec} for magic {b.magic}")
        elif b.magic < 2 and b.count is None:
            self.add(F.CODEC, pos, first, "the compressed wrapper's value does not decompress into messages")

    def epoch_and_txn(self, b: Batch, pos: int, first: int) -> None:
        """A v2 batch's leader epoch (the broker's assignment rule) and the transaction events the
        .txnindex checks replay."""
        r = self.r
        epoch = b.partition_leader_epoch
        if epoch >= 0:
            if epoch < self.prev_epoch:
                self.epoch_regression(pos, first, epoch)
            else:
                assign_epoch(r.epochs, epoch, first)
                self.prev_epoch = epoch
        if b.is_transactional:
            pid = b.producer_id
            if b.is_control:
                r.txn_events.append((first, pid, b))
                self.open_txns.discard(pid)
            elif pid not in self.open_txns:
                self.open_txns.add(pid)
                r.txn_events.append((first, pid, None))

    def final_time_entry(self) -> Finding | None:
        # After the loop recovery appends the max timestamp once more (it may throw too).
        why = self.step.finish() if self.step.time_last is not None else None
        return None if why is None else self.invalid_offset(why)

    def invalid_offset(self, why: str) -> Finding | None:
        """InvalidOffsetException: LogLoader truncates the segment to its base offset, i.e. to the
        first batch whose last offset reaches the base."""
        at = self.reach_base_at
        if at is None:
            return None
        r = self.r
        r.batches, r.records, r.first_offset, r.last_offset, n_epochs, n_events = self.kept_before
        del r.epochs[n_epochs:], r.txn_events[n_events:]
        return self.add(F.INVALID_OFFSET, at, self.base,
                        f"{why} (InvalidOffsetException): the broker's recovery empties the segment from "
                        f"byte {at}")

    def decode(self, b: Batch, first: int, last: int, count: int) -> int:
        # A slice at a time: a batch of millions of records is never one list of them.
        # CreateTime v2 timestamps outside this range were wrapped by Kafka's long sum.
        lo, hi = unwrapped_range(b.base_timestamp) if b.magic == 2 and not b.timestamp_type else (INT64_MIN, INT64_MAX)
        prev = wrapped_at = None
        n = 0
        try:
            for records in record_slices(self.buf, b, self.limits):
                n += len(records)
                for rec in records:
                    o = rec.offset
                    if (prev is not None and o <= prev) or o < first or o > last:
                        self.add(F.RECORD_DECODE, b.position, first,
                                 f"record offset {o} is out of order or outside the batch's range {first}..{last}")
                        # The batch is damaged: the rest is not decoded. A record-count bomb (millions of
                        # one repeated record) then costs what its first slice does, not its count.
                        return count
                    prev = o
                    if not lo <= rec.timestamp <= hi and wrapped_at is None:
                        wrapped_at = rec
        except KdumpError as e:
            self.add(F.kind_of_error(e), b.position, first, e.message)
            return count
        if wrapped_at is not None:      # one finding a batch
            self.add(F.TIMESTAMP_OVERFLOW, b.position, wrapped_at.offset,
                     wrap_message(wrapped_at.offset, b.base_timestamp, wrapped_at.timestamp))
        return n

