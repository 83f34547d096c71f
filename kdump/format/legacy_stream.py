"""The records of a v0/v1 wrapper a slice at a time: ``record_stream.v2_record_slices``'s twin.

A wrapper's value is a whole inner message set, and a few KB of gzip can hold millions of
empty messages. The walk has opened the wrapper to count it (``legacy.parse_legacy``): its
inner set is checked whole then, so its errors come before any record, as for one list of
them. Here its records are made RECORDS_SLICE at a time (``decode_span``), from the set held
whole (up to STREAM_THRESHOLD bytes) or from a window of its decompressed stream
(``legacy.inner_windows``): what is held at once is a window, the largest message and one
slice of records, whatever the count.
"""

from __future__ import annotations

from collections.abc import Iterator

from kdump import _accel
from kdump.errors import CodecError, KdumpError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.legacy import (
    Message,
    check_inner_count,
    decode_legacy,
    inner_entries,
    inner_records,
    inner_windows,
    log_append_ts,
    opened_inner,
    wrapper_names,
)
from kdump.format.records import LARGE_PAYLOAD, RECORDS_SLICE, LargeRecords
from kdump.model import COMPRESSION_MASK, Batch, Record


def legacy_record_slices(buf, batch: Batch, limits: Limits = DEFAULT_LIMITS) -> Iterator[list[Record]]:
    """The records of the legacy ``batch``, RECORDS_SLICE at a time (one slice for a message
    or a wrapper of fewer); a located KdumpError where they do not decode."""
    count = batch.count
    if count is None or count <= RECORDS_SLICE or not batch.attributes & COMPRESSION_MASK:
        yield decode_legacy(buf, batch, limits)
        return
    try:
        check_inner_count(batch, limits)
        opened = opened_inner(buf, batch, limits)
        if opened is None:      # it no longer opens: the whole path says why
            yield decode_legacy(buf, batch, limits)
            return
        msg, data, inner, base = opened
        wrapper_offset = batch.last_offset
        if inner is not None:   # made by the walk already (by the reference, without C)
            for i in range(0, len(inner), RECORDS_SLICE):
                yield type(inner)(inner[i:i + RECORDS_SLICE])
        elif type(data) is bytes:
            large = len(data) > LARGE_PAYLOAD
            lat = log_append_ts(msg)
            pos = 0
            while pos < len(data):
                records, pos = decode_span(data, pos, len(data), base, RECORDS_SLICE, lat, msg, wrapper_offset)
                yield LargeRecords(records) if large else records
        else:
            yield from _streamed(msg, wrapper_offset, limits, data, base, count)    # type: ignore[arg-type]
    except KdumpError as e:
        raise e.located(position=batch.position) from None


def decode_span(data, start: int, end: int, base: int, take: int, log_append: int | None, wrapper: Message,
                wrapper_offset: int) -> tuple[list[Record], int]:
    """The Records of at most ``take`` inner entries lying wholly in ``data[start:end]`` (a
    checked set or a window of one), and where the next starts."""
    if (c := _accel.native()) is not None:
        got = c.legacy_decode_span(data, start, end, base, take, log_append)
        if got is not None:
            return got
        # malformed (never in a checked set) or offsets past int64: the reference decides
    off, why = wrapper_names(wrapper, wrapper_offset)
    entries, pos = inner_entries(data, start, end, off, why, final=False, most=take)
    return inner_records(entries, base, log_append), pos


def _streamed(msg: Message, wrapper_offset: int, limits: Limits, size: int, base: int,
              count: int) -> Iterator[list[Record]]:
    """The slices of a wrapper whose inner set (``size`` bytes) is read from a window of its
    stream; a slice reaching past a window is finished from the next."""
    lat = log_append_ts(msg)
    records: list[Record] = []
    n = 0
    for window, pos, end, _, _, _ in inner_windows(msg, wrapper_offset, limits, size):
        while pos < end:
            part, pos = decode_span(window, pos, end, base, RECORDS_SLICE - len(records), lat, msg, wrapper_offset)
            records = records + part if records else part
            if len(records) == RECORDS_SLICE:
                n += len(records)
                yield LargeRecords(records)
                records = []
    if records:
        n += len(records)
        yield LargeRecords(records)
    if n != count:          # never, unless the library misbehaves
        raise CodecError(f"inner message set decompressed to {n} messages, not the {count} of the first pass")
