"""Kafka's segment-recovery rule, in one place: which batches a broker keeps when it recovers a
segment, where it cuts, and the indexes it writes on the way.

What a Kafka 4.3 broker does, read from its sources (``LogSegment.recover``,
``FileLogInputStream.nextBatch``, ``DefaultRecordBatch``/``LegacyRecord.ensureValid``,
``OffsetIndex.append``, ``TimeIndex.maybeAppend``), for each entry of the ``.log`` in turn:

1. Framing. Fewer than 17 bytes left (offset, length, epoch, magic): the walk ends, the rest
   is cut. A length below 14 (the smallest legacy message) is corrupt: cut here. An entry
   running past the end of the file ends the walk: cut here. The magic byte only picks the
   parser: below 2 legacy, anything else (3..127 too) a v2 batch.
2. ``ensureValid``. v2: at least 61 bytes, and the CRC-32C over attributes..end matches.
   Legacy: at least 14 bytes, and the CRC-32 over magic..end matches. Nothing else: the
   magic byte (outside the v2 CRC), the record framing, the compression, the message size
   (``max.message.bytes``), the timestamps and the offsets across batches are not checked.
3. The last offset must be within an int32 above the segment's base offset; otherwise the
   broker splits the segment (``LogSegmentOffsetOverflowException``) rather than cutting.
4. The index step: once more than ``index.interval.bytes`` have been kept since the last
   entry (so never for the first batch), an offset index entry (the batch's last offset,
   its position) and a time index entry (the largest timestamp so far, the last offset of
   its batch) if that timestamp grew. An offset not above the previous offset entry, or a
   time entry whose offset goes back, throws ``InvalidOffsetException``: ``LogLoader`` then
   empties the whole segment (``truncateTo(baseOffset)``).
5. Batches with magic >= 2 also assign their leader epoch (when >= 0 and above the latest)
   and update producer state; aborted transactions that complete go to the ``.txnindex``.

After the walk: the log is cut to the bytes kept, and the largest timestamp gets a last
time index entry if it grew. ``kdump.check.scan`` (verify), ``kdump index --rebuild``, ``verify
--truncate`` and ``kdump recover`` all take these rules from here, the scanner's hot loop
included (``IndexStep.would_throw`` and ``take``, ``assign_epoch``). Its C twin
(``_speedups.scan_plain_run``, in ``_speedups/scan.c``) applies steps 4 and 5 to runs of
plain batches; ``tests/speedups/test_speedups_scan.py`` proves the two equal.
"""

from __future__ import annotations

import struct

from kdump.errors import InvalidFileError, UsageError
from kdump.format.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, parse_v2
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.crc import crc32
from kdump.format.index import INT32_MAX, encode_index
from kdump.format.index_encode import TIME_OFFSET_CONVENTIONS, max_timestamp_record_offset
from kdump.format.legacy import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1
from kdump.format.timeindex import encode_timeindex
from kdump.format.walk import HEADER_UP_TO_MAGIC, INVALID_BATCH, INVALID_MAGIC, INVALID_SIZE, Walker, need_of
from kdump.model import Batch, IndexEntry, TimeIndexEntry
from kdump.storage.mapped import MappedFile

DEFAULT_INDEX_INTERVAL_BYTES = 4096       # index.interval.bytes
# message.max.bytes' default since Kafka 0.11 (1 MiB + the 12-byte log overhead). Recovery does
# not check it: kdump uses it only to judge what is plausible when it resyncs past damage.
DEFAULT_MAX_MESSAGE_SIZE = 1048588
MAGIC_V2 = 2

# Where kdump's Walker stops although the broker may read on (it is stricter outside the CRC).
STRICTER_STOPS = frozenset({INVALID_MAGIC, INVALID_SIZE, INVALID_BATCH})

_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")


def entry_passes(buf, pos: int, end: int) -> Batch | None:
    """The entry at ``pos`` as a Batch if steps 1 and 2 above accept it, else None."""
    if end - pos < HEADER_SIZE_UP_TO_MAGIC:
        return None
    need = need_of(buf)
    if need is not None:
        need(pos, pos + HEADER_SIZE_UP_TO_MAGIC)
    offset, size, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, pos)
    if size < RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end:
        return None
    if need is not None:
        need(pos, pos + LOG_OVERHEAD + size)
    if magic >= MAGIC_V2:
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            return None
        batch = parse_v2(buf, pos)
        return batch if batch.crc_valid else None
    (stored,) = _U32.unpack_from(buf, pos + LOG_OVERHEAD)
    if crc32(memoryview(buf)[pos + 16:pos + LOG_OVERHEAD + size]) != stored:
        return None
    ts = NO_TIMESTAMP
    if magic == 1 and size >= RECORD_OVERHEAD_V1:
        (ts,) = _I64.unpack_from(buf, pos + 18)
    return Batch(position=pos, base_offset=offset, last_offset=offset, count=1, size=size + LOG_OVERHEAD,
                 magic=magic, crc=stored, crc_valid=True, attributes=buf[pos + 17], partition_leader_epoch=-1,
                 base_timestamp=ts, max_timestamp=ts, producer_id=-1, producer_epoch=-1, base_sequence=-1)


