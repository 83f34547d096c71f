"""The records of a v2 batch a slice at a time, its compressed payload decompressed as a stream.

A batch may declare millions of records in a few kilobytes (a zstd batch of empty records):
``v2_record_slices`` decodes them RECORDS_SLICE at a time (``records.decode_v2_span``).
A records section of up to STREAM_THRESHOLD bytes is decompressed whole first (the common
case, and the fastest). A larger one (at most ``--max-decompressed``) goes on streaming from
there, a piece of at most a few MiB at a time, into a window that holds the records being
decoded: it is decompressed once, and only as far as its records are read, so a reader that
stops at the first bad record (``verify --deep``) pays for the bytes up to it, not for the
count the batch claims. A codec error past the first STREAM_THRESHOLD bytes comes after
the slices before it. The window is WINDOW bytes, or the largest record and a piece: memory
is a small multiple of the largest record, whatever the count or the size.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import cast

from kdump.errors import CodecError, InvalidRecordError, KdumpError, TruncatedError
from kdump.format.batch import RECORD_BATCH_OVERHEAD
from kdump.format.codecs import DEFAULT_LIMITS, STREAM_THRESHOLD, Limits, decompress_chunks
from kdump.format.records import (
    LARGE_PAYLOAD,
    MIN_RECORD_BODY,
    RECORDS_SLICE,
    LargeRecords,
    batch_name,
    check_record_count,
    decode_v2,
    decode_v2_span,
    records_remaining,
)
from kdump.format.varint import read_varint
from kdump.model import COMPRESSION_MASK, Batch, Record

# Decompressed bytes kept ahead of the decoder: a few hundred slices of small records.
WINDOW = 2 << 20
# How far past a malformed record's end the decoder may read before it says what is wrong
# (its varints, ~30 bytes): a record is decoded from the window only with this much after it,
# so that the error is the one the whole section would give.
OVERREAD = 64


def v2_record_slices(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> Iterator[list[Record]]:
    """The records of the v2 ``batch``, RECORDS_SLICE at a time (one slice, maybe empty, for a
    batch of fewer); a located KdumpError where they stop decoding, after the slices before it."""
    check_record_count(batch, limits)
    count = batch.count
    if count is None or count <= RECORDS_SLICE:
        yield decode_v2(buf, batch, limits)
        return
    compressed = batch.attributes & COMPRESSION_MASK
    try:
        if compressed:
            data = _payload_or_size(buf, batch, limits)
        else:
            data = bytes(buf[batch.position + RECORD_BATCH_OVERHEAD:batch.position + batch.size])
    except KdumpError as e:
        if isinstance(e, CodecError):
            e.message = f"{batch_name(batch)}: {e.message}"
        raise e.located(position=batch.position) from None
    if isinstance(data, tuple):
        yield from _streamed(buf, batch, limits, *data)
        return
    large = len(data) > LARGE_PAYLOAD and compressed
    pos = n = 0
    while n < count:
        take = min(RECORDS_SLICE, count - n)
        try:
            records, pos = decode_v2_span(data, pos, batch, n, take)
        except KdumpError as e:
            raise e.located(position=batch.position) from None
        n += take
        yield LargeRecords(records) if large else records


def _compressed(buf, batch: Batch) -> bytes | memoryview:
    start = batch.position + RECORD_BATCH_OVERHEAD
    return buf[start:batch.position + batch.size]


def _payload_or_size(buf, batch: Batch, limits: Limits) -> bytes | tuple[list[bytes], Iterator[bytes]]:
    """The decompressed records section, or, past STREAM_THRESHOLD bytes, the pieces read so
    far and the stream, to go on from there."""
    pieces = iter(decompress_chunks(batch.compression, _compressed(buf, batch), 2, limits=limits, stream=True))
    parts: list[bytes] = []
    total = 0
    for piece in pieces:
        total += len(piece)
        parts.append(piece)
        if total > STREAM_THRESHOLD:
            return parts, pieces
    return b"".join(parts)


class _Stream:
    """An iterator of pieces that remembers having ended."""

    __slots__ = ("it", "ended")

    def __init__(self, it: Iterator[bytes]) -> None:
        self.it, self.ended = it, False

    def __iter__(self) -> _Stream:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self.it)
        except StopIteration:
            self.ended = True
            raise


def _streamed(buf, batch: Batch, limits: Limits, head: list[bytes], rest: Iterator[bytes]) -> Iterator[list[Record]]:
    """The slices of a batch whose records section is decoded from a window of its stream
    (``head``, the pieces read, then ``rest``): the same slices, records and errors as from the
    whole section. A slice reaching past the window is finished after the window moves on
    (past a record longer than the window, it grows to hold that record)."""
    pieces = _Stream(itertools.chain(head, rest))
    size = None
    count = cast(int, batch.count)      # set on every v2 batch
    window, pos, seen = b"", 0, 0       # seen: the stream's bytes read into windows so far
    ahead = WINDOW          # bytes to hold ahead of the decoder: two slices like the last at least
    n = 0
    try:
        while n < count:
            take = min(RECORDS_SLICE, count - n)
            records: list[Record] = []
            used = 0                        # bytes of the slice's records
            while take:
                if len(window) - pos < ahead >> 1 and not pieces.ended:
                    window, seen = refill_window(pieces, window, pos, seen, ahead, size)
                    pos = 0
                final = pieces.ended        # the window ends where the records section does
                try:
                    part, next_pos = decode_v2_span(window, pos, batch, n, take, final)
                    got = take
                except KdumpError:
                    if final:
                        raise
                    got, need = _whole_records(window, pos, take)
                    if got == take:
                        raise            # not the window's end: the records themselves are bad
                    if got == 0:         # the next record runs past the window: read on
                        window, seen = refill_window(pieces, window, pos, seen, max(need, WINDOW), size)
                        pos = 0
                        continue
                    part, next_pos = decode_v2_span(window, pos, batch, n, got, False)
                used += next_pos - pos
                pos = next_pos
                n += got
                take -= got
                records = records + part if records else part
            ahead = max(WINDOW, 2 * used)
            if n == count:          # as the whole section would, before the slice: bytes left over
                left = len(window) - pos + sum(len(p) for p in pieces)
                if left:
                    raise InvalidRecordError(records_remaining(batch, left))
            yield LargeRecords(records)
    except KdumpError as e:
        if isinstance(e, CodecError):
            e.message = f"{batch_name(batch)}: {e.message}"
        elif seen > len(window):      # a varint's "at byte N" counts from the window: from the section
            base = seen - len(window)
            e.message = _AT_BYTE.sub(lambda m: f"at byte {int(m[1]) + base}", e.message)
        raise e.located(position=batch.position) from None


_AT_BYTE = re.compile(r"\bat byte (\d+)")


def refill_window(pieces: Iterator[bytes], window: bytes, pos: int, seen: int, want: int,
                  size: int | None) -> tuple[bytes, int]:
    """``window[pos:]`` followed by pieces of the stream until it holds ``want`` bytes or the
    stream ends; and the stream's bytes read so far (of ``size``, None: not known)."""
    parts = [window[pos:]]
    have = len(window) - pos
    for piece in pieces:
        parts.append(piece)
        have += len(piece)
        seen += len(piece)
        if have >= want:
            break
    if size is not None and (seen > size or (have < want and seen != size)):   # never, unless the library errs
        raise CodecError(f"payload decompressed to {seen} bytes, not the {size} of the first pass")
    return b"".join(parts), seen


def _whole_records(data: bytes, pos: int, take: int) -> tuple[int, int]:
    """How many of the next ``take`` records lie wholly in ``data`` from ``pos``, OVERREAD
    bytes before its end (``take`` when one is malformed before: the decoder says how), and the
    bytes from ``pos`` the first that does not would need (at least one more)."""
    start, end = pos, len(data) - OVERREAD
    for k in range(take):
        try:
            length, body = read_varint(data, pos)
        except TruncatedError:
            return k, pos - start + 1
        except InvalidRecordError:
            return take, 0
        if length < MIN_RECORD_BODY:
            return take, 0
        if body + length > end:
            return k, body + length + OVERREAD - start
        pos = body + length
    return take, 0
