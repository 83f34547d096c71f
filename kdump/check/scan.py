"""The recovery scanner: one read-only pass over a segment, every problem recorded.

``scan_segment`` walks the batches with ``format.walk.Walker`` (the one decoding core)
and checks each one, cheapest first, the way borg's ``_read`` does: framing (enough
bytes, a length within [minimum for the magic, bytes left]), magic, CRC, then offsets
and, with ``deep``, the records themselves. It does not stop at the first problem: it
records a Finding for each, and past the damage it resyncs on the next plausible batch
(magic, sane length, valid CRC) so the report says what lies beyond. The checks of one
batch are ``kdump.check.segment_checks``; the resync is ``kdump.check.resync``.

Two positions matter and are kept apart:

``valid_bytes``
    Where Kafka's ``LogSegment.recover`` would truncate the segment, following the rule in
    ``kdump.check.broker_rule``: the first entry that fails framing or ``ensureValid`` (size
    below the minimum, CRC), a torn or trailing tail; and, rarely, the whole segment when
    rebuilding the indexes meets a non-increasing offset (``InvalidOffsetException``,
    which makes ``LogLoader`` empty the segment). ``kdump verify --truncate`` and
    ``kdump recover`` cut exactly here.
``intact_beyond`` findings
    Runs of CRC-valid batches found after that point by resyncing: what a salvage
    could still copy out. Never used as a truncation point.

Finding kinds and their classes are declared in ``kdump.findings``. The first eight there
(torn_tail .. invalid_offset) decide ``valid_bytes`` when they come first: they are where
the broker stops (``ScanReport.cut`` is that finding); the others are kdump's own checks,
reported but never moving the cut, because the broker keeps those batches. Findings placed
after ``valid_bytes`` describe the part that is cut (what the resync found there). What the
broker checks is ``kdump.check.broker_rule``; cross-file kinds come from ``kdump.check.partition``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from kdump import _accel
from kdump import findings as F
from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE, assign_epoch, read_on
from kdump.check.resync import INT64_MAX, entry_head, intact_run, next_candidate, rest_is_zero
from kdump.check.scan_runs import PlainRuns
from kdump.format.batch import LOG_OVERHEAD
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.index import INT32_MAX
from kdump.format.walk import INVALID_BATCH, INVALID_SIZE, TORN_TAIL, TRAILING_BYTES, Walker
from kdump.model import (
    B_ATTRIBUTES,
    B_BASE_OFFSET,
    B_COUNT,
    B_CRC_VALID,
    B_LAST_OFFSET,
    B_MAGIC,
    B_PARTITION_LEADER_EPOCH,
    B_POSITION,
    B_SIZE,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    Batch,
    Finding,
)
from kdump.storage.mapped import MappedFile

# A segment whose only damage is one of these at its end was cut short, not corrupted.
TAIL_KINDS = frozenset({F.TORN_TAIL, F.TRAILING_BYTES, F.ZERO_TAIL})
# kdump's own findings that mark a batch as damaged although the broker would keep it.
# ``verify --truncate`` cuts at the first of these too (unless --broker-cut), so that what
# remains verifies clean; the broker's cut (valid_bytes) is never later than that.
KDUMP_CUT_KINDS = frozenset({F.OFFSET_REGRESSION, F.BASE_OFFSET_MISMATCH, F.LAST_OFFSET_DELTA, F.CODEC,
                             F.RECORD_DECODE, F.INVALID_BATCH, F.INVALID_MAGIC, F.INVALID_SIZE})


@dataclass
class ScanReport:
    """What one pass over a segment found. ``valid_bytes`` is the broker's truncation point."""

    file: str | None
    size: int
    base_offset: int | None                      # the segment's base (from its name), if known
    valid_bytes: int = 0
    batches: int = 0                             # in [0, valid_bytes)
    records: int = 0                             # header counts (decoded counts with deep)
    first_offset: int | None = None
    last_offset: int | None = None               # of the last batch kept; next offset = last + 1
    max_timestamp: int = -1
    findings: list[Finding] = field(default_factory=list)
    not_listed: dict[str, int] = field(default_factory=dict)     # kind -> findings past the first 50 of it
    cut: Finding | None = None                   # the finding at valid_bytes, if anything is cut
    intact_beyond: list[tuple[int, int, int, int | None, int | None]] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)   # (epoch, start offset), broker's rule
    # Transactional batches that matter for the .txnindex: each producer's first data batch
    # after a marker (batch None) and every control batch: (first offset, producer id, batch).
    txn_events: list[tuple[int, int, Batch | None]] = field(default_factory=list)
    deep: bool = False

    @property
    def cut_bytes(self) -> int:
        return self.size - self.valid_bytes

    @property
    def intact_bytes(self) -> int:
        """Bytes before the first damaged batch: ``valid_bytes``, or earlier where kdump's own
        checks (offsets, record decoding, magic) find damage the broker would keep."""
        if not self.findings:
            return self.valid_bytes
        first = min((f.position for f in self.findings
                     if f.kind in KDUMP_CUT_KINDS and f.position is not None and f.position < self.valid_bytes),
                    default=self.valid_bytes)
        return first

    @property
    def next_offset(self) -> int | None:
        """The offset the next batch would get (``readNextOffset``), None if the kept part is empty."""
        return None if self.last_offset is None else self.last_offset + 1

    @property
    def incomplete(self) -> bool:
        return any(f.cls == F.ERROR for f in self.findings)

    @property
    def damage(self) -> list[Finding]:
        return [f for f in self.findings if f.cls == F.DAMAGE]

    @property
    def status(self) -> str:
        return status_of(self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "kind": "log", "status": self.status, "size": self.size,
                "valid_bytes": self.valid_bytes, "intact_bytes": self.intact_bytes,
                "batches": self.batches, "records": self.records,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "findings": [f.to_dict() for f in self.findings]}