def read_on(buf, walker: Walker, end: int) -> Batch | None:
    """The entry where ``walker`` stopped, if the broker reads it although the Walker did not."""
    if walker.stop is None or walker.stop.kind not in STRICTER_STOPS:
        return None
    return entry_passes(buf, walker.stop_position, end)


def offset_in_range(base_offset: int, last_offset: int) -> bool:
    """Step 3: ``LogSegment.ensureOffsetInRange``."""
    return 0 <= last_offset - base_offset <= INT32_MAX


def epoch_starts(epochs: list[tuple[int, int]], epoch: int) -> bool:
    """Step 5: does a batch's leader epoch start a new entry (``LeaderEpochFileCache.assign``)?"""
    return epoch >= 0 and (not epochs or epoch > epochs[-1][0])


def assign_epoch(epochs: list[tuple[int, int]], epoch: int, first_offset: int) -> None:
    """Step 5: ``LeaderEpochFileCache.assign`` as recovery calls it."""
    if epoch_starts(epochs, epoch):
        epochs.append((epoch, first_offset))


class IndexStep:
    """Step 4 and the bytes kept, as ``LogSegment.recover`` keeps them for one segment.

    ``take`` returns None, or the reason the broker would throw ``InvalidOffsetException``.
    With ``record`` the entries are kept (``offsets``, ``times``); the scanner keeps only
    the last ones.
    """

    __slots__ = (
        "index_last",
        "interval",
        "last_entry_at",
        "max_ts",
        "max_ts_offset",
        "offsets",
        "time_last",
        "times",
        "valid",
    )

    def __init__(self, interval: int = DEFAULT_INDEX_INTERVAL_BYTES, record: bool = False) -> None:
        self.interval = interval
        self.valid = 0
        self.last_entry_at = 0
        self.max_ts, self.max_ts_offset = NO_TIMESTAMP, -1
        self.index_last: int | None = None
        self.time_last: tuple[int, int] | None = None
        self.offsets: list[IndexEntry] | None = [] if record else None
        self.times: list[TimeIndexEntry] | None = [] if record else None

    def would_throw(self, batch: Batch) -> bool:
        """Would ``take(batch)`` meet ``InvalidOffsetException``? (Nothing changes; the scanner's
        fast path leaves such a batch to its checks.)"""
        if self.valid - self.last_entry_at <= self.interval:
            return False
        last = batch.last_offset
        return self.offset_refused(last) or self.time_refused(last if batch.max_timestamp > self.max_ts
                                                               else self.max_ts_offset)

    def offset_refused(self, last: int) -> bool:
        """``OffsetIndex.append`` throws: an offset not above the last entry's."""
        return self.index_last is not None and last <= self.index_last

    def time_refused(self, offset: int) -> bool:
        """``TimeIndex.maybeAppend`` throws: an offset below the last entry's."""
        return self.time_last is not None and offset < self.time_last[1]

    def take(self, batch: Batch, ts_offset: int | None = None, skip_invalid: bool = False) -> str | None:
        """One batch kept. ``ts_offset``: the offset to pair with its max timestamp (default its last)."""
        if batch.max_timestamp > self.max_ts:
            self.max_ts = batch.max_timestamp
            self.max_ts_offset = batch.last_offset if ts_offset is None else ts_offset
        if self.valid - self.last_entry_at > self.interval:
            why = self.index_append(batch.last_offset, skip_invalid)
            if why is not None and not skip_invalid:
                return why
            self.last_entry_at = self.valid
        self.valid += batch.size
        return None

    def index_append(self, last: int, skip_invalid: bool = False) -> str | None:
        """``OffsetIndex.append`` then ``TimeIndex.maybeAppend``."""
        if self.offset_refused(last):
            why = f"the offset index would get offset {last} after {self.index_last}"
            if not skip_invalid:
                return why
        else:
            self.index_last = last
            if self.offsets is not None:
                self.offsets.append(IndexEntry(last, self.valid))
        return self.time_append(skip_invalid)

    def time_append(self, skip_invalid: bool = False) -> str | None:
        if self.time_last is not None and self.time_refused(self.max_ts_offset):
            return f"the time index would get offset {self.max_ts_offset} after {self.time_last[1]}"
        if self.max_ts > (self.time_last[0] if self.time_last is not None else NO_TIMESTAMP):
            self.time_last = (self.max_ts, self.max_ts_offset)
            if self.times is not None:
                self.times.append(TimeIndexEntry(self.max_ts, self.max_ts_offset))
        return None

    def finish(self) -> str | None:
        """The last time index entry, appended after the walk (it may throw too)."""
        return self.time_append()


