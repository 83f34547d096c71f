"""The time index against its log: one forward pass keeping the running max timestamp.

``TimeIndexCheck`` is fed every batch in log order (``kdump.check.indexes.forward_pass.verify_indexes``
drives it) and returns an ``IndexCheck``: timestamps never going back, each the largest up to
its offset and carried by the batch (or record) the offset names, nothing past the end, the
roll/close entry present in a trimmed file. Records are decoded only for batches entries
point at, and only to tell the two conventions ("last", "record") apart.
"""

from __future__ import annotations

from collections.abc import Iterator

from kdump.check.capped import Capped
from kdump.check.indexes.index_file import (
    BASE,
    END,
    LAST,
    MAGIC,
    MAX_TS,
    POS,
    IndexCheck,
    Target,
    convention_of,
    file_findings,
    live_entries,
    target_walk,
)
from kdump.errors import KdumpError
from kdump.findings import (
    TIME_BACKWARDS,
    TIME_BELOW_BASE,
    TIME_MISMATCH,
    TIME_NO_FINAL,
    TIME_NOT_FOUND,
    TIME_NOT_MAX,
    TIME_ORDER,
    TIME_PAST_END,
)
from kdump.format.batch import NO_TIMESTAMP
from kdump.format.codecs import Limits
from kdump.format.timeindex import ENTRY_SIZE as TIME_SLOT
from kdump.format.timeindex import TimeIndexFile
from kdump.format.walk import Walker, record_slices
from kdump.model import LOG_APPEND_TIME, Batch, Finding

AMBIGUOUS_DECODE_BUDGET = 64     # "last" entries decoded only to tell conventions apart


def _first_max_record(buf, b: Batch, limits: Limits) -> int | None:
    """Offset of the first record carrying the batch's max timestamp; None if the records do not decode."""
    try:
        for records in record_slices(buf, b, limits):
            for r in records:
                if r.timestamp == b.max_timestamp:
                    return r.offset
    except KdumpError:
        return None
    return None


