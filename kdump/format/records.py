"""Records inside a magic 2 batch (``DefaultRecord.java``, ``DefaultRecordBatch.RecordIterator``).

Record layout: ``length varint | attributes int8 | timestampDelta varlong |
offsetDelta varint | keyLength varint | key | valueLength varint | value |
headersCount varint | (headerKeyLength varint | key | headerValueLength varint | value)*``.

The C decoder (``_speedups/records.c``) is the fast path; this is the reference it is tested
against and the fallback, written field by field as ``DefaultRecord.readFrom`` reads them.
The data is a ``bytes`` object (indexing bytes is faster than a memoryview). Each record
must consume exactly its declared length, and the batch exactly its record count, as in Kafka.

A batch may declare millions of records in a few kilobytes (a zstd batch of empty records).
``record_stream.v2_record_slices`` decodes them RECORDS_SLICE at a time (``decode_v2_span``)
from a window of the payload, so what is held at once is a window and one slice of records,
whatever the count; ``decode_v2`` returns one list, for callers that need every record at
once. Both refuse a batch that declares more than ``Limits.max_records`` records before
decoding any.
"""

from __future__ import annotations

from typing import cast

from kdump import _accel
from kdump.errors import CodecError, InvalidRecordError, KdumpError, RecordCountLimitError, TruncatedError
from kdump.format.batch import RECORD_BATCH_OVERHEAD
from kdump.format.codecs import DEFAULT_LIMITS, MIN_RECORD_SIZE, Limits, decompress
from kdump.format.control import parse_control
from kdump.format.javalong import long_add
from kdump.format.varint import read_varint
from kdump.model import (
    B_POSITION,
    B_SIZE,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    LOG_APPEND_TIME,
    Batch,
    Record,
    sequence_at,
)

MIN_RECORD_BODY = MIN_RECORD_SIZE - 1     # attributes + five one-byte varints
# Records decoded at a time by record_stream.v2_record_slices: a slice of small records is a few hundred
# KB of objects, and a slice of large ones shares the payload's size.
RECORDS_SLICE = 4096
# A decompressed records section larger than this comes back as a LargeRecords list, so that
# writers know, without measuring every record, that its keys and values may not fit in
# a single string (a 4 MB segment can hold a 1000 MiB value).
LARGE_PAYLOAD = 1 << 20
# Batches the C record decoder takes whole need neither decompression nor control parsing.
COMPRESSED_OR_CONTROL = COMPRESSION_MASK | CONTROL_FLAG


class LargeRecords(list):
    """The records of a batch whose decompressed records section (or a legacy wrapper's inner
    message set) exceeds LARGE_PAYLOAD."""

    __slots__ = ()
_rec_new = tuple.__new__
_NO_HEADERS: tuple = ()


def batch_name(batch: Batch) -> str:
    """A batch as an error names it (the error's file and byte position say where it is): by its
    offset only if its CRC vouches for the header, else as the offset it claims."""
    if batch.crc_valid:
        return f"batch at offset {batch.base_offset}"
    return f"batch at claimed offset {batch.base_offset} (its CRC fails)"


