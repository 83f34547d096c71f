"""Magic 0 and 1 message sets (``LegacyRecord.java``, ``AbstractLegacyRecordBatch.java``).

Each entry is ``offset int64 | size int32 | message``; the message is
``crc uint32 | magic int8 | attributes int8 | [timestamp int64 (v1)] | key bytes | value bytes``
with CRC-32 (IEEE) over magic..end. A compressed message ("wrapper") holds a whole inner
message set in its value: inner offsets are absolute for v0 and relative (0..n-1) for v1,
and the wrapper's own offset is that of the last inner message.

An inner set is checked whole before any of its records is made (its count and the base of
its v1 offsets depend on all of it). One of up to STREAM_THRESHOLD bytes is decompressed
whole, the common case; a larger one (a few KB can hold millions of empty messages) is read
from a window of its decompressed stream (``inner_windows``), so that what is held at once is
a window and the largest message, whatever the count; ``legacy_stream`` decodes its records
a slice at a time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kdump import _accel
from kdump.errors import (
    CodecError,
    DecompressionLimitError,
    InvalidRecordError,
    KdumpError,
    RecordCountLimitError,
    TruncatedError,
)
from kdump.format.codecs import DEFAULT_LIMITS, STREAM_THRESHOLD, Limits, decompress, decompress_chunks
from kdump.format.crc import crc32
from kdump.format.record_stream import WINDOW, refill_window
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
# its inner set decompressed (past STREAM_THRESHOLD only its size: never held whole), its
# records once made, the base of its inner offsets where known). The buffer itself is kept
# (not its id, which a later buffer could reuse).
_last_inner: tuple | None = None


def parse_legacy(buf, pos: int, limits: Limits = DEFAULT_LIMITS) -> Batch:
    """The shallow message at ``pos`` as a Batch; compressed wrappers are opened to count them.

    Framing errors in the message itself raise; a wrapper whose value does not decompress
    still yields a Batch (``base_offset``/``count`` None) so the caller can report it.
    """
    offset, size = OFFSET_AND_SIZE.unpack_from(buf, pos)
    msg = Message(buf, pos + 12, pos + 12 + size)
    base_offset: int | None = offset
    count: int | None = 1
    if msg.codec != 0:
        global _last_inner
        try:
            data = _inner_data_or_size(msg, offset, limits)
            inner = base = None
            if isinstance(data, int):   # too large to hold: counted from a window of its stream
                base_offset, count, base = _streamed_span(msg, offset, limits, data)
            else:
                c = _accel.native()
                # Counted in C without making the records (made if a caller asks: decode_legacy).
                span = c.legacy_set_span(data, offset, msg.magic) if c is not None else None
                if span is None:
                    inner = _inner_records(msg, offset, data)
                    span = inner[0].offset, len(inner)
                base_offset, count = span
            _last_inner = (buf, pos, msg.crc, msg, data, inner, base)
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
    check_inner_count(batch, limits)
    cached = _opened(buf, batch)
    if cached is not None and type(cached[4]) is bytes:
        _, _, _, msg, data, inner, _ = cached
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


def check_inner_count(batch: Batch, limits: Limits) -> None:
    """Refuse, before making any record, a wrapper holding more inner messages than ``limits``
    allow (its count is known once the walk has opened it: ``check_record_count`` for v2)."""
    count = batch.count
    if count is not None and count > limits.max_records:
        off, why = wrapper_names(batch, batch.last_offset)
        raise RecordCountLimitError(f"compressed message at {off} holds {count} inner messages, more than the "
                                    f"limit of {limits.max_records} (--max-records-per-batch); not decoded{why}",
                                    position=batch.position)


def opened_inner(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> tuple[Message, bytes | int, list | None,
                                                                               int] | None:
    """The wrapper of the compressed legacy ``batch`` opened as the walk opened it: its Message,
    its inner set decompressed (or, past STREAM_THRESHOLD, its size), its records if they were
    made, and the base its inner offsets are added to; None if it does not open (then
    ``decode_legacy`` says why)."""
    cached = _opened(buf, batch)
    if cached is None:          # another wrapper was opened since: open this one again
        parse_legacy(buf, batch.position, limits)
        cached = _opened(buf, batch)
        if cached is None:
            return None
    _, _, _, msg, data, inner, base = cached
    if base is None:            # (the first absolute offset less the first inner one)
        base = batch.base_offset - OFFSET_AND_SIZE.unpack_from(data)[0]
    return msg, data, inner, base


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
    if cached is None or type(cached[4]) is not bytes:     # (too large to hold: decoded a slice at a time)
        return None
    return cached[4], log_append_ts(cached[3])


def log_append_ts(wrapper: Message) -> int | None:
    """The wrapper's timestamp where its inner messages take it (LogAppendTime), else None."""
    return wrapper.timestamp if wrapper.magic >= 1 and wrapper.timestamp_type == LOG_APPEND_TIME else None