def status_of(findings: list[Finding]) -> str:
    """ok | torn_tail | damaged | unreadable, from a file's findings (anomalies and info: ok)."""
    if not findings:        # most files, asked several times each
        return "ok"
    if any(f.cls == F.ERROR for f in findings):
        return "unreadable"
    damage = [f for f in findings if f.cls == F.DAMAGE]
    if not damage:
        return "ok"
    if all(f.kind in TAIL_KINDS for f in damage):
        return "torn_tail"
    return "damaged"


class _Scan(PlainRuns):
    """One scan: ``run`` walks the segment and fills a ScanReport (the checks: ``SegmentChecks``;
    the runs handed to C: ``PlainRuns``)."""

    # -- phase 1: the part the broker keeps ------------------------------------------------------

    def run(self) -> None:
        pos = self.plain_start()
        cut: Finding | None = None
        while cut is None and pos < self.end:     # (a walk from the end finds nothing)
            # The C scanner CRC-checks the first batch alone: the plain run after it checks the rest.
            w = Walker(self.buf, pos, self.end, self.limits, first_chunk=1)
            cut = self.walk(w)
            if cut is not None or w.stop is None:
                break
            kept = read_on(self.buf, w, self.end)
            if kept is None:
                cut = self.stop(w.stop)
                break
            self.add(w.stop.kind, w.stop.position, w.stop.offset,
                     f"{w.stop.message}; the CRC is valid, so the broker keeps this batch")
            cut = self.batch(kept)
            pos = kept.next_position
        if cut is None:
            cut = self.final_time_entry()
        r = self.r
        r.valid_bytes = self.step.valid if cut is None else cut.position
        r.cut = cut
        r.max_timestamp = self.step.max_ts
        if cut is not None:
            self.beyond(cut)

    def walk(self, w: Walker) -> Finding | None:
        """The hot loop. A plain batch (v2, valid CRC, offsets above the previous ones and in
        range, nothing transactional, a known codec, its leader epoch not going down) whose
        index step is regular goes straight to the broker's rules (``IndexStep.take``,
        ``assign_epoch``): kdump's own checks cannot fail on it. Any other goes through
        ``batch``, which does every check.

        With the C accelerator, each run of plain batches after one taken here goes to
        ``scan_plain_run`` (the same conditions and rules, straight from the buffer); the
        walk resumes with a fresh Walker where it stopped, and ``w`` gets that Walker's stop
        and stop position at the end, as if it had walked the whole way itself."""
        if self.deep:
            for b in w:
                cut = self.batch(b)
                if cut is not None:
                    return cut
            return None
        r, st = self.r, self.step
        max_size, epochs = self.max_size, r.epochs
        lo = hi = None          # the offsets a plain batch may have: above lo, up to hi
        c_native = _accel.native()
        plain_run = c_native.scan_plain_run if c_native is not None else None
        buf, end = self.buf, self.end
        batches: Walker | None = w
        walker: Walker | None
        while batches is not None:
            walker, batches = batches, None
            for b in walker:
                first, last, count, attributes = b[B_BASE_OFFSET], b[B_LAST_OFFSET], b[B_COUNT], b[B_ATTRIBUTES]
                epoch = b[B_PARTITION_LEADER_EPOCH]
                # (magic 2: first and count are not None; hi is set with lo)
                if (b[B_MAGIC] == 2 and b[B_CRC_VALID] and lo is not None and lo < first <= last <= hi  # type: ignore[operator]
                        and b[B_SIZE] <= max_size and not attributes & (TRANSACTIONAL_FLAG | CONTROL_FLAG)
                        and 0 <= count <= last - first + 1 and (attributes & COMPRESSION_MASK) <= 4  # type: ignore[operator]
                        and epoch >= self.prev_epoch and not st.would_throw(b)):
                    st.take(b)
                    if epoch > self.prev_epoch:
                        assign_epoch(epochs, epoch, first)  # type: ignore[arg-type]  # magic 2: first is set
                        self.prev_epoch = epoch
                    r.batches += 1
                    r.records += count
                    r.last_offset = self.prev_last = lo = last
                else:
                    cut = self.batch(b)
                    if cut is not None:
                        return cut
                    if self.reach_base_at is not None and self.prev_last is not None:
                        # From here the plain path may run: above the last offset, within the segment's range.
                        lo, hi = max(self.prev_last, self.base - 1), self.base + INT32_MAX
                if plain_run is not None and lo is not None:
                    start = b[B_POSITION] + b[B_SIZE]
                    at, lo = self.plain_runs(plain_run, start, lo, hi)  # type: ignore[arg-type]  # set with lo
                    if at != start:
                        if at == end:       # C took every batch up to the end: nothing is left to walk
                            walker = None
                        else:
                            batches = Walker(buf, at, end, self.limits)
                        break
            if walker is None:
                w.stop, w.stop_position = None, end
            elif walker is not w:
                w.stop, w.stop_position = walker.stop, walker.stop_position
        return None

    # -- phase 1 ends: what the stop was ----------------------------------------------------------

    def _cut_base_offset(self, pos: int, end: int) -> int | None:
        """The next batch's base offset when zero bytes at the end, fewer than its 8, are its
        first bytes as that batch would have written them (big-endian: a small offset starts
        with zeros): a header cut off, not a preallocated tail; None otherwise."""
        if self.prev_last is None or not 0 < end - pos < 8:
            return None
        nxt = self.prev_last + 1
        return nxt if nxt.to_bytes(8, "big", signed=True)[:end - pos] == bytes(end - pos) else None

    def stop(self, f: Finding) -> Finding:
        buf, end, pos = self.buf, self.end, cast(int, f.position)     # a walk's stop is located
        head = entry_head(buf, pos, end)
        if f.kind == TRAILING_BYTES or f.kind == INVALID_SIZE:
            cut_at = self._cut_base_offset(pos, end) if rest_is_zero(buf, pos, end) else None
            if cut_at is not None:
                return self.add(TORN_TAIL, pos, cut_at,
                                f"the last {end - pos} bytes are the start of the next batch header (the high "
                                f"bytes of base offset {cut_at}), cut off", checked=False)
            if rest_is_zero(buf, pos, end):
                return self.add(F.ZERO_TAIL, pos, None, f"the last {end - pos} bytes are all zero (a preallocated "
                                                      f"or unflushed tail)")
            return self.add(f.kind, pos, f.offset, f.message, checked=False)
        if f.kind == TORN_TAIL and head is not None:
            size = head[1] + LOG_OVERHEAD
            if size > self.max_size:
                return self.add(F.OVERSIZE, pos, f.offset, f"entry length {size} exceeds the maximum message size "
                                                         f"{self.max_size} and runs past the end of the file",
                                checked=False)
            if self.resync and next_candidate(buf, pos + 1, end, self.max_size, *self.window(f.offset),
                                              budget=self.crc_budget) is not None:
                return self.add(INVALID_SIZE, pos, f.offset,
                                f"entry length {size} runs past the end of the file ({end - pos} bytes left) "
                                f"although intact batches follow: the length field is corrupt", checked=False)
            return self.add(TORN_TAIL, pos, f.offset, f.message, checked=False)
        if f.kind == INVALID_BATCH:
            return self.add(F.CRC_MISMATCH, pos, f.offset, f"{f.message}; the CRC does not match either",
                            checked=False)
        return self.add(f.kind, pos, f.offset, f.message, checked=False)

    # -- phase 2: what lies beyond the cut --------------------------------------------------------

    def window(self, offset_field: int | None, after: int | None = None) -> tuple[int, int]:
        """Offsets a batch found by resyncing may have: past what came before (the last kept
        batch, or the damaged entry's own offset when that is plausible), within the segment."""
        base = self.base if self.base is not None else 0
        hi = base + INT32_MAX if self.base is not None else INT64_MAX
        lo = (after if after is not None else self.r.last_offset if self.r.last_offset is not None else base - 1) + 1
        if offset_field is not None and lo <= offset_field <= hi:
            lo = offset_field + 1
        return max(lo, 0), hi

    def beyond(self, cut: Finding) -> None:
        if not self.resync or cut.kind in (F.ZERO_TAIL, F.TRAILING_BYTES) or cut.position is None:
            return
        buf, end = self.buf, self.end
        if cut.kind == F.INVALID_OFFSET:
            search, (lo, hi) = cut.position, self.window(None, self.base - 1)
        else:
            search, (lo, hi) = cut.position + 1, self.window(self.unchecked_offset.get(cut.position, cut.offset))
        while True:
            start = next_candidate(buf, search, end, self.max_size, lo, hi, budget=self.crc_budget)
            if start is None:
                return
            stop_at, n, first, last, bad = intact_run(buf, start, end, self.limits)
            self.r.intact_beyond.append((start, stop_at, n, first, last))
            self.add(F.INTACT_BEYOND, start, first,
                     f"{n} intact batch{'es' if n != 1 else ''} (offsets {first}..{last}, {stop_at - start} bytes) "
                     f"past the cut at byte {cut.position}; `kdump recover --salvage` can copy them out")
            if bad is not None and not (bad.kind in (TRAILING_BYTES, INVALID_SIZE) and rest_is_zero(buf, bad.position,  # type: ignore[arg-type]  # a walk finding, located
                                                                                               end)):
                self.add(bad.kind, bad.position, bad.offset, bad.message, checked=False)
            search = stop_at + 1 if bad is not None else end
            lo, hi = self.window(bad.offset if bad is not None else None, last)
            if search >= end:
                return


