"""Walking the entries of a log segment, the way ``FileLogInputStream.nextBatch`` does.

Every entry starts ``offset int64 | size int32`` and has its magic at byte 16. Walking
stops, as in Kafka, when fewer than 17 bytes remain (trailing bytes) or when an entry
runs past the end (a torn tail, normal after a crash); unlike Kafka it also stops, with a
finding instead of an exception, on an impossible size or an unknown magic. The stop
position and reason are on the walker afterwards so callers can report them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kdump import _accel
from kdump.errors import KdumpError
from kdump.findings import INVALID_BATCH, INVALID_MAGIC, INVALID_SIZE, TORN_TAIL, TRAILING_BYTES
from kdump.format.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    parse_v2,
)
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.legacy import RECORD_OVERHEAD_V0, decode_legacy, min_size, parse_legacy
from kdump.format.legacy_stream import legacy_record_slices
from kdump.format.record_stream import v2_record_slices
from kdump.format.records import decode_v2
from kdump.model import B_POSITION, B_SIZE, Batch, Finding, Record

# Why a walk stops early is one of the finding kinds imported above (fewer than 17 bytes left,
# an entry running past the end, a size below the minimum, an unknown magic, a legacy message
# whose framing does not parse).

# The 17 bytes every entry starts with, whatever its magic (HEADER_SIZE_UP_TO_MAGIC).
HEADER_UP_TO_MAGIC = struct.Struct(">qiib")     # offset, size, (leader epoch | legacy crc), magic
LAST_OFFSET_DELTA = struct.Struct(">i")


# Batches per call of the C scanner (scan_v2): 4 at first, so that a caller wanting
# only the first batch or two does not pay for CRC-checking hundreds, then up to 256.
SCAN_FIRST, SCAN_CHUNK = 4, 256
# Bytes one C call may cover: the call holds the GIL and touches every page it crosses, so
# a bound keeps memory (and the caller's chances to react) flat on segments of huge batches.
SCAN_SPAN = 32 << 20
# A buffer with a ``follow(position)`` method (kdump.storage.mapped's mapping of a large file)
# is told how far the walk has come, every FOLLOW_STEP bytes or so, to drop pages behind.
FOLLOW_STEP = 8 << 20
_NO_FOLLOW = (bytes, memoryview)    # (a failed getattr costs a formatted AttributeError)
# A buffer with a ``need(start, end)`` method (a remote or chunked object's, filled as asked)
# is asked for every range before the walk reads it, at most its ``need_span`` at a time.


def need_of(buf):
    """The buffer's ``need(start, end)``, which any reader of it calls before reading a range
    (None: everything is there: bytes, a mapped file)."""
    return None if type(buf) in _NO_FOLLOW else getattr(buf, "need", None)


class Walker:
    """Iterate the batches of ``buf[start:end]``; afterwards ``stop`` says why it ended.

    ``stop`` is None when the data ended exactly at an entry boundary. ``stop_position``
    is where the first byte not part of a yielded batch is.

    Iterating is the walk for a caller taking every batch. A caller with its own reader of
    some entries (storage.record_reader's, for a C writer drawing plain v2 batches from the
    bytes) steps instead: ``span()`` is where such a run may start, ``resume(pos)`` says how
    far that reader got, ``take(n)`` gives the batches it left. The walk calls nobody.
    """

    def __init__(self, buf, start: int = 0, end: int | None = None, limits: Limits = DEFAULT_LIMITS,
                 first_chunk: int = SCAN_FIRST) -> None:
        self.buf = buf
        self.first_chunk = first_chunk      # batches of the first C call (SCAN_FIRST: a caller may want few)
        self.start = start
        self.end = len(buf) if end is None else min(end, len(buf))
        self.limits = limits
        self.stop: Finding | None = None
        self.stop_position = start
        self.ended = False
        self._follow = None if type(buf) in _NO_FOLLOW else getattr(buf, "follow", None)
        self._next_follow = start + FOLLOW_STEP
        self._need = need_of(buf)
        self._step = SCAN_SPAN if self._need is None else getattr(buf, "need_span", SCAN_SPAN)

    def __iter__(self) -> Iterator[Batch]:
        buf, end = self.buf, self.end
        view = memoryview(buf)
        last_head = end - HEADER_SIZE_UP_TO_MAGIC
        pos = self.start
        c = _accel.native()     # once per walk
        scan = c.scan_v2 if c is not None else None
        chunk = self.first_chunk
        follow = self._follow
        next_follow = pos + FOLLOW_STEP
        judged = self._judged
        need, step = self._need, self._step
        try:
            while pos < last_head:
                if follow is not None and pos >= next_follow:
                    follow(pos)
                    next_follow = pos + FOLLOW_STEP
                if scan is not None:
                    # The C scanner takes the run of well-formed v2 batches from here and
                    # stops before the first entry that needs judging, handled below.
                    span_end = min(end, pos + step)
                    if need is not None:
                        need(pos, span_end)
                    batches, pos = scan(buf, pos, span_end, chunk)
                    if batches:
                        for batch in batches:
                            self.stop_position = batch[B_POSITION] + batch[B_SIZE]
                            yield batch
                        if len(batches) == chunk or pos >= last_head or span_end < end:
                            chunk = min(chunk * 4, SCAN_CHUNK)
                            continue
                batch = judged(pos, view)
                if batch is None:
                    return
                pos = self.stop_position
                yield batch
            self._ran_out(pos)
        finally:
            view.release()
            self.close()

    # -- stepping, for a caller with its own reader of some entries -------------------------------

    def span(self) -> tuple[int, int] | None:
        """(start, end): where the walk stands and how far one call of a caller's own reader may
        go (SCAN_SPAN, as for the C scanner, or the buffer's need_span); None once fewer than an
        entry header's bytes are left."""
        pos = self.stop_position
        if self.ended or pos >= self.end - HEADER_SIZE_UP_TO_MAGIC:
            return None
        span_end = min(self.end, pos + self._step)
        if self._need is not None:
            self._need(pos, span_end)
        return pos, span_end

    def resume(self, pos: int) -> None:
        """Go on from ``pos``: the caller's own reader took the whole entries before it."""
        if not self.stop_position <= pos <= self.end:
            raise ValueError(f"resume at {pos}, outside [{self.stop_position}, {self.end}]")
        self.stop_position = pos

    def take(self, want: int) -> list[Batch]:
        """Up to ``want`` batches from ``stop_position`` (at least one); [] once the walk has
        ended (``stop`` says why)."""
        pos = self.stop_position
        if self.ended:
            return []
        follow = self._follow
        if follow is not None and pos >= self._next_follow:
            follow(pos)
            self._next_follow = pos + FOLLOW_STEP
        if pos >= self.end - HEADER_SIZE_UP_TO_MAGIC:
            self._ran_out(pos)
            return []
        c = _accel.native()
        if c is not None:
            span_end = min(self.end, pos + self._step)
            if self._need is not None:
                self._need(pos, span_end)
            batches, pos = c.scan_v2(self.buf, pos, span_end, want)
            if batches:
                self.stop_position = pos
                return batches
        # One entry judged here at most: a legacy wrapper's inner set stays the one just opened
        # (legacy.inner_set, for a writer that draws it) until the caller has seen it.
        batch = self._judged(pos, None)
        return [] if batch is None else [batch]

    def close(self) -> None:
        """Tell a following buffer how far this walk got, for the last time."""
        if self._follow is not None:
            self._follow(self.stop_position)

    # -- the rules --------------------------------------------------------------------------------

    def _judged(self, pos: int, view: memoryview | None) -> Batch | None:
        """The entry at ``pos`` (at least a header's bytes left), read in Python; None: the walk
        stops there (``stop`` says why). Moves ``stop_position`` past it."""
        buf, end, need = self.buf, self.end, self._need
        if need is not None:
            need(pos, pos + HEADER_SIZE_UP_TO_MAGIC)
        offset, size, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, pos)
        next_pos = pos + LOG_OVERHEAD + size
        if size < RECORD_OVERHEAD_V0:
            self._halt(INVALID_SIZE, pos, offset,
                       f"Found record size {size} smaller than minimum record overhead (14)")
            return None
        if next_pos > end:
            self._halt(TORN_TAIL, pos, offset,
                       f"entry of {size + LOG_OVERHEAD} bytes runs past the end ({end - pos} bytes left)")
            return None
        if need is not None:
            need(pos, next_pos)
        if magic == 2:
            if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
                self._halt(INVALID_SIZE, pos, offset,
                           f"Record batch is corrupt (the size {size + LOG_OVERHEAD} is smaller than "
                           f"the minimum allowed overhead {RECORD_BATCH_OVERHEAD})")
                return None
            batch = parse_v2(buf, pos, view)
        elif magic in (0, 1):
            if size < min_size(magic):
                self._halt(INVALID_SIZE, pos, offset,
                           f"Record is corrupt (the size {size} is smaller than the minimum "
                           f"record overhead {min_size(magic)} for magic {magic})")
                return None
            try:
                batch = parse_legacy(buf, pos, self.limits)
            except KdumpError as e:
                self._halt(INVALID_BATCH, pos, offset, e.message)
                return None
        else:
            self._halt(INVALID_MAGIC, pos, offset, f"invalid magic byte {magic}")
            return None
        self.stop_position = next_pos
        return batch

    def _ran_out(self, pos: int) -> None:
        """The walk reached ``pos`` with fewer bytes left than an entry header."""
        self.ended = True
        if pos < self.end:
            self._halt(TRAILING_BYTES, pos, None, f"{self.end - pos} trailing bytes are too few for an entry header")

    def _halt(self, kind: str, pos: int, offset: int | None, message: str) -> None:
        self.ended = True
        if pos == 0 and offset is not None and (offset < 0 or kind == INVALID_MAGIC):
            # The very first entry is not even shaped like one (a PNG renamed .log): say so.
            message = f"does not look like a Kafka log segment: {message[0].lower()}{message[1:]}"
        self.stop_position = pos
        self.stop = Finding(kind, pos, offset, message)

    @property
    def trailing_bytes(self) -> int:
        """Bytes after the last whole batch (DumpLogSegments' "invalid bytes at the end")."""
        return self.end - self.stop_position