def _inner_messages(wrapper: Message, wrapper_offset: int, limits: Limits) -> list[Record]:
    return _inner_records(wrapper, wrapper_offset, _inner_data(wrapper, wrapper_offset, limits))


def wrapper_names(wrapper: Message | Batch, wrapper_offset: int) -> tuple[str, str]:
    # The wrapper's offset is named as only claimed when its CRC fails (records.batch_name for v2).
    return (f"offset {wrapper_offset}", "") if wrapper.crc_valid else (f"claimed offset {wrapper_offset}",
                                                                      " (its CRC fails)")


def _inner_data(wrapper: Message, wrapper_offset: int, limits: Limits, limit: int | None = None) -> bytes:
    off, why = wrapper_names(wrapper, wrapper_offset)
    if wrapper.value is None:
        raise InvalidRecordError(f"compressed message at {off} has a null value{why}")
    try:
        return decompress(wrapper.codec, wrapper.value, wrapper.magic, limit, limits=limits)
    except CodecError as e:
        e.message = f"message at {off}{why}: {e.message}"
        raise


def _inner_data_or_size(wrapper: Message, wrapper_offset: int, limits: Limits) -> bytes | int:
    """``_inner_data``, or for an inner set past STREAM_THRESHOLD bytes only its size (read as a
    stream: the same errors, without holding it)."""
    if wrapper.value is None or limits.for_input(len(wrapper.value)) <= STREAM_THRESHOLD:
        return _inner_data(wrapper, wrapper_offset, limits)
    try:
        return _inner_data(wrapper, wrapper_offset, limits, STREAM_THRESHOLD)
    except DecompressionLimitError:
        pass                    # past the threshold, maybe not past the limit
    return sum(map(len, _inner_pieces(wrapper, wrapper_offset, limits)))


def _inner_pieces(wrapper: Message, wrapper_offset: int, limits: Limits) -> Iterator[bytes]:
    """The inner set decompressed a piece of a few MiB at most at a time, errors named as
    ``_inner_data`` names them."""
    off, why = wrapper_names(wrapper, wrapper_offset)
    try:
        yield from decompress_chunks(wrapper.codec, wrapper.value or b"", wrapper.magic, limits=limits, stream=True)
    except CodecError as e:
        e.message = f"message at {off}{why}: {e.message}"
        raise


def _streamed_span(wrapper: Message, wrapper_offset: int, limits: Limits, size: int) -> tuple[int, int, int]:
    """(first offset, count, base of the inner offsets) of an inner set of ``size`` bytes read
    from a window of its stream, with the errors ``_inner_records`` raises."""
    n = 0
    first = last = 0
    for _, _, _, k, first_run, last in inner_windows(wrapper, wrapper_offset, limits, size):
        if not n:
            first = first_run
        n += k
    base = _base(wrapper, wrapper_offset, n, last)
    return base + first, n, base


def inner_windows(wrapper: Message, wrapper_offset: int, limits: Limits,
                  size: int) -> Iterator[tuple[bytes, int, int, int, int, int]]:
    """The inner set of ``size`` bytes (known to decompress) as runs of whole entries in a window
    of its stream: (window, start, end, their count, first and last inner offset), each
    checked as ``_inner_records`` checks it; its error raised where it is malformed. The window
    holds WINDOW bytes, or the largest entry and a piece."""
    off, why = wrapper_names(wrapper, wrapper_offset)
    pieces = _inner_pieces(wrapper, wrapper_offset, limits)
    c = _accel.native()
    window, pos, seen = b"", 0, 0       # seen: the stream's bytes read into windows so far
    while True:
        if len(window) - pos < WINDOW >> 1 and seen < size:
            window, seen = refill_window(pieces, window, pos, seen, WINDOW, size)
            pos = 0
        end = len(window)
        if pos == end:
            return
        origin = seen - end             # the window's first byte in the set
        run = c.legacy_scan(window, pos, end) if c is not None else None
        if run is None:                 # malformed (or no C): the reference raises, or says the same
            entries, next_pos = inner_entries(window, pos, end, off, why, origin, final=False)
            run = (next_pos, len(entries), entries[0][0], entries[-1][0]) if entries else (pos, 0, 0, 0)
        next_pos, k, first, last = run
        if k:
            yield window, pos, next_pos, k, first, last
            pos = next_pos
        if pos < end:                   # an entry not wholly in the window: read on, unless the set ends first
            entry = 12 + OFFSET_AND_SIZE.unpack_from(window, pos)[1] if end - pos >= 12 else 12
            if seen == size or origin + pos + entry > size:
                inner_entries(window, pos, end, off, why, origin)        # (final: raises)
            window, seen = refill_window(pieces, window, pos, seen, max(WINDOW, entry), size)
            pos = 0


