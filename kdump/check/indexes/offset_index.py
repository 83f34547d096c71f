"""The offset index against its log: one forward pass, entries matched as the walk passes them.

``OffsetIndexCheck`` is fed every batch in log order (``kdump.check.indexes.forward_pass.verify_indexes``
drives it) and returns an ``IndexCheck``: entries at batch starts holding their offset (or,
for a multi-batch append, a later batch's), strictly increasing, nothing past the end, and
the index.interval.bytes values the gaps fit.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from kdump.check.capped import Capped
from kdump.check.indexes.index_file import (
    BASE,
    END,
    INF,
    LAST,
    POS,
    SIZE,
    IndexCheck,
    Target,
    convention_of,
    file_findings,
    live_entries,
    target_walk,
)
from kdump.findings import (
    INDEX_BELOW_BASE,
    INDEX_GAP,
    INDEX_INTERVAL,
    INDEX_MID_BATCH,
    INDEX_MISMATCH,
    INDEX_ORDER,
    INDEX_PAST_END,
)
from kdump.format.index import ENTRY_SIZE as INDEX_SLOT
from kdump.format.index import IndexFile
from kdump.format.walk import Walker
from kdump.model import Batch, Finding


class OffsetIndexCheck:
    """Fed every batch in log order; matches entries (sorted by position) as the walk passes them.

    The entries are walked, never held: once here for what they show alone, then as targets
    (position, slot, offset) while the log is walked, ``cur`` the next and ``nxt`` the one after
    (a file out of order is sorted first: ``sorted_targets``)."""

    def __init__(self, base_offset: int, index: IndexFile, interval_bytes: int | None) -> None:
        self.base = base_offset
        self.entries, self.tail = live_entries(index)
        self.findings = Capped(file_findings(index))
        self.interval_bytes = interval_bytes
        in_order = True
        prev = None
        findings = self.findings
        below = 0
        for i, e in enumerate(self.entries):
            if e.offset < base_offset or e.position < 0:
                below += 1
                if findings.room(INDEX_BELOW_BASE) > 0:
                    what = (f"offset {e.offset} is below the segment base offset {base_offset}"
                            if e.offset < base_offset else f"position {e.position} is negative")
                    self._fault(INDEX_BELOW_BASE, i, e.offset, f"slot {i}: {what}")
                else:
                    findings.skip(INDEX_BELOW_BASE, 1)
                continue
            if prev is not None:
                j, p = prev
                if e.offset <= p.offset:
                    self._order(i, e.offset, f"offset {e.offset} is not greater than {p.offset} in slot {j}")
                if e.position <= p.position:
                    self._order(i, e.offset, f"position {e.position} is not greater than {p.position} in slot {j}")
                    in_order = in_order and e.position == p.position
            prev = (i, e)
        self.n_targets = len(self.entries) - below
        self.targets = target_walk(self.entries, in_order, self._in_order,
                                   lambda t: (t[0], t[1], t[2] - base_offset),
                                   lambda t: (t[0], t[1], t[2] + base_offset), self.n_targets)
        self._targets = self.targets.walk
        self.n_targets -= self.targets.left_out
        self.it = it = self._targets()
        self.cur: Target = next(it, END)
        self.nxt: Target = next(it, END)
        self.next_pos = self.cur[0]
        self.t = 0      # targets the walk has passed
        self.pending: list[tuple[int, int, int]] = []   # (offset, slot, position) of multi-batch entries
        self.prev_last = base_offset - 1
        self.counts = {"last": 0, "base": 0, "either": 0, "inside": 0, "append": 0}
        # index.interval.bytes evidence: the smallest gap between entries, the largest unindexed run.
        self.last_entry_at = 0
        self.min_gap = INF
        self.min_gap_at: tuple[int, int] | None = None
        self.max_skip = 0
        self.max_skip_at: tuple[int, int] | None = None
        self.log_last: int | None = None

    def _in_order(self) -> Iterator[tuple[int, int, int]]:
        """The targets (position, slot, offset) in slot order: entries below the base left out."""
        base = self.base
        for i, (o, pos) in enumerate(self.entries):
            if o >= base and pos >= 0:
                yield pos, i, o

    def _order(self, slot: int, offset: int, what: str) -> None:
        if self.findings.room(INDEX_ORDER) > 0:
            self._fault(INDEX_ORDER, slot, offset, f"slot {slot}: {what}")
        else:
            self.findings.skip(INDEX_ORDER, 1)

    def _advance(self) -> None:
        self.cur, self.nxt = self.nxt, next(self.it, END)
        self.t += 1

    def _fault(self, kind: str, slot: int, offset: int | None, message: str) -> None:
        self.findings.append(Finding(kind, slot * INDEX_SLOT, offset, message))

    def run(self, batches) -> None:
        """Feed batches in log order. The hot loop keeps its state in locals; a batch that an
        entry points into (or that may hold a pending offset) goes to ``_visit``."""
        next_pos, pending = self.next_pos, self.pending
        last_entry_at, max_skip, prev_last = self.last_entry_at, self.max_skip, self.prev_last
        cur, nxt, it, counts = self.cur, self.nxt, self.it, self.counts
        b = None
        for b in batches:
            s = b[POS]
            end = s + b[SIZE]
            if next_pos == s and not pending:
                # The usual entry, taken here as ``_visit`` would: the only one in this batch, at its
                # start, holding its last offset (the broker's convention since 2.0).
                first, last = b[BASE], b[LAST]
                if nxt[0] >= end and cur[2] == last and first is not None and first <= last:
                    counts["either" if first == last else "last"] += 1
                    cur, nxt = nxt, next(it, END)
                    next_pos = cur[0]
                    self.t += 1
                    if s - last_entry_at < self.min_gap:
                        self.min_gap, self.min_gap_at = s - last_entry_at, (last_entry_at, s)
                    last_entry_at, prev_last = s, last
                    continue
            if pending or next_pos < end:
                self.cur, self.nxt, self.next_pos = cur, nxt, next_pos
                self.last_entry_at, self.max_skip, self.prev_last = last_entry_at, max_skip, prev_last
                self._visit(b)
                cur, nxt, next_pos, pending = self.cur, self.nxt, self.next_pos, self.pending
                last_entry_at, max_skip = self.last_entry_at, self.max_skip
            elif s > 0 and s - last_entry_at > max_skip:
                max_skip = s - last_entry_at
                self.max_skip_at = (last_entry_at, s)
            prev_last = b[LAST]
        self.cur, self.nxt, self.next_pos = cur, nxt, next_pos
        self.last_entry_at, self.max_skip, self.prev_last = last_entry_at, max_skip, prev_last
        if b is not None:
            self.log_last = b[LAST]

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
            while self.cur[0] < end:
                pos, i, o = self.cur
                if pos == s:
                    self._match(i, o, b)
                elif self.findings.room(INDEX_MID_BATCH) > 0:
                    self._fault(INDEX_MID_BATCH, i, o,
                                f"slot {i}: position {pos} is inside the batch at position {s} ({b.size} bytes, "
                                f"offsets {self._low(b)}..{last}), not at a batch start")
                else:
                    self.findings.skip(INDEX_MID_BATCH, 1)
                self._advance()
            self.next_pos = self.cur[0]
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

    def _match(self, i: int, o: int, b: Batch) -> None:
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

    def close(self, walker: Walker, log_size: int) -> list[Finding]:
        """The findings, once the walk has ended (``finish`` adds what else the check learned)."""
        readable = walker.stop_position
        room = self.findings.room(INDEX_PAST_END)
        rest = self.n_targets - self.t      # the targets the walk did not reach: the first ``room`` made
        for pos, i, o in islice(self._rest(), max(0, room)):
            if pos >= log_size:
                self._fault(INDEX_PAST_END, i, o,
                            f"slot {i}: position {pos} is past the end of the log ({log_size} bytes)")
            else:
                self._fault(INDEX_PAST_END, i, o,
                            f"slot {i}: position {pos} is past the last whole batch (the log is readable up to "
                            f"byte {readable}: {walker.stop.message if walker.stop else 'end of data'})")
        self.findings.skip(INDEX_PAST_END, rest - room)
        for o, i, _ in self.pending:
            self._fault(INDEX_PAST_END, i, o, f"slot {i}: offset {o} is past the last offset in the log "
                                              f"({self.log_last if self.log_last is not None else 'no batches'})")
        given = self.interval_bytes
        if given is not None and self.min_gap_at is not None and self.min_gap <= given:
            self._interval_faults(given)
        if len(self.findings) > 1:
            self.findings.sort(key=lambda f: (f.position if f.position is not None else -1))
        return self.findings

    def _rest(self) -> Iterator[Target]:
        """The targets the walk did not reach."""
        while self.cur is not END:
            yield self.cur
            self._advance()

    def finish(self, walker: Walker, log_size: int) -> IndexCheck:
        findings = self.close(walker, log_size)
        notes = []
        readable = walker.stop_position
        if walker.stop is not None:
            notes.append(f"the log is readable only up to byte {readable} of {log_size} ({walker.stop.message})")
        notes += self.targets.note()
        if self.counts["inside"]:
            notes.append(f"{self.counts['inside']} entries hold an offset inside their batch or append "
                         f"(neither a batch's base nor its last offset)")
        if self.counts["append"]:
            notes.append(f"{self.counts['append']} entries index a multi-batch append (offset in a later batch, "
                         f"as a follower or the log cleaner writes)")
        interval = self._interval(notes)
        return IndexCheck("index", findings, self._convention(), len(self.entries), interval, notes,
                          readable, log_size)

    def _convention(self) -> str | None:
        if not self.entries:
            return None
        return convention_of(self.counts, "base", "either" if self.counts["either"] else "other")

    def _interval(self, notes: list[str]) -> tuple[int, int | None] | None:
        """Which index.interval.bytes values explain the gaps: the broker adds an entry when
        more than the interval has been appended since the last one, the first batch never."""
        lo = self.max_skip
        hi = None if self.min_gap == INF else int(self.min_gap) - 1
        given = self.interval_bytes
        if hi is not None and lo > hi and self.max_skip_at is None:     # an entry at byte 0, where none fits
            assert self.min_gap_at is not None     # hi is not None: a gap was measured
            a, b = self.min_gap_at
            notes.append(f"no index.interval.bytes explains an entry at byte {b}, {b - a} bytes after the start "
                         f"of the segment (the broker never indexes the first batch)")
            return None
        if hi is not None and lo > hi:
            assert self.min_gap_at is not None and self.max_skip_at is not None
            (a, b), (c, d) = self.min_gap_at, self.max_skip_at
            notes.append(f"no single index.interval.bytes explains the gaps: entries at {a} and {b} are only "
                         f"{b - a} bytes apart, yet the batch at {d} is {d - c} bytes after the entry at {c} without "
                         f"one (broker restart, multi-batch appends, a config change, or lost entries)")
            return None
        if given is not None and lo > given:
            assert self.max_skip_at is not None    # a skip past the interval was measured
            c, d = self.max_skip_at
            notes.append(f"the batch at {d} is {d - c} bytes after the entry at {c} without one, more than "
                         f"index.interval.bytes={given} (broker restart, multi-batch appends, or lost entries)")
        return lo, hi

    def _interval_faults(self, given: int) -> None:
        prev = 0
        for pos, i, o in self._targets():
            if pos - prev <= given:
                if self.findings.room(INDEX_INTERVAL) <= 0:
                    self.findings.skip(INDEX_INTERVAL, 1)
                    prev = pos
                    continue
                self._fault(INDEX_INTERVAL, i, o,
                            f"slot {i}: position {pos} is only {pos - prev} bytes after "
                            f"{'the segment start' if prev == 0 else f'the previous entry ({prev})'}; with "
                            f"index.interval.bytes={given} a broker adds an entry only after more than {given} bytes")
            prev = pos