def entry_at_or_after(buf, pos: int, target: int, end: int) -> int | None:
    """The start of the first entry at or after ``target``, hopping entry to entry from the
    one at ``pos`` by their framing alone (sizes and magics, the Walker's stop rules: no
    CRC, no wrapper opened, no object made); None where such a walk stops first or at the
    end. For where entries start (storage.split's cuts); the C twin hops the v2 runs."""
    end = min(end, len(buf))
    hop = c.v2_hop if (c := _accel.native()) is not None else None
    unpack_head = HEADER_UP_TO_MAGIC.unpack_from
    follow = getattr(buf, "follow", None)       # (the Walker's: pages behind are dropped)
    while pos < target:
        if hop is not None:
            pos = hop(buf, pos, end, target)
            if follow is not None:
                follow(pos)
            if pos >= target:
                break
        if end - pos < HEADER_SIZE_UP_TO_MAGIC:
            return None
        _, size, _, magic = unpack_head(buf, pos)
        if size < RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end or magic not in (0, 1, 2):
            return None
        if size + LOG_OVERHEAD < (RECORD_BATCH_OVERHEAD if magic == 2 else LOG_OVERHEAD + min_size(magic)):
            return None
        pos += LOG_OVERHEAD + size
    return pos if end - pos >= HEADER_SIZE_UP_TO_MAGIC else None


def last_offset_at(buf, pos: int) -> int:
    """The last offset of the entry at ``pos`` from its header: a v2 batch's base offset plus
    its last offset delta, a legacy message's own offset (a wrapper's: its last inner one)."""
    offset, _, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, pos)
    return offset + LAST_OFFSET_DELTA.unpack_from(buf, pos + LAST_OFFSET_DELTA_OFFSET)[0] if magic == 2 else offset


def decode_records(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> list[Record]:
    """The records of any batch, decompressing as needed; raises a located KdumpError."""
    if batch.magic >= 2:
        return decode_v2(buf, batch, limits)
    return decode_legacy(buf, batch, limits)


def record_slices(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> Iterator[list[Record]]:
    """``decode_records`` a slice at a time (``record_stream.v2_record_slices``, a legacy
    wrapper's inner messages ``legacy_stream.legacy_record_slices``): for callers that can
    take the records piecewise, so a batch of millions costs one slice at once."""
    need = need_of(buf)
    if need is not None:        # (a batch met again, behind the walk that found it)
        need(batch.position, batch.position + batch.size)
    if batch.magic >= 2:
        yield from v2_record_slices(buf, batch, limits)
    else:
        yield from legacy_record_slices(buf, batch, limits)