def batch_payload(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The records section of a v2 batch, decompressed."""
    start = batch.position + RECORD_BATCH_OVERHEAD
    raw = buf[start:batch.position + batch.size]
    codec = batch.compression
    if codec == 0:
        return bytes(raw)
    return decompress(codec, raw, 2, limits=limits)


def check_record_count(batch: Batch, limits: Limits) -> None:
    """Refuse, before decoding anything, a batch declaring more records than ``limits`` allow."""
    count = batch.count
    if count is not None and count > limits.max_records:
        raise RecordCountLimitError(f"{batch_name(batch)} declares {count} records, more than the limit of "
                                    f"{limits.max_records} (--max-records-per-batch); not decoded",
                                    position=batch.position)


def decode_v2_span(data: bytes, start: int, batch: Batch, first: int, take: int,
                   ends_data: bool = True) -> tuple[list[Record], int]:
    """Records ``first .. first + take - 1`` of the v2 ``batch`` from ``data[start:]`` (its
    records section, decompressed) and where the next starts; the batch's last record must end
    the data, unless ``data`` is only a window of the section (not ``ends_data``)."""
    if batch.count is not None and not batch.attributes & CONTROL_FLAG and (c := _accel.native()) is not None:
        log_append_ts = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
        # (a window: a count past this span, so that no record of it is the batch's last)
        fast = c.decode_v2_span(data, start, batch.base_offset, batch.base_timestamp, log_append_ts,
                                batch.base_sequence, first, take, batch.count if ends_data else first + take + 1)
        if fast is not None:
            return fast
        # malformed somewhere: the loop finds where and raises the precise error
    return _decode_span(data, start, batch, first, first + take, ends_data)


def decode_v2(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> list[Record]:
    """All records of the v2 ``batch`` found in ``buf``; raises a located KdumpError."""
    check_record_count(batch, limits)
    c = _accel.native()
    if c is not None and not batch.attributes & COMPRESSED_OR_CONTROL:
        # Uncompressed and not control: straight to C. None means malformed somewhere, and
        # the path below (decode_v2_payload's Python loop) raises the precise error.
        position = batch[B_POSITION]
        records = c.decode_v2_records(buf[position + RECORD_BATCH_OVERHEAD:position + batch[B_SIZE]], batch)
        if records is not None:
            return records
    try:
        if batch.attributes & COMPRESSION_MASK:
            data = batch_payload(buf, batch, limits)
        else:
            start = batch.position
            data = bytes(buf[start + RECORD_BATCH_OVERHEAD:start + batch.size])
    except KdumpError as e:
        raise _named(e, batch)
    return decode_v2_section(data, batch)


def decode_v2_section(data: bytes, batch: Batch) -> list[Record]:
    """All records of the v2 ``batch`` from its records section ``data`` (decompressed, for a
    caller that has done that already): a LargeRecords past LARGE_PAYLOAD of a compressed one;
    raises a located KdumpError."""
    try:
        records = decode_v2_payload(data, batch)
    except KdumpError as e:
        raise _named(e, batch)
    return LargeRecords(records) if batch.attributes & COMPRESSION_MASK and len(data) > LARGE_PAYLOAD else records


def _named(e: KdumpError, batch: Batch) -> KdumpError:
    """``e`` located at the batch, a codec's words prefixed with the batch's name."""
    if isinstance(e, CodecError):
        e.message = f"{batch_name(batch)}: {e.message}"
    return e.located(position=batch.position)


def decode_v2_payload(data: bytes, batch: Batch) -> list[Record]:
    count = batch.count
    if count is None or count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in {batch_name(batch)}")
    control = batch.attributes & CONTROL_FLAG
    if not control and type(data) is bytes and (c := _accel.native()) is not None:
        # (only for bytes: the Python loop slices other buffer types into their own type)
        fast = c.decode_v2_records(data, batch)
        if fast is not None:
            return fast
        # malformed somewhere: the loop below finds where and raises the precise error
    return _decode_span(data, 0, batch, 0, count)[0]


def _decode_span(data: bytes, pos: int, batch: Batch, n: int, stop: int,
                 ends_data: bool = True) -> tuple[list[Record], int]:
    """Records ``n .. stop - 1`` from ``data[pos:]``, and where the next starts (the reference
    of decode_v2_records and decode_v2_span); when ``stop`` is the batch's count, the last
    must end the data (if it ``ends_data``). ``DefaultRecordBatch.RecordIterator``."""
    count = batch.count
    if count is None or count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in {batch_name(batch)}")
    make = _record_maker(batch)
    end = len(data)
    records: list[Record] = []
    try:
        while n < stop:
            record, pos = _read_record(data, pos, end, n, make, batch)
            records.append(record)
            n += 1
    except IndexError:      # a field's first byte past the data
        raise TruncatedError(f"Incorrect declared batch size, premature EOF reached in record {n} "
                             f"of {batch_name(batch)}") from None
    if stop == count and pos != end and ends_data:
        raise InvalidRecordError(records_remaining(batch, end - pos))
    return records, pos


def _read_record(data: bytes, pos: int, end: int, n: int, make, batch: Batch) -> tuple[Record, int]:
    """Record ``n`` at ``pos`` (``DefaultRecord.readFrom``): ``length varint | attributes int8 |
    timestampDelta varlong | offsetDelta varint | key | value | headers``, which must take
    exactly ``length`` bytes."""
    length, pos = _varint(data, pos)
    record_end = pos + length
    if length < MIN_RECORD_BODY or record_end > end:
        if record_end > end and length >= MIN_RECORD_BODY:
            raise TruncatedError(f"Incorrect declared batch size, premature EOF reached in record {n} "
                                 f"(length {length}) of {batch_name(batch)}")
        raise InvalidRecordError(f"Invalid record size {length} in record {n} of {batch_name(batch)}")
    pos += 1        # attributes: unused
    ts_delta, pos = _varint(data, pos, 10)
    off_delta, pos = _varint(data, pos)
    key, pos = _nullable_bytes(data, pos, record_end, "key", n)
    value, pos = _nullable_bytes(data, pos, record_end, "value", n)
    headers, pos = _headers(data, pos, record_end, n)
    if pos != record_end:
        raise InvalidRecordError(f"Invalid record size: expected to read {length} bytes in record payload, "
                                 f"but instead read {pos - record_end + length} (record {n})")
    return make(off_delta, ts_delta, key, value, headers), pos


def _varint(data: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """``ByteUtils.readVarint`` (``max_bytes`` 10: ``readVarlong``): one and two bytes here, the
    rest by ``varint.read_varint``. A first byte past the data raises IndexError."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    b2 = data[pos + 1]
    if b2 < 0x80:
        b = (b & 0x7F) | (b2 << 7)
        return (b >> 1) ^ -(b & 1), pos + 2
    return read_varint(data, pos, max_bytes)


def _nullable_bytes(data: bytes, pos: int, record_end: int, what: str, n: int) -> tuple[bytes | None, int]:
    """A key or value: its varint length, -1 for null, then that many bytes of the record."""
    size, pos = _varint(data, pos)
    if size < 0:
        if size != -1:
            raise InvalidRecordError(f"invalid {what} length {size} in record {n}")
        return None, pos
    if pos + size > record_end:
        raise InvalidRecordError(f"{what} of {size} bytes runs past record {n}")
    return data[pos:pos + size], pos + size


def _headers(data: bytes, pos: int, record_end: int, n: int) -> tuple[tuple, int]:
    """The headers: a varint count, then each key and nullable value (``_read_headers``)."""
    b = data[pos]
    if b == 0:
        return _NO_HEADERS, pos + 1
    if b < 0x80:
        count, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        count, pos = read_varint(data, pos)
    if count < 0 or count > record_end - pos:
        raise InvalidRecordError(f"invalid header count {count} in record {n}")
    return _read_headers(data, pos, record_end, count, n)


def _record_maker(batch: Batch):
    """The Record of each (offsetDelta, timestampDelta, key, value, headers) of ``batch``: its
    offset, timestamp (LogAppendTime: the batch's max timestamp) and sequence from the
    batch's bases; a control record's key and value parsed."""
    base_offset = cast(int, batch.base_offset)     # None only on a legacy wrapper, never on v2
    base_ts, ts_type, base_seq = batch.base_timestamp, batch.timestamp_type, batch.base_sequence
    log_append_ts = batch.max_timestamp if ts_type == LOG_APPEND_TIME else None

    if batch.attributes & CONTROL_FLAG:
        def control(off_delta: int, ts_delta: int, key, value, headers) -> Record:
            ts = log_append_ts if log_append_ts is not None else long_add(base_ts, ts_delta)
            return Record(base_offset + off_delta, ts, ts_type, key, value, headers, sequence_at(base_seq, off_delta),
                          parse_control(key, value))
        return control

    def record(off_delta: int, ts_delta: int, key, value, headers) -> Record:
        ts = log_append_ts if log_append_ts is not None else long_add(base_ts, ts_delta)
        return _rec_new(Record, (base_offset + off_delta, ts, ts_type, key, value, headers,
                                 sequence_at(base_seq, off_delta), None, 2, None, None))
    return record


def records_remaining(batch: Batch, left: int) -> str:
    """What Kafka says of ``left`` bytes after the batch's last record."""
    return (f"Incorrect declared batch size, records still remaining in file ({left} bytes after {batch.count} "
            f"records) in {batch_name(batch)}")


def _read_headers(data: bytes, pos: int, record_end: int, count: int, n: int):
    headers = []
    for _ in range(count):
        klen, pos = read_varint(data, pos)
        if klen < 0 or pos + klen > record_end:
            raise InvalidRecordError(f"invalid header key length {klen} in record {n}")
        hkey = data[pos:pos + klen]
        pos += klen
        vlen, pos = read_varint(data, pos)
        if vlen < 0:
            if vlen != -1:
                raise InvalidRecordError(f"invalid header value length {vlen} in record {n}")
            hval = None
        else:
            if pos + vlen > record_end:
                raise InvalidRecordError(f"header value of {vlen} bytes runs past record {n}")
            hval = data[pos:pos + vlen]
            pos += vlen
        headers.append((hkey, hval))
    return tuple(headers), pos
