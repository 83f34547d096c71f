"""Which offset a time index pairs with a timestamp: the conventions a broker's writes follow.

The recovery rule that rebuilds indexes is ``kdump.check.broker_rule.build_indexes``. The
append path applies the same interval rule per
*append*: identical when each append is one batch (a leader serving one batch per
produce request); an append of several batches (a follower fetch) gets one entry, at
its first batch's position with its last offset. The time index offset differs too: the
leader's append path of uncompressed CreateTime batches paired a max timestamp with the
first record carrying it ("record"), where recovery and followers use the batch's last
offset ("last"). ``detect_time_offset_convention`` tells which one a file follows.
"""

from __future__ import annotations

from collections.abc import Sequence

from kdump.errors import KdumpError
from kdump.model import LOG_APPEND_TIME, Batch, TimeIndexEntry
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.walk import Walker, decode_records

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
