"""Offset and time indexes against their log: verification in one forward pass, and rebuild.

API (``kdump index``/``kdump timeindex`` and ``kdump verify`` call these):

``verify_offset_index(log_buf, base_offset, index, *, interval_bytes=None) -> IndexCheck``
``verify_time_index(log_buf, base_offset, timeindex) -> IndexCheck``
``verify_indexes(log_buf, base_offset, index=None, timeindex=None, ...) -> (IndexCheck|None, IndexCheck|None)``
    Both checks in a single walk of the log (what ``kdump verify`` wants).

- ``log_buf``: the whole ``.log`` as a buffer (``MappedFile(...).buf``, or bytes);
  ``base_offset``: the segment's base offset (from its name); ``index``/``timeindex``: the
  parsed file (``format.index.parse_index`` / ``format.timeindex.parse_timeindex``).
- ``IndexCheck.findings``: ``model.Finding(kind, position, offset, message)``. ``kind`` is
  one of the ``INDEX_*``/``TIME_*`` constants below (values prefixed ``index_``/``timeindex_``);
  ``position`` is the byte position *in the index file* of the slot at fault (None for
  whole-file findings); ``offset`` is the entry's offset. Log positions are in the message.
- ``IndexCheck.convention``: which offset the entries hold. Offset index: "last" (the
  batch's last offset, Kafka 2.0+), "base" (its base offset, before 2.0), "either" (no
  entry tells them apart), "mixed", "other" or None (no entries). Time index: "last" (the
  batch's last offset), "record" (the record carrying the max timestamp, a leader's append
  path), "either", "mixed" or None.
- ``IndexCheck.interval``: (lo, hi) index.interval.bytes values the gaps fit (hi None: no
  upper bound), None when no single value does (a note then says why that can be normal).
- Cost: O(log size + entries); records are decoded only for batches that time index
  entries point at (and only to tell the two time-index conventions apart).

``file_findings(parsed)``: what the index file alone shows (torn last slot, non-zero slots
after the zero tail); the verify functions include these. ``sanity_findings(parsed,
file_name)``: Kafka's ``sanityCheck`` conditions and messages, verbatim.
``rebuild_indexes(segment_path, interval_bytes, time_offset, backup)``: write fresh
indexes with ``LogSegment.recover``'s rule, atomically.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, build_indexes
from kdump.errors import InputError, KdumpError, UsageError
from kdump.findings import (
    INDEX_AFTER_TAIL, INDEX_BELOW_BASE, INDEX_GAP, INDEX_INTERVAL, INDEX_MID_BATCH, INDEX_MISMATCH, INDEX_ORDER,
    INDEX_PARTIAL, INDEX_PAST_END, INDEX_SANITY, TIME_AFTER_TAIL, TIME_BACKWARDS, TIME_BELOW_BASE, TIME_MISMATCH,
    TIME_NO_FINAL, TIME_NOT_FOUND, TIME_NOT_MAX, TIME_ORDER, TIME_PARTIAL, TIME_PAST_END, TIME_SANITY,
)
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.index import ENTRY_SIZE as INDEX_SLOT, IndexFile, encode_index, parse_index
from kdump.format.timeindex import ENTRY_SIZE as TIME_SLOT, TimeIndexFile, encode_timeindex, parse_timeindex
from kdump.format.walk import Walker, decode_records
from kdump.model import LOG_APPEND_TIME, Batch, Finding, IndexEntry
from kdump.storage.safewrite import refuse_symlink, write_file
from kdump.storage import names as N
from kdump.storage.segment import MappedFile, open_regular

# Finding kinds: declared, with their class, in kdump.findings.

INF = float("inf")
# Batch fields read by index in the hot loops (a NamedTuple's attribute access costs more).
_POS, _LAST, _SIZE, _MAGIC, _MAX_TS = 0, 2, 4, 5, 11
NO_TIMESTAMP = -1
AMBIGUOUS_DECODE_BUDGET = 64     # "last" entries decoded only to tell conventions apart


class IndexCheck(NamedTuple):
    """The result of checking one index file against its log."""

    kind: str                                # "index" | "timeindex"
    findings: list[Finding]
    convention: str | None                   # see the module docstring
    entries: int                             # entries checked (zero tail excluded)
    interval: tuple[int, int | None] | None  # index.interval.bytes range the gaps fit (lo, hi; hi None = any)
    notes: list[str]
    log_bytes: int                           # bytes of whole batches walked
    log_size: int

    @property
    def ok(self) -> bool:
        return not self.findings


# -- the index file alone -------------------------------------------------------------------------

def live_entries(parsed: IndexFile | TimeIndexFile) -> tuple[list, int | None]:
    """(entries, first slot of the zero tail): a file of zeros only is all tail, slot 0 included."""
    tail = parsed.zero_tail_start
    entries = parsed.entries
    if tail == 1 and len(entries) == 1 and parsed.nonzero_after_tail is None:
        first = entries[0]
        zero = (first.offset == parsed.base_offset and
                (first.position == 0 if isinstance(first, IndexEntry) else first.timestamp == 0))
        if zero:
            return [], 0
    return entries, tail


def _slot(parsed) -> int:
    return INDEX_SLOT if isinstance(parsed, IndexFile) else TIME_SLOT


def file_findings(parsed: IndexFile | TimeIndexFile) -> list[Finding]:
    """Faults visible in the index file itself: a torn last slot, data after the zero tail."""
    slot = _slot(parsed)
    out = []
    if parsed.nonzero_after_tail is not None:
        out.append(Finding(INDEX_AFTER_TAIL if slot == INDEX_SLOT else TIME_AFTER_TAIL, parsed.nonzero_after_tail * slot, None,
                           f"non-zero slot {parsed.nonzero_after_tail} after the zero-filled tail that starts at "
                           f"slot {parsed.zero_tail_start}: entries were lost or the file was overwritten"))
    if parsed.partial_bytes:
        out.append(Finding(INDEX_PARTIAL if slot == INDEX_SLOT else TIME_PARTIAL, parsed.size - parsed.partial_bytes, None,
                           f"file size {parsed.size} is not a multiple of {slot}: the last {parsed.partial_bytes} "
                           f"bytes are a truncated entry"))
    return out


def sanity_findings(parsed: IndexFile | TimeIndexFile, file_name: str) -> list[Finding]:
    """Kafka's ``OffsetIndex``/``TimeIndex.sanityCheck()`` failures, Kafka's messages verbatim.

    ``file_name`` goes into the messages (Kafka uses the absolute path). Kafka throws
    with the first; all failing conditions are returned, in Kafka's order.
    """
    slot = _slot(parsed)
    kind = INDEX_SANITY if slot == INDEX_SLOT else TIME_SANITY
    last_slot_at = (parsed.size // slot - 1) * slot if parsed.size >= slot else None
    out = []
    for message in parsed.sanity_check(file_name):
        position = parsed.size - parsed.partial_bytes if "neither positive" in message else last_slot_at
        out.append(Finding(kind, position, None, message))
    return out


# -- the offset index -----------------------------------------------------------------------------

class _OffsetCheck:
    """Fed every batch in log order; matches entries (sorted by position) as the walk passes them."""

    def __init__(self, base_offset: int, index: IndexFile, interval_bytes: int | None) -> None:
        self.base = base_offset
        self.entries, self.tail = live_entries(index)
        self.findings = file_findings(index)
        self.interval_bytes = interval_bytes
        targets = []
        prev = None
        for i, e in enumerate(self.entries):
            if e.offset < base_offset or e.position < 0:
                what = (f"offset {e.offset} is below the segment base offset {base_offset}" if e.offset < base_offset
                        else f"position {e.position} is negative")
                self._fault(INDEX_BELOW_BASE, i, e.offset, f"slot {i}: {what}")
                continue
            if prev is not None:
                j, p = prev
                if e.offset <= p.offset:
                    self._fault(INDEX_ORDER, i, e.offset,
                                f"slot {i}: offset {e.offset} is not greater than {p.offset} in slot {j}")
                if e.position <= p.position:
                    self._fault(INDEX_ORDER, i, e.offset,
                                f"slot {i}: position {e.position} is not greater than {p.position} in slot {j}")
            prev = (i, e)
            targets.append((e.position, i))
        targets.sort()
        self.targets = targets
        self.t = 0
        self.next_pos = targets[0][0] if targets else INF
        self.pending: list[tuple[int, int, int]] = []   # (offset, slot, position) of multi-batch entries
        self.prev_last = base_offset - 1
        self.counts = {"last": 0, "base": 0, "either": 0, "inside": 0, "append": 0}
        # index.interval.bytes evidence: the smallest gap between entries, the largest unindexed run.
        self.last_entry_at = 0
        self.min_gap = INF
        self.min_gap_at: tuple[int, int] | None = None
        self.max_skip = 0
        self.max_skip_at: tuple[int, int] | None = None
        self.log_last = None

    def _fault(self, kind: str, slot: int, offset: int | None, message: str) -> None:
        self.findings.append(Finding(kind, slot * INDEX_SLOT, offset, message))

    def run(self, batches) -> None:
        """Feed batches in log order. The hot loop keeps its state in locals; a batch that an
        entry points into (or that may hold a pending offset) goes to ``_visit``."""
        next_pos, pending = self.next_pos, self.pending
        last_entry_at, max_skip, prev_last = self.last_entry_at, self.max_skip, self.prev_last
        b = None
        for b in batches:
            s = b[_POS]
            if pending or next_pos < s + b[_SIZE]:
                self.last_entry_at, self.max_skip, self.prev_last = last_entry_at, max_skip, prev_last
                self._visit(b)
                next_pos, pending = self.next_pos, self.pending
                last_entry_at, max_skip = self.last_entry_at, self.max_skip
            elif s > 0 and s - last_entry_at > max_skip:
                max_skip = s - last_entry_at
                self.max_skip_at = (last_entry_at, s)
            prev_last = b[_LAST]
        self.last_entry_at, self.max_skip, self.prev_last = last_entry_at, max_skip, prev_last
        if b is not None:
            self.log_last = b[_LAST]

    def on_batch(self, b: Batch) -> None:
        self.run((b,))

    def _visit(self, b: Batch) -> None:
        s = b.position
        end = s + b.size
        last = b.last_offset
        if self.pending:
            self._resolve(b)
        hit = False
        if self.next_pos < end:
            hit = self.next_pos == s
            if hit and self.pending:
                for o, i, p in self.pending:
                    self._fault(INDEX_MISMATCH, i, o,
                                f"slot {i}: offset {o} is neither in the batch at position {p} nor in the batches "
                                f"that follow it before the next entry (position {s})")
                self.pending = []
            targets = self.targets
            t = self.t
            while t < len(targets) and targets[t][0] < end:
                pos, i = targets[t]
                if pos == s:
                    self._match(i, b)
                else:
                    e = self.entries[i]
                    self._fault(INDEX_MID_BATCH, i, e.offset,
                                f"slot {i}: position {pos} is inside the batch at position {s} ({b.size} bytes, "
                                f"offsets {self._low(b)}..{last}), not at a batch start")
                t += 1
            self.t = t
            self.next_pos = targets[t][0] if t < len(targets) else INF
        if hit:
            gap = s - self.last_entry_at
            if gap < self.min_gap:
                self.min_gap, self.min_gap_at = gap, (self.last_entry_at, s)
            self.last_entry_at = s
        elif s > 0:
            skip = s - self.last_entry_at
            if skip > self.max_skip:
                self.max_skip, self.max_skip_at = skip, (self.last_entry_at, s)

    def _low(self, b: Batch) -> int:
        return b.base_offset if b.base_offset is not None else self.prev_last + 1

    def _match(self, i: int, b: Batch) -> None:
        o = self.entries[i].offset
        low = self._low(b)
        if o < low:
            self._fault(INDEX_MISMATCH, i, o,
                        f"slot {i}: offset {o} is before the batch it points at (position {b.position}, "
                        f"offsets {low}..{b.last_offset})")
        elif o <= b.last_offset:
            is_last = o == b.last_offset
            is_base = b.base_offset is not None and o == b.base_offset
            key = "either" if is_last and is_base else "last" if is_last else "base" if is_base else "inside"
            self.counts[key] += 1
        else:
            # A broker indexes a multi-batch append (follower fetch, log cleaner) at its first
            # batch with the append's last offset: the offset lies in a later batch.
            self.pending.append((o, i, b.position))

    def _resolve(self, b: Batch) -> None:
        keep = []
        for o, i, p in self.pending:
            if o > b.last_offset:
                keep.append((o, i, p))
            elif o < self._low(b):
                self._fault(INDEX_GAP, i, o,
                            f"slot {i}: offset {o} is in no batch (the log goes from {self.prev_last} to "
                            f"{self._low(b)}); the entry points at position {p}")
            else:
                self.counts["append"] += 1
                self.counts["last" if o == b.last_offset else "inside"] += 1
        self.pending = keep

    def finish(self, walker: Walker, log_size: int) -> IndexCheck:
        notes = []
        readable = walker.stop_position
        for pos, i in self.targets[self.t:]:
            e = self.entries[i]
            if pos >= log_size:
                self._fault(INDEX_PAST_END, i, e.offset,
                            f"slot {i}: position {pos} is past the end of the log ({log_size} bytes)")
            else:
                self._fault(INDEX_PAST_END, i, e.offset,
                            f"slot {i}: position {pos} is past the last whole batch (the log is readable up to "
                            f"byte {readable}: {walker.stop.message if walker.stop else 'end of data'})")
        for o, i, _ in self.pending:
            self._fault(INDEX_PAST_END, i, o, f"slot {i}: offset {o} is past the last offset in the log "
                                              f"({self.log_last if self.log_last is not None else 'no batches'})")
        if walker.stop is not None:
            notes.append(f"the log is readable only up to byte {readable} of {log_size} ({walker.stop.message})")
        if self.counts["inside"]:
            notes.append(f"{self.counts['inside']} entries hold an offset inside their batch or append "
                         f"(neither a batch's base nor its last offset)")
        if self.counts["append"]:
            notes.append(f"{self.counts['append']} entries index a multi-batch append (offset in a later batch, "
                         f"as a follower or the log cleaner writes)")
        interval = self._interval(notes)
        self.findings.sort(key=lambda f: (f.position if f.position is not None else -1))
        return IndexCheck("index", self.findings, self._convention(), len(self.entries), interval, notes,
                          readable, log_size)

    def _convention(self) -> str | None:
        c = self.counts
        if not self.entries:
            return None
        if c["last"] and c["base"]:
            return "mixed"
        if c["last"]:
            return "last"
        if c["base"]:
            return "base"
        return "either" if c["either"] else "other"

    def _interval(self, notes: list[str]) -> tuple[int, int | None] | None:
        """Which index.interval.bytes values explain the gaps: the broker adds an entry when
        more than the interval has been appended since the last one, the first batch never."""
        lo = self.max_skip
        hi = None if self.min_gap == INF else int(self.min_gap) - 1
        given = self.interval_bytes
        if given is not None and self.min_gap_at is not None and self.min_gap <= given:
            self._interval_faults(given)
        if hi is not None and lo > hi:
            (a, b), (c, d) = self.min_gap_at, self.max_skip_at
            notes.append(f"no single index.interval.bytes explains the gaps: entries at {a} and {b} are only "
                         f"{b - a} bytes apart, yet the batch at {d} is {d - c} bytes after the entry at {c} without "
                         f"one (broker restart, multi-batch appends, a config change, or lost entries)")
            return None
        if given is not None and lo > given:
            c, d = self.max_skip_at
            notes.append(f"the batch at {d} is {d - c} bytes after the entry at {c} without one, more than "
                         f"index.interval.bytes={given} (broker restart, multi-batch appends, or lost entries)")
        return lo, hi

    def _interval_faults(self, given: int) -> None:
        prev = 0
        for pos, i in self.targets:
            if pos - prev <= given:
                e = self.entries[i]
                self._fault(INDEX_INTERVAL, i, e.offset,
                            f"slot {i}: position {pos} is only {pos - prev} bytes after "
                            f"{'the segment start' if prev == 0 else f'the previous entry ({prev})'}; with "
                            f"index.interval.bytes={given} a broker adds an entry only after more than {given} bytes")
            prev = pos


# -- the time index -------------------------------------------------------------------------------

def _first_max_record(buf, b: Batch, limits: Limits) -> int | None:
    """Offset of the first record carrying the batch's max timestamp; None if the records do not decode."""
    try:
        records = decode_records(buf, b, limits)
    except KdumpError:
        return None
    for r in records:
        if r.timestamp == b.max_timestamp:
            return r.offset
    return None