def scan_segment(buf, *, base_offset: int | None = None, file: str | None = None, deep: bool = False,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, resync: bool = True,
                 limits: Limits = DEFAULT_LIMITS) -> ScanReport:
    """Scan the segment held in ``buf`` (bytes or a read-only mmap); never writes.

    ``base_offset`` is the segment's base from its file name (None: the first batch's
    offset is taken). ``deep`` decodes every record. ``index_interval_bytes`` is the
    topic's ``index.interval.bytes``, which decides where the broker's index rebuild can
    meet an offset regression.
    """
    report = ScanReport(file=file, size=len(buf), base_offset=base_offset, deep=deep)
    scan = _Scan(buf, report, deep, max_message_size, index_interval_bytes, resync, limits)
    scan.run()
    scan.note_suppressed()
    return report


class scanned_file:  # noqa: N801 - used as a function, a context manager
    """``scan_segment`` on a file, mapped read-only (raises InputError if it cannot be read):
    the report and the file's bytes, held until the block ends, so that checks that need them
    again read nothing twice (a layout's chunked object: detransformed as the scan asks, and
    again as those checks ask). The scan calls nothing back: its caller hands both on. (A
    class, not a generator: verify enters one per segment, and a partition is often one.)"""

    def __init__(self, path: str, *, base_offset: int | None = None, **options: Any) -> None:
        self.path, self.base_offset, self.options = path, base_offset, options
        self.file: MappedFile | None = None

    def __enter__(self) -> tuple[ScanReport, Any]:
        f = self.file = MappedFile(self.path, stream=True)
        try:
            f.advise_sequential()
            f.reading_to(None)
            return scan_segment(f.buf, base_offset=self.base_offset, file=self.path, **self.options), f.buf
        except BaseException:
            f.close()
            raise

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            self.file.close()


def scan_file(path: str, *, base_offset: int | None = None, **options: Any) -> ScanReport:
    """``scan_segment`` on a file, mapped read-only (raises InputError if it cannot be read)."""
    with scanned_file(path, base_offset=base_offset, **options) as (report, _):
        return report
