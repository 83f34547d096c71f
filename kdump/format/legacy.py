"""Magic 0 and 1 message sets (``LegacyRecord.java``, ``AbstractLegacyRecordBatch.java``).

Each entry is ``offset int64 | size int32 | message``; the message is
``crc uint32 | magic int8 | attributes int8 | [timestamp int64 (v1)] | key bytes | value bytes``
with CRC-32 (IEEE) over magic..end. A compressed message ("wrapper") holds a whole inner
message set in its value: inner offsets are absolute for v0 and relative (0..n-1) for v1,
and the wrapper's own offset is that of the last inner message.
"""

from __future__ import annotations

import struct

from kdump import _accel
from kdump.errors import CodecError, InvalidRecordError, KdumpError, TruncatedError
from kdump.format.codecs import DEFAULT_LIMITS, Limits, decompress
from kdump.format.crc import crc32
from kdump.format.records import LARGE_PAYLOAD, LargeRecords
from kdump.model import COMPRESSION_MASK, LOG_APPEND_TIME, Batch, Record, timestamp_type_of

OFFSET_AND_SIZE = struct.Struct(">qi")        # a message's log overhead: offset => int64, size => int32
MESSAGE_V0 = struct.Struct(">Ibb")            # crc => uint32, magic => int8, attributes => int8
MESSAGE_V1 = struct.Struct(">Ibbq")           # ... timestamp => int64
LENGTH = struct.Struct(">i")
RECORD_OVERHEAD_V0 = 14                       # crc + magic + attributes + key len + value len
RECORD_OVERHEAD_V1 = 22
CRC_SIZE = 4