class _TimeCheck:
    """Fed every batch in log order; keeps the running max timestamp and checks entries by offset."""

    def __init__(self, buf, base_offset: int, tix: TimeIndexFile, limits: Limits) -> None:
        self.buf = buf
        self.limits = limits
        self.base = base_offset
        self.entries, self.tail = live_entries(tix)
        self.trimmed = self.tail is None and tix.partial_bytes == 0
        self.findings = file_findings(tix)
        targets = []
        prev = None
        for i, e in enumerate(self.entries):
            if e.offset < base_offset:
                self._fault(TIME_BELOW_BASE, i, e.offset,
                            f"slot {i}: offset {e.offset} is below the segment base offset {base_offset}")
                continue
            if prev is not None:
                j, p = prev
                if e.timestamp < p.timestamp:
                    self._fault(TIME_BACKWARDS, i, e.offset,
                                f"slot {i}: timestamp {e.timestamp} is earlier than {p.timestamp} in slot {j} "
                                f"(time goes backwards)")
                if e.offset < p.offset:
                    self._fault(TIME_ORDER, i, e.offset,
                                f"slot {i}: offset {e.offset} is less than {p.offset} in slot {j}")
            prev = (i, e)
            targets.append((e.offset, i))
        targets.sort()
        self.targets = targets
        self.t = 0
        self.next_off = targets[0][0] if targets else INF
        self.max_ts = NO_TIMESTAMP
        self.max_at: tuple[int, int] | None = None      # (offset, position) where max_ts was first reached
        self.prev_last = base_offset - 1
        self.log_last: int | None = None
        self.counts = {"last": 0, "record": 0, "either": 0}
        self.any_v2 = False
        self.last_distinct = False
        self.budget = AMBIGUOUS_DECODE_BUDGET

    def _fault(self, kind: str, slot: int, offset: int | None, message: str) -> None:
        self.findings.append(Finding(kind, slot * TIME_SLOT, offset, message))

    def run(self, batches) -> None:
        """Feed batches in log order: the running max in locals, entries checked as their batch passes."""
        max_ts, next_off, prev_last = self.max_ts, self.next_off, self.prev_last
        b = None
        for b in batches:
            mt = b[_MAX_TS]
            if mt > max_ts:
                max_ts = self.max_ts = mt
                self.max_at = (b[_LAST], b[_POS])
                if b[_MAGIC] >= 2:
                    self.any_v2 = True
            if next_off <= b[_LAST]:
                self.prev_last = prev_last
                self._entries_in(b)
                next_off = self.next_off
            prev_last = b[_LAST]
        self.prev_last = prev_last
        if b is not None:
            self.log_last = b[_LAST]

    def on_batch(self, b: Batch) -> None:
        self.run((b,))

    def _entries_in(self, b: Batch) -> None:
        last = b.last_offset
        targets = self.targets
        t = self.t
        while t < len(targets) and targets[t][0] <= last:
            o, i = targets[t]
            self._check(i, o, b)
            t += 1
        self.t = t
        self.next_off = targets[t][0] if t < len(targets) else INF

    def _check(self, i: int, o: int, b: Batch) -> None:
        ts = self.entries[i].timestamp
        low = b.base_offset if b.base_offset is not None else self.prev_last + 1
        if o < low:
            self._fault(TIME_NOT_FOUND, i, o, f"slot {i}: offset {o} is in no batch (the log goes from "
                                              f"{self.prev_last} to {low})")
            return
        if ts != self.max_ts:
            if ts < self.max_ts:
                m_off, m_pos = self.max_at
                self._fault(TIME_NOT_MAX, i, o,
                            f"slot {i}: timestamp {ts} at offset {o} is not the largest timestamp up to that "
                            f"offset: {self.max_ts} at offset {m_off} (batch at position {m_pos}) is larger")
            else:
                self._fault(TIME_NOT_MAX, i, o,
                            f"slot {i}: timestamp {ts} at offset {o} is larger than every timestamp in the log up "
                            f"to that offset (the largest is {self.max_ts})")
            return
        if b.max_timestamp != ts:
            m_off, m_pos = self.max_at
            self._fault(TIME_MISMATCH, i, o,
                        f"slot {i}: offset {o} is in the batch at position {b.position} whose max timestamp is "
                        f"{b.max_timestamp}; timestamp {ts} is that of the batch at position {m_pos} "
                        f"(last offset {m_off})")
            return
        single = b.base_offset == b.last_offset
        if o == b.last_offset:
            if single or self.last_distinct or self.budget <= 0:
                self.counts["either" if single or not self.last_distinct else "last"] += 1
                return
            self.budget -= 1
            rec = _first_max_record(self.buf, b, self.limits)
            if rec is not None and rec != o:
                self.last_distinct = True
                self.counts["last"] += 1
            else:
                self.counts["either"] += 1
            return
        rec = _first_max_record(self.buf, b, self.limits)
        log_append = b.timestamp_type == LOG_APPEND_TIME and o == b.base_offset
        if o == rec or log_append:
            self.counts["record"] += 1
            return
        why = ("its records do not decode" if rec is None
               else f"the first record with that timestamp is offset {rec}")
        self._fault(TIME_MISMATCH, i, o,
                    f"slot {i}: offset {o} points inside the batch at position {b.position} (offsets "
                    f"{low}..{b.last_offset}, max timestamp {ts}) but is neither its last offset nor the record "
                    f"carrying the max timestamp ({why})")

    def finish(self, walker: Walker, log_size: int) -> IndexCheck:
        notes = []
        for o, i in self.targets[self.t:]:
            where = f"the last offset in the log is {self.log_last}" if self.log_last is not None else "no batches"
            if walker.stop is not None:
                where += f"; the log is readable only up to byte {walker.stop_position}"
            self._fault(TIME_PAST_END, i, o, f"slot {i}: offset {o} is past the end of the log ({where})")
        if walker.stop is not None:
            notes.append(f"the log is readable only up to byte {walker.stop_position} of {log_size} "
                         f"({walker.stop.message})")
        last_ts = max((e.timestamp for e in self.entries), default=NO_TIMESTAMP)
        if self.trimmed and not self.entries and not self.any_v2 and self.max_ts > NO_TIMESTAMP:
            # Kafka 0.10.0 wrote v1 timestamps without time indexes; an upgraded broker created them empty.
            notes.append(f"empty time index for magic 1 data (largest timestamp {self.max_ts}): as a broker "
                         f"before 0.10.1, or one upgraded from it, leaves it")
        elif self.trimmed and self.max_ts > NO_TIMESTAMP and last_ts < self.max_ts:
            m_off, m_pos = self.max_at
            n = len(self.entries)
            self.findings.append(Finding(
                TIME_NO_FINAL, n * TIME_SLOT, m_off,
                f"the file ends after {n} entries (largest timestamp {last_ts}) but the log's largest timestamp is "
                f"{self.max_ts} (offset {m_off}, batch at position {m_pos}): the entry a broker appends when it "
                f"rolls or closes the segment is missing (file truncated?)"))
        self.findings.sort(key=lambda f: (f.position if f.position is not None else -1))
        return IndexCheck("timeindex", self.findings, self._convention(), len(self.entries), None, notes,
                          walker.stop_position, log_size)

    def _convention(self) -> str | None:
        c = self.counts
        if not self.entries:
            return None
        if c["last"] and c["record"]:
            return "mixed"
        if c["last"]:
            return "last"
        if c["record"]:
            return "record"
        return "either"