class TimeIndexCheck:
    """Fed every batch in log order; keeps the running max timestamp and checks entries by offset."""

    def __init__(self, buf, base_offset: int, tix: TimeIndexFile, limits: Limits) -> None:
        self.buf = buf
        self.limits = limits
        self.base = base_offset
        self.entries, self.tail = live_entries(tix)
        self.trimmed = self.tail is None and tix.partial_bytes == 0
        self.findings = Capped(file_findings(tix))
        in_order = True
        prev = None
        findings = self.findings
        last_ts = None
        below = 0
        for i, e in enumerate(self.entries):
            if last_ts is None or e.timestamp > last_ts:
                last_ts = e.timestamp
            if e.offset < base_offset:
                below += 1
                if findings.room(TIME_BELOW_BASE) > 0:
                    self._fault(TIME_BELOW_BASE, i, e.offset,
                                f"slot {i}: offset {e.offset} is below the segment base offset {base_offset}")
                else:
                    findings.skip(TIME_BELOW_BASE, 1)
                continue
            if prev is not None:
                j, p = prev
                if e.timestamp < p.timestamp:
                    if findings.room(TIME_BACKWARDS) > 0:
                        self._fault(TIME_BACKWARDS, i, e.offset,
                                    f"slot {i}: timestamp {e.timestamp} is earlier than {p.timestamp} in slot {j} "
                                    f"(time goes backwards)")
                    else:
                        findings.skip(TIME_BACKWARDS, 1)
                if e.offset < p.offset:
                    in_order = False
                    if findings.room(TIME_ORDER) > 0:
                        self._fault(TIME_ORDER, i, e.offset,
                                    f"slot {i}: offset {e.offset} is less than {p.offset} in slot {j}")
                    else:
                        findings.skip(TIME_ORDER, 1)
            prev = (i, e)
        self.last_ts = NO_TIMESTAMP if last_ts is None else last_ts     # the largest of any entry
        self.n_targets = len(self.entries) - below
        self.targets = target_walk(self.entries, in_order, self._in_order,
                                   lambda t: (t[0] - base_offset, t[1], t[2]),
                                   lambda t: (t[0] + base_offset, t[1], t[2]), self.n_targets)
        self._targets = self.targets.walk
        self.n_targets -= self.targets.left_out
        self.it = it = self._targets()
        self.cur: Target = next(it, END)
        self.nxt: Target = next(it, END)
        self.next_off: int | float = self.cur[0]
        self.t = 0      # targets the walk has passed
        self.max_ts = NO_TIMESTAMP
        self.max_at: tuple[int, int] | None = None      # (offset, position) where max_ts was first reached
        self.prev_last = base_offset - 1
        self.log_last: int | None = None
        self.counts = {"last": 0, "record": 0, "either": 0}
        self.any_v2 = False
        self.last_distinct = False
        self.budget = AMBIGUOUS_DECODE_BUDGET

    def _in_order(self) -> Iterator[tuple[int, int, int]]:
        """The targets (offset, slot, timestamp) in slot order: entries below the base left out."""
        base = self.base
        for i, (ts, o) in enumerate(self.entries):
            if o >= base:
                yield o, i, ts

    def _advance(self) -> None:
        self.cur, self.nxt = self.nxt, next(self.it, END)
        self.t += 1

    def _fault(self, kind: str, slot: int, offset: int | None, message: str) -> None:
        self.findings.append(Finding(kind, slot * TIME_SLOT, offset, message))

    def run(self, batches) -> None:
        """Feed batches in log order: the running max in locals, entries checked as their batch passes."""
        max_ts, next_off, prev_last = self.max_ts, self.next_off, self.prev_last
        cur, nxt, it, counts = self.cur, self.nxt, self.it, self.counts
        b = None
        for b in batches:
            mt = b[MAX_TS]
            if mt > max_ts:
                max_ts = self.max_ts = mt
                self.max_at = (b[LAST], b[POS])
                if b[MAGIC] >= 2:
                    self.any_v2 = True
            if next_off == b[LAST]:
                # The usual entry, taken here as ``_check`` would: the only one in this batch, its
                # last offset with the batch's max timestamp, the running max (no record decoded).
                first = b[BASE]
                single = first == next_off
                if (nxt[0] > next_off and first is not None and first <= next_off
                        and cur[2] == mt == max_ts
                        and (single or self.last_distinct or self.budget <= 0)):
                    counts["either" if single or not self.last_distinct else "last"] += 1
                    prev_last = next_off  # type: ignore[assignment]  # == b[LAST] here: an int, not INF
                    cur, nxt = nxt, next(it, END)
                    next_off = cur[0]
                    self.t += 1
                    continue
            if next_off <= b[LAST]:
                self.prev_last = prev_last
                self.cur, self.nxt = cur, nxt
                self._entries_in(b)
                cur, nxt, next_off = self.cur, self.nxt, self.next_off
            prev_last = b[LAST]
        self.cur, self.nxt, self.next_off = cur, nxt, next_off
        self.prev_last = prev_last
        if b is not None:
            self.log_last = b[LAST]

    def on_batch(self, b: Batch) -> None:
        self.run((b,))

    def _entries_in(self, b: Batch) -> None:
        last = b.last_offset
        while self.cur[0] <= last:
            o, i, ts = self.cur
            self._check(i, o, ts, b)
            self._advance()
        self.next_off = self.cur[0]

    def _check(self, i: int, o: int, ts: int, b: Batch) -> None:
        low = b.base_offset if b.base_offset is not None else self.prev_last + 1
        if o < low:
            self._fault(TIME_NOT_FOUND, i, o, f"slot {i}: offset {o} is in no batch (the log goes from "
                                              f"{self.prev_last} to {low})")
            return
        if ts != self.max_ts:
            if ts < self.max_ts:
                assert self.max_at is not None      # set when max_ts was reached
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
            assert self.max_at is not None      # set when max_ts was reached
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

    def close(self, walker: Walker, log_size: int) -> list[Finding]:
        """The findings, once the walk has ended (``finish`` adds what else the check learned)."""
        room = self.findings.room(TIME_PAST_END)
        rest = self.n_targets - self.t      # the targets the walk did not reach: the first ``room`` made
        for _ in range(max(0, min(room, rest))):
            o, i, _ts = self.cur
            self._advance()
            where = f"the last offset in the log is {self.log_last}" if self.log_last is not None else "no batches"
            if walker.stop is not None:
                where += f"; the log is readable only up to byte {walker.stop_position}"
            self._fault(TIME_PAST_END, i, o, f"slot {i}: offset {o} is past the end of the log ({where})")
        self.findings.skip(TIME_PAST_END, rest - room)
        if self.trimmed and self.max_ts > NO_TIMESTAMP and not self._v1_only():     # (that is a note: ``finish``)
            last_ts = self.last_ts
            if last_ts < self.max_ts:
                assert self.max_at is not None      # set when max_ts was reached
                m_off, m_pos = self.max_at
                n = len(self.entries)
                self.findings.append(Finding(
                    TIME_NO_FINAL, n * TIME_SLOT, m_off,
                    f"the file ends after {n} entries (largest timestamp {last_ts}) but the log's largest timestamp "
                    f"is {self.max_ts} (offset {m_off}, batch at position {m_pos}): the entry a broker appends when "
                    f"it rolls or closes the segment is missing (file truncated?)"))
        if len(self.findings) > 1:
            self.findings.sort(key=lambda f: (f.position if f.position is not None else -1))
        return self.findings

    def _v1_only(self) -> bool:
        # Kafka 0.10.0 wrote v1 timestamps without time indexes; an upgraded broker created them empty.
        return self.trimmed and not self.entries and not self.any_v2 and self.max_ts > NO_TIMESTAMP

    def finish(self, walker: Walker, log_size: int) -> IndexCheck:
        findings = self.close(walker, log_size)
        notes = []
        if walker.stop is not None:
            notes.append(f"the log is readable only up to byte {walker.stop_position} of {log_size} "
                         f"({walker.stop.message})")
        notes += self.targets.note()
        if self._v1_only():
            notes.append(f"empty time index for magic 1 data (largest timestamp {self.max_ts}): as a broker "
                         f"before 0.10.1, or one upgraded from it, leaves it")
        return IndexCheck("timeindex", findings, self._convention(), len(self.entries), None, notes,
                          walker.stop_position, log_size)

    def _convention(self) -> str | None:
        if not self.entries:
            return None
        return convention_of(self.counts, "record", "either")

