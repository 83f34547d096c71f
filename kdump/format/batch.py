"""Magic 2 record batches (``DefaultRecordBatch.java``): the 61-byte header.

All integers big-endian. The CRC is CRC-32C over bytes [21, end): it does not cover the
base offset, the length or the partition leader epoch, which a broker may rewrite.
"""

from __future__ import annotations

import struct

from kdump.format.crc import crc32c
from kdump.model import Batch

LOG_OVERHEAD = 12                 # baseOffset int64 + batchLength int32, on every entry
HEADER_SIZE_UP_TO_MAGIC = 17      # enough to know the entry size and its magic

V2_HEADER = struct.Struct(
    ">q"   # baseOffset => int64
    "i"    # batchLength => int32 (bytes after this field)
    "i"    # partitionLeaderEpoch => int32
    "b"    # magic => int8 (2)
    "I"    # crc => uint32, CRC-32C of attributes..end
    "h"    # attributes => int16
    "i"    # lastOffsetDelta => int32
    "q"    # baseTimestamp => int64 (deleteHorizonMs when that flag is set)
    "q"    # maxTimestamp => int64
    "q"    # producerId => int64
    "h"    # producerEpoch => int16
    "i"    # baseSequence => int32
    "i"    # recordsCount => int32
)
RECORD_BATCH_OVERHEAD = V2_HEADER.size          # 61
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21                          # first byte the CRC covers
LAST_OFFSET_DELTA_OFFSET = 23
RECORDS_COUNT_OFFSET = 57
assert RECORD_BATCH_OVERHEAD == 61

# RecordBatch's "none" values, as every format writes them
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1

_batch_new = tuple.__new__


def parse_v2(buf, pos: int, view: memoryview | None = None) -> Batch:
    """Read the v2 batch at ``pos`` (61 header bytes must be available) and check its CRC."""
    (base_offset, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_sequence, count) = V2_HEADER.unpack_from(buf, pos)
    size = length + LOG_OVERHEAD
    if view is None:
        view = memoryview(buf)
    crc_valid = size >= RECORD_BATCH_OVERHEAD and crc32c(view[pos + ATTRIBUTES_OFFSET:pos + size]) == crc
    # Batch's fields by position (the pure-Python walk's hot path; tests/format holds it to the names).
    return _batch_new(Batch, (pos, base_offset, base_offset + last_delta, count, size, magic, crc, crc_valid,
                              attributes, epoch, base_ts, max_ts, producer_id, producer_epoch, base_sequence))