# -- one walk for both ----------------------------------------------------------------------------

def verify_indexes(log_buf, base_offset: int, index: IndexFile | None = None, timeindex: TimeIndexFile | None = None,
                   *, interval_bytes: int | None = None, limits: Limits = DEFAULT_LIMITS,
                   convention: bool = True) -> tuple[IndexCheck | None, IndexCheck | None]:
    """Check an offset index and/or a time index against ``log_buf`` in one forward walk.

    ``interval_bytes``: when given, entries closer than that are faults; otherwise the
    range of index.interval.bytes values the gaps fit is inferred (``IndexCheck.interval``).
    ``convention=False``: do not decode records only to tell the time index's convention
    apart (the findings are the same; ``IndexCheck.convention`` may say "either").
    """
    oc = _OffsetCheck(base_offset, index, interval_bytes) if index is not None else None
    tc = _TimeCheck(log_buf, base_offset, timeindex, limits) if timeindex is not None else None
    if tc is not None and not convention:
        tc.budget = 0
    walker = Walker(log_buf, limits=limits)
    if oc is not None and tc is not None:
        feed_o, feed_t = oc.on_batch, tc.on_batch
        for b in walker:
            feed_o(b)
            feed_t(b)
    elif oc is not None or tc is not None:
        (oc or tc).run(walker)
    size = len(log_buf)
    return (oc.finish(walker, size) if oc else None, tc.finish(walker, size) if tc else None)


