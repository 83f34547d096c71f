"""Rebuilding a segment's offset and time indexes the way the broker does on recovery.

``LogSegment.recover`` walks the batches of the ``.log``, stops at the first one that
fails framing or its CRC (everything from there on is truncated), and indexes one batch
every ``index.interval.bytes``. The append path applies the same interval rule per
*append*: identical when each append is one batch (a leader serving one batch per
produce request); an append of several batches (a follower fetch) gets one entry, at
its first batch's position with its last offset. The time index offset differs too: the
leader's append path of uncompressed CreateTime batches paired a max timestamp with the
first record carrying it ("record"), where recovery and followers use the batch's last
offset ("last"). ``detect_time_offset_convention`` tells which one a file follows.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidFileError, KdumpError, UsageError
from ..model import LOG_APPEND_TIME, Batch, IndexEntry, TimeIndexEntry
from .codecs import DEFAULT_LIMITS, Limits
from .index import INT32_MAX
from .walk import Walker, decode_records

NO_TIMESTAMP = -1
TIME_OFFSET_CONVENTIONS = ("last", "record")


def max_timestamp_record_offset(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> int:
    """The offset a leader's append path pairs with the batch's max timestamp ("record" convention).

    CreateTime: the first record carrying the max timestamp (the broker compares with a
    strict ``>``). LogAppendTime, v0, or records that do not decode: the batch's last offset.
    """
    if batch.magic == 0 or batch.timestamp_type == LOG_APPEND_TIME:
        return batch.last_offset
    try:
        records = decode_records(buf, batch, limits)
    except KdumpError:
        return batch.last_offset
    for record in records:
        if record.timestamp == batch.max_timestamp:
            return record.offset
    return batch.last_offset


def _good_batches(buf, base_offset: int, limits: Limits):
    """The batches recovery keeps: up to the first bad CRC or the first place the walk stops."""
    for batch in Walker(buf, limits=limits):
        if not batch.crc_valid:
            return
        rel = batch.last_offset - base_offset
        if not 0 <= rel <= INT32_MAX:
            # LogSegmentOffsetOverflowException: the broker splits the segment rather than truncating.
            raise InvalidFileError(f"Detected offset overflow at offset {batch.last_offset} in segment with base "
                                   f"offset {base_offset}", position=batch.position, offset=batch.last_offset)
        yield batch


def build_indexes(buf, base_offset: int, interval_bytes: int = 4096, time_offset: str = "last",
                  limits: Limits = DEFAULT_LIMITS) -> tuple[list[IndexEntry], list[TimeIndexEntry], int]:
    """(offset index, time index, valid bytes) exactly as ``LogSegment.recover`` would write them.

    Where Kafka would throw ``InvalidOffsetException`` on a non-increasing offset (and
    recovery would then empty the whole segment) the entry is skipped instead.
    ``time_offset``: "last" pairs a max timestamp with its batch's last offset (recovery,
    followers); "record" with the offset of the record carrying it, as a leader's append
    path wrote it (see ``max_timestamp_record_offset``); decoding the records makes
    "record" slower.
    """
    if time_offset not in TIME_OFFSET_CONVENTIONS:
        raise UsageError(f"time_offset must be one of {TIME_OFFSET_CONVENTIONS}, not {time_offset!r}")
    offsets: list[IndexEntry] = []
    times: list[TimeIndexEntry] = []
    valid = 0
    last_entry_at = 0
    max_ts, max_ts_offset = NO_TIMESTAMP, -1

    def maybe_append_time() -> None:
        # TimeIndex.maybeAppend: only a strictly greater timestamp, starting above NO_TIMESTAMP.
        last_ts = times[-1].timestamp if times else NO_TIMESTAMP
        last_offset = times[-1].offset if times else None
        if max_ts > last_ts and (last_offset is None or max_ts_offset >= last_offset):
            times.append(TimeIndexEntry(max_ts, max_ts_offset))

    for batch in _good_batches(buf, base_offset, limits):
        if batch.max_timestamp > max_ts:
            max_ts = batch.max_timestamp
            max_ts_offset = (batch.last_offset if time_offset == "last"
                             else max_timestamp_record_offset(buf, batch, limits))
        if valid - last_entry_at > interval_bytes:
            if not offsets or batch.last_offset > offsets[-1].offset:
                offsets.append(IndexEntry(batch.last_offset, valid))
            maybe_append_time()
            last_entry_at = valid
        valid += batch.size
    # The roll/close entry: the segment's max timestamp, appended if it grew.
    maybe_append_time()
    return offsets, times, valid


def detect_time_offset_convention(entries: Sequence[TimeIndexEntry], buf, base_offset: int,
                                  limits: Limits = DEFAULT_LIMITS) -> str:
    """Which offset an existing ``.timeindex`` pairs with each timestamp.

    "last" or "record" when every entry fits that convention and at least one fits only
    it; "either" when no entry tells them apart (e.g. single-record batches); "mixed" when
    entries disagree; "unknown" when an entry matches no batch's max timestamp.
    """
    wanted = sorted(entries, key=lambda e: e.offset)
    seen: set[str] = set()
    i = 0
    for batch in Walker(buf, limits=limits):
        first = batch.base_offset if batch.base_offset is not None else batch.last_offset
        if i < len(wanted) and wanted[i].offset < first:
            return "unknown"        # an offset that no batch holds
        while i < len(wanted) and wanted[i].offset <= batch.last_offset:
            entry = wanted[i]
            if entry.timestamp != batch.max_timestamp:
                return "unknown"
            fits = set()
            if entry.offset == batch.last_offset:
                fits.add("last")
            if entry.offset == max_timestamp_record_offset(buf, batch, limits):
                fits.add("record")
            if not fits:
                return "unknown"
            if len(fits) == 1:
                seen |= fits
            i += 1
        if i == len(wanted):
            break
    if i < len(wanted):
        return "unknown"
    if len(seen) > 1:
        return "mixed"
    return seen.pop() if seen else "either"