def _inner_records(wrapper: Message, wrapper_offset: int, data: bytes) -> list[Record]:
    off, why = wrapper_names(wrapper, wrapper_offset)
    log_append = log_append_ts(wrapper)
    if (c := _accel.native()) is not None:
        # The C version of the loop below answers None for anything malformed, and this
        # code, the reference, then raises the precise error.
        records = c.decode_legacy_set(data, wrapper_offset, wrapper.magic, log_append)
        if records is not None:
            return LargeRecords(records) if len(data) > LARGE_PAYLOAD else records
    entries, _ = inner_entries(data, 0, len(data), off, why)
    base = _base(wrapper, wrapper_offset, len(entries), entries[-1][0] if entries else 0)
    records = inner_records(entries, base, log_append)
    # (marked as a v2 batch's are: a large inner set may hold values to write in pieces)
    return LargeRecords(records) if len(data) > LARGE_PAYLOAD else records


def inner_entries(data, pos: int, end: int, off: str, why: str, origin: int = 0, final: bool = True,
             most: int = -1) -> tuple[list[tuple[int, Message]], int]:
    """The inner entries of ``data[pos:end]`` (inner byte ``origin`` + pos of the set), at most
    ``most`` (-1: all), each checked, and where the next starts. Unless ``final`` (the set ends
    at ``end``), stops before an entry that does not lie wholly inside (legacy_scan's twin)."""
    entries: list[tuple[int, Message]] = []
    while pos < end and len(entries) != most:
        if end - pos < 12:
            if not final:
                break
            raise TruncatedError(f"inner message set of {off} ends inside an entry header{why}")
        inner_offset, size = OFFSET_AND_SIZE.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0 or pos + 12 + size > end:
            if size >= RECORD_OVERHEAD_V0 and not final:
                break
            raise InvalidRecordError(f"inner message of {size} bytes at inner byte {origin + pos} does not fit "
                                     f"(wrapper {off}){why}")
        msg = Message(data, pos + 12, pos + 12 + size)
        if msg.codec != 0:
            raise InvalidRecordError(f"Inner messages must not be compressed (wrapper {off}){why}")
        entries.append((inner_offset, msg))
        pos += 12 + size
    return entries, pos


def _base(wrapper: Message, wrapper_offset: int, count: int, last_relative: int) -> int:
    """What the inner offsets of a set of ``count`` messages are added to (v1's are relative to
    the last one, which has the wrapper's offset)."""
    off, why = wrapper_names(wrapper, wrapper_offset)
    if not count:
        raise InvalidRecordError(f"Found invalid compressed record set with no inner records at {off}{why}")
    if wrapper.magic < 1:
        return 0                     # v0 inner offsets are absolute
    if wrapper_offset == 0:
        return 0                     # librdkafka wrote 0 as the wrapper offset (Kafka's special case)
    if wrapper_offset < last_relative:
        raise InvalidRecordError(f"wrapper {off} is less than the last inner relative offset "
                                 f"{last_relative}{why}")
    return wrapper_offset - last_relative


def inner_records(entries: list[tuple[int, Message]], base: int, log_append: int | None) -> list[Record]:
    """The Records of checked inner entries (``log_append``: the wrapper's LogAppendTime, or None)."""
    records = []
    for inner_offset, msg in entries:
        if log_append is not None:
            ts, ts_type = log_append, LOG_APPEND_TIME
        else:
            ts, ts_type = msg.timestamp, msg.timestamp_type
        records.append(Record(base + inner_offset, ts, ts_type, msg.key, msg.value, (), -1, None,
                              msg.magic, msg.crc, msg.crc_valid))
    return records