def kept_batches(buf, limits: Limits = DEFAULT_LIMITS):
    """The batches recovery keeps, in order (steps 1-2): up to the first it refuses."""
    pos, end = 0, len(buf)
    b: Batch | None
    while True:
        w = Walker(buf, pos, end, limits)
        for b in w:
            if not b.crc_valid:
                return
            yield b
        b = read_on(buf, w, end)
        if b is None:
            return
        yield b
        pos = b.next_position


def build_indexes(buf, base_offset: int, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  time_offset: str = "last",
                  limits: Limits = DEFAULT_LIMITS) -> tuple[list[IndexEntry], list[TimeIndexEntry], int]:
    """(offset index, time index, valid bytes) as ``LogSegment.recover`` writes them.

    Where the broker would throw ``InvalidOffsetException`` (and empty the segment) the entry
    is skipped instead: a rebuild leaves the log alone (``verify`` reports ``invalid_offset``).
    ``time_offset``: "last" pairs a max timestamp with its batch's last offset (recovery,
    followers); "record" with the record carrying it, as a leader's append path wrote it.
    An offset beyond an int32 of the base raises InvalidFileError (the broker would split).
    """
    if time_offset not in TIME_OFFSET_CONVENTIONS:
        raise UsageError(f"time_offset must be one of {TIME_OFFSET_CONVENTIONS}, not {time_offset!r}")
    step = IndexStep(interval_bytes, record=True)
    for b in kept_batches(buf, limits):
        if not offset_in_range(base_offset, b.last_offset):
            raise InvalidFileError(f"Detected offset overflow at offset {b.last_offset} in segment with base "
                                   f"offset {base_offset}", position=b.position, offset=b.last_offset)
        ts_offset = None
        if time_offset == "record" and b.max_timestamp > step.max_ts:
            ts_offset = max_timestamp_record_offset(buf, b, limits)
        step.take(b, ts_offset, skip_invalid=True)
    step.finish()
    return step.offsets, step.times, step.valid  # type: ignore[return-value]  # record=True: both lists


def encode_indexes(buf, base_offset: int, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                   limits: Limits = DEFAULT_LIMITS) -> tuple[bytes, bytes]:
    """(.index, .timeindex) bytes for a segment's bytes ``buf``, as the broker's recovery writes them."""
    offsets, times, _ = build_indexes(buf, base_offset, interval_bytes, "last", limits)
    return encode_index(offsets, base_offset), encode_timeindex(times, base_offset)


def encode_batch_indexes(batches, base_offset: int, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
                         ) -> tuple[bytes, bytes]:
    """(.index, .timeindex) bytes for intact ``batches`` laid end to end from byte 0 (a salvaged
    segment, streamed from its sources), as ``encode_indexes`` gives for their bytes joined."""
    step = IndexStep(interval_bytes, record=True)
    for b in batches:
        step.take(b, None, skip_invalid=True)
    step.finish()
    return encode_index(step.offsets, base_offset), encode_timeindex(step.times, base_offset)  # type: ignore[arg-type]  # record=True: lists


def index_bytes(log_path: str, base_offset: int, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                limits: Limits = DEFAULT_LIMITS) -> tuple[bytes, bytes]:
    """(.index, .timeindex) bytes as the broker's recovery writes them for this segment."""
    with MappedFile(log_path) as m:
        return encode_indexes(m.buf, base_offset, interval_bytes, limits)


def log_start_past_end(log_end_offset: int | None, log_start_offset: int | None) -> bool:
    """``LogLoader``: a log start offset checkpointed above the log end (segments deleted by
    hand) makes the broker delete every segment and start an empty one at the log start."""
    return log_end_offset is not None and log_start_offset is not None and log_end_offset < log_start_offset


def recovered_epochs(checkpoint: list[tuple[int, int]], batch_epochs, log_start_offset: int | None = None
                     ) -> list[tuple[int, int]]:
    """The leader epochs after recovery: the checkpoint's (epoch, start offset) entries, plus each
    epoch the recovered batches carry above the latest (``LeaderEpochFileCache.assign``, which
    first drops entries at or after the new start), then moved up to the log start offset
    (``truncateFromStart``: the last entry at or below it now starts there)."""
    out = list(checkpoint)
    for epoch, start in batch_epochs:
        if epoch_starts(out, epoch):
            out = [e for e in out if e[0] < epoch and e[1] < start]
            out.append((epoch, start))
    if log_start_offset is not None:
        below = [e for e in out if e[1] <= log_start_offset]
        if below:
            out = [(below[-1][0], log_start_offset)] + [e for e in out if e[1] > log_start_offset]
    return out
