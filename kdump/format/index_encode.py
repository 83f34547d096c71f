"""Which offset a time index pairs with a timestamp: the conventions a broker's writes follow.

The recovery rule that rebuilds indexes is ``kdump.check.broker_rule.build_indexes``. The
append path applies the same interval rule per
*append*: identical when each append is one batch (a leader serving one batch per
produce request); an append of several batches (a follower fetch) gets one entry, at
its first batch's position with its last offset. The time index offset differs too: the
leader's append path of uncompressed CreateTime batches paired a max timestamp with the
first record carrying it ("record"), where recovery and followers use the batch's last
offset ("last"). ``kdump.check.indexes.forward_pass`` tells which one a file follows (``IndexCheck.convention``).
"""

from __future__ import annotations

from kdump.errors import KdumpError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.walk import record_slices
from kdump.model import LOG_APPEND_TIME, Batch

TIME_OFFSET_CONVENTIONS = ("last", "record")


def max_timestamp_record_offset(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> int:
    """The offset a leader's append path pairs with the batch's max timestamp ("record" convention).

    CreateTime: the first record carrying the max timestamp (the broker compares with a
    strict ``>``). LogAppendTime, v0, or records that do not decode: the batch's last offset.
    """
    if batch.magic == 0 or batch.timestamp_type == LOG_APPEND_TIME:
        return batch.last_offset
    try:
        for records in record_slices(buf, batch, limits):
            for record in records:
                if record.timestamp == batch.max_timestamp:
                    return record.offset
    except KdumpError:
        return batch.last_offset
    return batch.last_offset