def min_size(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1


class Message:
    """One parsed legacy message (header fields and key/value), offsets not yet resolved."""

    __slots__ = ("attributes", "crc", "crc_valid", "key", "magic", "timestamp", "value")

    def __init__(self, data, start: int, end: int) -> None:
        """Parse the message occupying ``data[start:end]`` (after the 12-byte entry head)."""
        size = end - start
        if size < RECORD_OVERHEAD_V0:
            raise InvalidRecordError(f"message of {size} bytes is smaller than the minimum record overhead (14)")
        crc, magic, attributes = MESSAGE_V0.unpack_from(data, start)
        if magic not in (0, 1):
            raise InvalidRecordError(f"invalid magic {magic} in a legacy message")
        pos = start + 6
        if magic == 1:
            if size < RECORD_OVERHEAD_V1:
                raise InvalidRecordError(f"v1 message of {size} bytes is smaller than the minimum record overhead (22)")
            (self.timestamp,) = struct.unpack_from(">q", data, pos)
            pos += 8
        else:
            self.timestamp = -1
        self.crc, self.magic, self.attributes = crc, magic, attributes
        self.crc_valid = crc32(memoryview(data)[start + CRC_SIZE:end]) == crc
        self.key, pos = _read_bytes(data, pos, end, "key")
        self.value, pos = _read_bytes(data, pos, end, "value")
        if pos != end:
            raise InvalidRecordError(f"message has {end - pos} bytes after its value")

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return timestamp_type_of(self.magic, self.attributes)


def _read_bytes(data, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise TruncatedError(f"message {what} length runs past the message")
    (n,) = LENGTH.unpack_from(data, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise InvalidRecordError(f"invalid {what} length {n}")
        return None, pos
    if pos + n > end:
        raise InvalidRecordError(f"{what} of {n} bytes runs past the message")
    return bytes(data[pos:pos + n]), pos + n


# The walker opens a wrapper to count it and the record decoder (or a writer reading the
# inner set itself, ``inner_set``) needs the same messages right after: keep the last one
# so each wrapper is decompressed once: (buf, position, stored CRC, the wrapper Message,
# its inner set decompressed, its records once made). The buffer itself is kept (not its
# id, which a later buffer could reuse).
_last_inner: tuple | None = None


def parse_legacy(buf, pos: int, limits: Limits = DEFAULT_LIMITS, open_wrapper: bool = True) -> Batch:
    """The shallow message at ``pos`` as a Batch; compressed wrappers are opened to count them
    (unless not ``open_wrapper``: a walk for boundaries only, its wrappers' counts None).

    Framing errors in the message itself raise; a wrapper whose value does not decompress
    still yields a Batch (``base_offset``/``count`` None) so the caller can report it.
    """
    offset, size = OFFSET_AND_SIZE.unpack_from(buf, pos)
    msg = Message(buf, pos + 12, pos + 12 + size)
    base_offset: int | None = offset
    count: int | None = 1
    if msg.codec != 0 and not open_wrapper:
        base_offset = count = None
    elif msg.codec != 0:
        global _last_inner
        try:
            data = _inner_data(msg, offset, limits)
            c = _accel.native()
            # Counted in C without making the records (made if a caller asks: decode_legacy).
            span = c.legacy_set_span(data, offset, msg.magic) if c is not None else None
            if span is None:
                inner = _inner_records(msg, offset, data)
                span = inner[0].offset, len(inner)
            else:
                inner = None
            base_offset, count = span
            _last_inner = (buf, pos, msg.crc, msg, data, inner)
        except KdumpError:
            base_offset = count = None
    ts = msg.timestamp
    return Batch(position=pos, base_offset=base_offset, last_offset=offset, count=count, size=size + 12,
                 magic=msg.magic, crc=msg.crc, crc_valid=msg.crc_valid, attributes=msg.attributes,
                 partition_leader_epoch=-1, base_timestamp=ts, max_timestamp=ts, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1)


def decode_legacy(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> list[Record]:
    """The message(s) of a legacy batch: itself, or the inner messages of a wrapper."""
    pos = batch.position
    cached = _opened(buf, batch)
    if cached is not None:
        _, _, _, msg, data, inner = cached
        if inner is None:
            inner = _inner_records(msg, batch.last_offset, data)
        return type(inner)(inner)
    try:
        offset, size = OFFSET_AND_SIZE.unpack_from(buf, pos)
        msg = Message(buf, pos + 12, pos + 12 + size)
        if msg.codec == 0:
            return [Record(offset, msg.timestamp, msg.timestamp_type, msg.key, msg.value, (), -1, None,
                           msg.magic, msg.crc, msg.crc_valid)]
        return _inner_messages(msg, offset, limits)
    except KdumpError as e:
        raise e.located(position=pos) from None


def _opened(buf, batch: Batch):
    """The cache entry of the wrapper the walker has just opened, if ``batch`` is it: same
    buffer, same place, same stored CRC."""
    cached = _last_inner
    if cached is not None and cached[0] is buf and cached[1] == batch.position and cached[2] == batch.crc \
            and batch.attributes & COMPRESSION_MASK:
        return cached
    return None


def inner_set(buf, batch: Batch) -> tuple[bytes, int | None] | None:
    """The decompressed inner message set of the wrapper the walker has just opened (a writer
    that reads its messages itself: text.c, jsonout.c), with the LogAppendTime its records
    take (None: their own); None when that is not ``batch``."""
    cached = _opened(buf, batch)
    if cached is None:
        return None
    return cached[4], _log_append_ts(cached[3])


def _log_append_ts(wrapper: Message) -> int | None:
    """The wrapper's timestamp where its inner messages take it (LogAppendTime), else None."""
    return wrapper.timestamp if wrapper.magic >= 1 and wrapper.timestamp_type == LOG_APPEND_TIME else None


def _inner_messages(wrapper: Message, wrapper_offset: int, limits: Limits) -> list[Record]:
    return _inner_records(wrapper, wrapper_offset, _inner_data(wrapper, wrapper_offset, limits))


def _names(wrapper: Message, wrapper_offset: int) -> tuple[str, str]:
    # The wrapper's offset is named as only claimed when its CRC fails (records.batch_name for v2).
    return (f"offset {wrapper_offset}", "") if wrapper.crc_valid else (f"claimed offset {wrapper_offset}",
                                                                      " (its CRC fails)")


def _inner_data(wrapper: Message, wrapper_offset: int, limits: Limits) -> bytes:
    off, why = _names(wrapper, wrapper_offset)
    if wrapper.value is None:
        raise InvalidRecordError(f"compressed message at {off} has a null value{why}")
    try:
        return decompress(wrapper.codec, wrapper.value, wrapper.magic, limits=limits)
    except CodecError as e:
        e.message = f"message at {off}{why}: {e.message}"
        raise


def _inner_records(wrapper: Message, wrapper_offset: int, data: bytes) -> list[Record]:
    off, why = _names(wrapper, wrapper_offset)
    log_append_ts = _log_append_ts(wrapper)
    log_append = log_append_ts is not None
    if (c := _accel.native()) is not None:
        # The C version of the loop below answers None for anything malformed, and this
        # code, the reference, then raises the precise error.
        records = c.decode_legacy_set(data, wrapper_offset, wrapper.magic, log_append_ts)
        if records is not None:
            return LargeRecords(records) if len(data) > LARGE_PAYLOAD else records
    entries = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < 12:
            raise TruncatedError(f"inner message set of {off} ends inside an entry header{why}")
        inner_offset, size = OFFSET_AND_SIZE.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0 or pos + 12 + size > end:
            raise InvalidRecordError(f"inner message of {size} bytes at inner byte {pos} does not fit "
                                     f"(wrapper {off}){why}")
        msg = Message(data, pos + 12, pos + 12 + size)
        if msg.codec != 0:
            raise InvalidRecordError(f"Inner messages must not be compressed (wrapper {off}){why}")
        entries.append((inner_offset, msg))
        pos += 12 + size
    if not entries:
        raise InvalidRecordError(f"Found invalid compressed record set with no inner records at {off}{why}")
    if wrapper.magic >= 1:
        last_relative = entries[-1][0]
        if wrapper_offset == 0:
            base = 0                 # librdkafka wrote 0 as the wrapper offset (Kafka's special case)
        elif wrapper_offset < last_relative:
            raise InvalidRecordError(f"wrapper {off} is less than the last inner relative offset "
                                     f"{last_relative}{why}")
        else:
            base = wrapper_offset - last_relative
    else:
        base = 0                     # v0 inner offsets are absolute
    records = []
    for inner_offset, msg in entries:
        if log_append:
            ts, ts_type = wrapper.timestamp, LOG_APPEND_TIME
        else:
            ts, ts_type = msg.timestamp, msg.timestamp_type
        records.append(Record(base + inner_offset, ts, ts_type, msg.key, msg.value, (), -1, None,
                              msg.magic, msg.crc, msg.crc_valid))
    # (marked as a v2 batch's are: a large inner set may hold values to write in pieces)
    return LargeRecords(records) if len(data) > LARGE_PAYLOAD else records