def verify_offset_index(log_buf, base_offset: int, index: IndexFile, *, interval_bytes: int | None = None,
                        limits: Limits = DEFAULT_LIMITS) -> IndexCheck:
    """Check a parsed ``.index`` against its log: every position a batch start holding the
    entry's offset (or, for a multi-batch append, a later batch holding it), entries strictly
    increasing, nothing past the end, gaps that fit an index.interval.bytes."""
    return verify_indexes(log_buf, base_offset, index, None, interval_bytes=interval_bytes, limits=limits)[0]


def verify_time_index(log_buf, base_offset: int, timeindex: TimeIndexFile, *,
                      limits: Limits = DEFAULT_LIMITS) -> IndexCheck:
    """Check a parsed ``.timeindex`` against its log: timestamps never going back, each the
    largest one up to its offset and carried by the batch (or record) the offset names,
    nothing past the end, and the roll/close entry present in a trimmed file."""
    return verify_indexes(log_buf, base_offset, None, timeindex, limits=limits)[1]


# -- rebuild ----------------------------------------------------------------------------------------

class WrittenFile(NamedTuple):
    path: str
    kind: str               # "index" | "timeindex"
    entries: int
    status: str             # "created" | "replaced" | "unchanged"
    backup: str | None      # where the old file was kept


