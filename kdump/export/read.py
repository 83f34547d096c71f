"""Reading one slice: its batches and records, and ``Damage`` where something went wrong.

``SliceReader`` reads with the same ``SegmentReader`` (and so the same walker and decoder)
that ``kdump dump`` uses. Damage never raises: it becomes a row whose ``error`` column says
what happened. A record whose timestamp Kafka's long sum wrapped (``timestamp_overflow``) keeps
the wrapped value, as every Kafka reader sees it, and its batch gets one such row as well: a
Parquet timestamp column cannot hold the value, so it is null there, and the row says why.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import NamedTuple

from kdump.errors import KdumpError, OutOfMemoryError
from kdump.export.slices import Scope, Slice
from kdump.findings import TIMESTAMP_OVERFLOW
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.javalong import unwrapped_range, wrap_message
from kdump.model import Batch, Record
from kdump.storage.record_reader import Filters, RecordSlices, SegmentReader, out_of_memory


class SliceReader(SegmentReader):
    """``SegmentReader`` over ``[slice.start, slice.end)``.

    The end is the reader's ``max_bytes`` (whole batches before it), and the start is the
    slice start unless the reader's own index seek for a start offset lands further on.
    """

    def __init__(self, sl: Slice, filters: Filters = Filters(), records: bool = True,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        if sl.end is not None:
            filters = filters._replace(max_bytes=sl.end)
        if sl.served_to is not None:
            filters = filters.up_to(sl.served_to)
        super().__init__(sl.log_file(), filters, records, limits)
        self.slice_start = sl.start

    def _seek(self, buf, end: int) -> int:
        seeked = super()._seek(buf, end)
        return max(seeked, self.slice_start)


class Damage(NamedTuple):
    """Something that stopped or skipped part of a slice: becomes an error row."""

    kind: str
    position: int | None
    offset: int | None
    message: str
    batch: Batch | None = None


def read_slice(sl: Slice, scope: Scope = Scope(), records: bool = True,
               limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[Batch, list[Record] | None] | Damage]:
    """The batches (with their records) of a slice, and Damage where something went wrong.

    Records outside the scope's offset range are dropped here, exactly (the caller may tell
    Spark the offset filters are handled); a Damage is kept when its offset is in range.
    """
    reader = SliceReader(sl, scope.record_filters(), records, limits)
    at = (sl.start, None)           # where the walk is: an out-of-memory error is located there
    try:
        for item in reader:
            b = item.batch
            at = (b.position, b.base_offset)
            if isinstance(item.error, OutOfMemoryError):
                raise item.error            # not damage: the export cannot complete
            error = item.error
            wrapped = None
            if type(item.records) is RecordSlices:       # a batch of many records, a slice at a time
                for records in item.records:
                    if records:
                        yield b, records
                        wrapped = wrapped or _first_wrapped(b, records)
                error = item.records.error
                if isinstance(error, OutOfMemoryError):
                    raise error
            elif error is None:
                yield item.batch, item.records
                wrapped = _first_wrapped(b, item.records)
            if wrapped is not None:
                yield Damage(TIMESTAMP_OVERFLOW, b.position, wrapped.offset,
                             wrap_message(wrapped.offset, b.base_timestamp, wrapped.timestamp), b)
            if error is not None:
                yield Damage("records", b.position, b.base_offset if b.base_offset is not None else b.last_offset,
                             error.message, b)
    except OutOfMemoryError:
        raise
    except MemoryError:
        raise out_of_memory(sl.path, *at, "read") from None
    except KdumpError as e:
        yield Damage("unreadable", e.position, e.offset, e.message)
        return
    except Exception as e:  # noqa: BLE001 - damaged bytes must not fail a job; say what broke
        yield Damage("internal", None, None, f"{type(e).__name__}: {e}")
        return
    stop = reader.stop
    if stop is not None:
        yield Damage(stop.kind, stop.position, stop.offset, stop.message)


_TIMESTAMP = itemgetter(1)


def _first_wrapped(b: Batch, records) -> Record | None:
    """The first record of a CreateTime v2 batch whose timestamp Kafka's long sum wrapped."""
    if b.magic != 2 or b.timestamp_type or not records:
        return None
    lo, hi = unwrapped_range(b.base_timestamp)
    # a sum wrapped past INT64_MAX lands below lo, one past INT64_MIN above hi; one of the two
    # bounds is the int64's own, so one pass of min or max tells
    if b.base_timestamp >= 0 and min(map(_TIMESTAMP, records)) >= lo:
        return None
    if b.base_timestamp < 0 and max(map(_TIMESTAMP, records)) <= hi:
        return None
    return next(r for r in records if not lo <= r.timestamp <= hi)


def damage_message(d: Damage) -> str:
    """The error column: the walk's stop reasons keep their finding kind as a prefix."""
    return d.message if d.kind in ("records", "internal", "unreadable") else f"{d.kind}: {d.message}"


def in_range(scope: Scope, offset: int | None) -> bool:
    if scope.start_offset is None and scope.end_offset is None:
        return True
    if offset is None:
        return False
    if scope.start_offset is not None and offset < scope.start_offset:
        return False
    return scope.end_offset is None or offset <= scope.end_offset