class RebuildResult(NamedTuple):
    log: str
    files: list[WrittenFile]
    time_offset: str        # the time-index convention written
    time_offset_from: str   # "existing file" | "option" | "default"
    interval_bytes: int
    valid_bytes: int        # where recovery would cut the log; the indexes cover [0, valid_bytes)
    log_size: int
    notes: list[str]


def segment_log_path(path: str) -> str:
    """The ``.log`` a segment file belongs to (``00..42.index`` -> ``00..42.log``)."""
    directory, name = os.path.split(path)
    for suffix in N.LEFTOVER_SUFFIXES:
        if name.endswith(suffix):
            raise UsageError(f"{suffix} files are leftovers of the log cleaner or deletion, not live segments; "
                             f"rebuild works on live segments only", file=path)
    stem, ext = os.path.splitext(name)
    if ext not in N.SEGMENT_SUFFIXES:
        raise UsageError("not a segment file (.log, .index or .timeindex)", file=path)
    return os.path.join(directory, stem + N.LOG_SUFFIX)


def existing_time_convention(log_buf, base_offset: int, timeindex_path: str,
                             limits: Limits = DEFAULT_LIMITS) -> str | None:
    """"last" or "record" when an existing ``.timeindex`` shows which one it follows, else None."""
    if not os.path.isfile(timeindex_path):
        return None
    try:
        with MappedFile(timeindex_path) as mf:
            tix = parse_timeindex(mf.buf, base_offset)
    except KdumpError:
        return None
    check = verify_time_index(log_buf, base_offset, tix, limits=limits)
    return check.convention if check.convention in ("last", "record") else None


def rebuild_indexes(segment_path: str, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, time_offset: str | None = None,
                    backup: bool = True, kinds: tuple[str, ...] = ("index", "timeindex"),
                    limits: Limits = DEFAULT_LIMITS) -> RebuildResult:
    """Write fresh ``.index``/``.timeindex`` files for a segment, as ``LogSegment.recover`` builds them.

    ``segment_path``: the ``.log`` (or one of its index files). ``time_offset``: "last" or
    "record" forces the time-index convention; None follows the existing ``.timeindex``
    when it shows one, else "last". Each file is written atomically (temporary file in the
    same directory, fsync, rename, fsync of the directory: ``kdump.storage.safewrite``); the old one
    is kept as ``.bak`` unless ``backup`` is False; a file with the same bytes is not
    touched. A symbolic link is refused, wherever it points (the caller holds the lock).
    """
    if interval_bytes < 0:
        raise UsageError(f"--interval-bytes must not be negative ({interval_bytes})")
    if time_offset not in (None, "last", "record"):
        raise UsageError(f"time offset must be 'last' or 'record', not {time_offset!r}")
    log = segment_log_path(segment_path)
    base = N.filename_offset(log)
    if base is None:
        raise UsageError("the segment's name does not start with its base offset", file=log)
    if not os.path.lexists(log):
        raise InputError("cannot rebuild: the segment's .log is missing", file=log)
    os.close(open_regular(log))         # a link loop, a FIFO...: one located error
    paths = {"index": N.sibling(log, N.INDEX_SUFFIX), "timeindex": N.sibling(log, N.TIMEINDEX_SUFFIX)}
    for kind in kinds:
        refuse_symlink(paths[kind])         # before any work
    notes: list[str] = []
    with MappedFile(log) as mf:
        buf = mf.buf
        source = "option"
        conv = time_offset
        found = existing_time_convention(buf, base, paths["timeindex"], limits) if "timeindex" in kinds else None
        if conv is None:
            conv, source = (found, "existing file") if found else ("last", "default")
        elif found and found != conv:
            notes.append(f"the existing .timeindex follows the '{found}' convention; writing '{conv}' as asked")
        offsets, times, valid = build_indexes(buf, base, interval_bytes, conv, limits)
        size = len(buf)
    if valid < size:
        notes.append(f"the log has {size - valid} bytes after the last valid batch (byte {valid}); the new "
                     f"indexes cover only what a broker's recovery keeps")
    data = {"index": encode_index(offsets, base), "timeindex": encode_timeindex(times, base)}
    counts = {"index": len(offsets), "timeindex": len(times)}
    written = []
    for kind in kinds:
        status, bak = write_file(paths[kind], data[kind], backup, like=log)
        written.append(WrittenFile(paths[kind], kind, counts[kind], status, bak))
    return RebuildResult(log, written, conv, source, interval_bytes, valid, size, notes)


def check_against_log(log_path: str, kind: str, base_offset: int, parsed: IndexFile | TimeIndexFile,
                      interval_bytes: int | None = None) -> IndexCheck:
    """One ``.index``/``.timeindex`` (``kind``) checked against its segment, as ``index --verify`` does."""
    with MappedFile(log_path) as mf:
        mf.advise_sequential()
        if kind == "index":
            return verify_indexes(mf.buf, base_offset, index=parsed, interval_bytes=interval_bytes)[0]
        return verify_indexes(mf.buf, base_offset, timeindex=parsed)[1]


def read_index_file(path: str, kind: str, base_offset: int) -> IndexFile | TimeIndexFile:
    """Parse an ``.index``/``.timeindex`` read through a read-only map."""
    with MappedFile(path) as mf:
        if mf.size > (1 << 31):
            raise InputError(f"{mf.size} bytes is larger than any index Kafka writes (2 GiB)", file=path)
        return (parse_index if kind == "index" else parse_timeindex)(mf.buf, base_offset)
