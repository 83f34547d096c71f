"""Reading the batches of one segment for ``dump`` (and ``export``): seek, filter, decode.

The walk itself is ``format.walk.Walker``; this adds what a reader of a log dir needs:
where to start (the ``.index``/``.timeindex`` are used to seek only when they pass a
sanity check, and the batch found there is checked before it is trusted), the offset,
time and byte filters, and record decoding with per-batch error isolation so one bad
batch never stops the dump.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kdump import _accel
from kdump.errors import KdumpError, OutOfMemoryError
from kdump.format.batch import RECORD_BATCH_OVERHEAD
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.legacy import inner_set
from kdump.format.records import COMPRESSED_OR_CONTROL, LARGE_PAYLOAD, RECORDS_SLICE, LargeRecords, batch_payload
from kdump.format.walk import HEADER_UP_TO_MAGIC, TORN_TAIL, TRAILING_BYTES, Walker, decode_records, record_slices
from kdump.model import (
    B_ATTRIBUTES,
    B_COUNT,
    B_MAGIC,
    B_POSITION,
    B_SIZE,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    Batch,
    Finding,
    Record,
)
from kdump.storage import fs
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import MappedFile
from kdump.storage.names import INDEX_SUFFIX, TIMEINDEX_SUFFIX, offset_path


class Filters(NamedTuple):
    start_offset: int | None = None
    end_offset: int | None = None        # inclusive
    start_time: int | None = None        # epoch ms, inclusive
    end_time: int | None = None          # epoch ms, inclusive
    max_bytes: int | None = None         # only batches wholly inside the first N bytes

    @property
    def active(self) -> bool:
        return any(v is not None for v in self)

    def batch_offsets_overlap(self, b: Batch) -> bool:
        first = b.base_offset if b.base_offset is not None else b.last_offset
        if self.start_offset is not None and b.last_offset < self.start_offset:
            return False
        return not (self.end_offset is not None and first > self.end_offset)

    def batch_times_overlap(self, b: Batch) -> bool:
        if self.start_time is not None and b.max_timestamp < self.start_time:
            return False
        return not (self.end_time is not None and b.base_timestamp > self.end_time and b.base_timestamp >= 0)

    def keep_record(self, r: Record) -> bool:
        if self.start_offset is not None and r.offset < self.start_offset:
            return False
        if self.end_offset is not None and r.offset > self.end_offset:
            return False
        if self.start_time is not None and r.timestamp < self.start_time:
            return False
        return not (self.end_time is not None and r.timestamp > self.end_time)


# A consumer of spans that declines RUNS_TRIES in a row is not offered the next RUNS_REST
# batches: on a segment of batches it never takes (compressed ones) that costs one offer per
# RUNS_REST batches, not one a batch.
RUNS_TRIES, RUNS_REST = 4, 64


class Span(NamedTuple):
    """Where a run of plain v2 batches may start: ``buf[start:end]``, for a consumer's own reader
    of them straight from the bytes (a C writer; batches of at most ``max_records`` records). The
    consumer says how far it got with ``SegmentReader.resume``; a span it leaves (no resume, or
    ``start``) is read by the reader as usual, as the batches that follow."""

    buf: object
    start: int
    end: int
    max_records: int


def out_of_memory(path: str, position: int | None, base_offset: int | None, what: str) -> OutOfMemoryError:
    """A batch whose records do not fit in memory: a located error, not an internal one."""
    return OutOfMemoryError(f"not enough memory to {what} the records of the batch at offset {base_offset} "
                            f"(lower --max-decompressed to refuse such batches)", file=path, position=position)


class Item(NamedTuple):
    """One batch as the dump shows it: its records (when asked) or why they did not decode.
    ``records`` is a RecordSlices for a batch of more than RECORDS_SLICE records, and what the
    reader's ``raw`` hook returned for a batch the hook took."""

    batch: Batch
    records: list[Record] | RecordSlices | None
    error: KdumpError | None


_item = tuple.__new__       # Item(...) without the named tuple's Python-level __new__


class RecordSlices:
    """``Item.records`` of a batch (or a legacy wrapper) of more than RECORDS_SLICE records: lists of them,
    decoded a slice at a time while this is iterated (once), so that a record-count bomb never
    becomes one list. Afterwards ``error`` says why they stopped (None: every record came)."""

    __slots__ = ("_slices", "_path", "_batch", "_keep", "error")

    def __init__(self, buf, batch: Batch, limits: Limits, path: str, keep=None) -> None:
        self._slices = record_slices(buf, batch, limits)
        self._path, self._batch, self._keep = path, batch, keep
        self.error: KdumpError | None = None

    def __iter__(self) -> Iterator[list[Record]]:
        keep = self._keep
        try:
            for records in self._slices:
                if keep is not None:
                    kept = [r for r in records if keep(r)]
                    records = LargeRecords(kept) if type(records) is LargeRecords else kept
                yield records
        except KdumpError as e:
            self.error = e.located(self._path, self._batch.position)
        except MemoryError:
            self.error = out_of_memory(self._path, self._batch.position, self._batch.base_offset, "decode")


class SegmentReader:
    """Iterate the (filtered) batches of one ``.log``/KRaft ``.checkpoint`` file.

    After iteration: ``stop`` (why the walk ended early, or None), ``trailing_bytes``,
    ``start_position`` and ``seek_note`` (how the start was found).
    """

    def __init__(self, f: LogFile, filters: Filters = Filters(), records: bool = False,
                 limits: Limits = DEFAULT_LIMITS, span: tuple[int, int | None] | None = None,
                 raw=None, spans: bool = False) -> None:
        self.file = f
        # raw(batch, records section) -> object | None: offered each uncompressed, non-control v2
        # batch of one slice of records or fewer before its records are decoded (without a range
        # of offsets or times); what it returns stands for them in the Item (a writer that reads
        # the bytes itself), None: decode them as usual. A legacy wrapper's inner set too, as
        # raw(batch, inner set, its LogAppendTime or None); only that where ``raw.v2`` is False.
        self.raw = raw
        # spans: also yield a Span where a run of plain v2 batches may start (records wanted,
        # no range of offsets or times), for a consumer that draws them from the bytes itself
        # and says where it stopped (``resume``); the batches it takes are not yielded.
        self.spans = spans
        self._walker: Walker | None = None
        # (start, stop): read from a batch boundary to the batch starting at ``stop`` (one range
        # of a segment cut by storage.split); ``reached`` then says the walk met that batch. A
        # walk passing ``stop`` inside a batch (the cut was not a boundary of this walk) reads on.
        self.span = span
        self.reached = False
        self.filters = filters
        self.want_records = records
        self.limits = limits
        self.stop: Finding | None = None
        self.trailing_bytes = 0
        self.start_position = 0
        self.seek_note: str | None = None
        self.size = 0

    def __iter__(self) -> Iterator[Item]:
        mapped = MappedFile(self.file.path, lazy=True)     # a remote file: only [start, end) is fetched
        view = None
        try:
            self.size = mapped.size
            buf = mapped.buf
            end = mapped.size if self.filters.max_bytes is None else min(mapped.size, self.filters.max_bytes)
            start = self._seek(buf, end) if self.span is None else self.span[0]
            stop_at = None if self.span is None else self.span[1]
            self.start_position = start
            mapped.need(start, end)
            mapped.reading_from(start)
            if mapped.size > (64 << 20):
                mapped.advise_sequential()
            flt = self.filters
            check_offsets = flt.start_offset is not None or flt.end_offset is not None
            check_times = flt.start_time is not None or flt.end_time is not None
            want_records, limits = self.want_records, self.limits
            max_records = limits.max_records
            walker = self._walker = Walker(buf, start, end, self.limits)
            batches: Iterable[Batch] = walker
            offering = self.spans and want_records and not (check_offsets or check_times)
            if offering:
                batches = self._spans(walker, end if stop_at is None else min(end, stop_at),
                                      min(max_records, RECORDS_SLICE))
            # Uncompressed non-control v2 batches go straight to the C record decoder (what
            # decode_records -> decode_v2 would call); its None means "malformed", and then
            # decode_records reruns in Python for the precise error.
            c = _accel.native()     # once per segment
            raw = self.raw if not (check_offsets or check_times) else None
            raw_v2 = raw if getattr(raw, "v2", True) else None
            view = memoryview(buf) if raw is not None else None
            for batch in batches:
                if offering and type(batch) is Span:
                    yield batch     # (only where ``spans`` asked for them)
                    continue
                if stop_at is not None and batch[B_POSITION] >= stop_at:
                    if batch[B_POSITION] == stop_at:
                        self.reached = True
                        break
                    stop_at = None
                if check_offsets and not flt.batch_offsets_overlap(batch):
                    if flt.end_offset is not None and batch.base_offset is not None \
                            and batch.base_offset > flt.end_offset:
                        break
                    continue
                if check_times and not flt.batch_times_overlap(batch):
                    continue
                if not want_records:
                    yield _item(Item, (batch, None, None))
                    continue
                position, count, size = batch[B_POSITION], batch[B_COUNT], batch[B_SIZE]
                magic, attributes = batch[B_MAGIC], batch[B_ATTRIBUTES]
                if magic == 2 and count is not None and count > RECORDS_SLICE:
                    keep = flt.keep_record if check_offsets or check_times else None
                    yield _item(Item, (batch, RecordSlices(buf, batch, limits, self.file.path, keep), None))
                    continue
                # (magic 2: count is not None; a raw hook is given a view)
                if raw_v2 is not None and magic == 2 and not attributes & CONTROL_FLAG and count <= max_records:  # type: ignore[operator]
                    if not attributes & COMPRESSION_MASK:
                        rendered = raw(batch, view[position + RECORD_BATCH_OVERHEAD:position + size])  # type: ignore[index,misc]
                    else:
                        rendered = self._raw_compressed(raw, buf, batch)
                    if rendered is not None:
                        yield _item(Item, (batch, rendered, None))
                        continue
                elif raw is not None and magic < 2 and attributes & COMPRESSION_MASK \
                        and (count is None or count <= max_records):
                    inner = inner_set(buf, batch)       # decompressed by the walk, not yet decoded
                    rendered = raw(batch, *inner) if inner is not None else None
                    if rendered is not None:
                        yield _item(Item, (batch, rendered, None))
                        continue
                if magic < 2 and count is not None and count > RECORDS_SLICE:     # a wrapper of many
                    keep = flt.keep_record if check_offsets or check_times else None
                    yield _item(Item, (batch, RecordSlices(buf, batch, limits, self.file.path, keep), None))
                    continue
                records = None
                try:
                    if c is not None and magic == 2 and not attributes & COMPRESSED_OR_CONTROL \
                            and count <= max_records:  # type: ignore[operator]  # magic 2: count is not None
                        records = c.decode_v2_records(buf[position + RECORD_BATCH_OVERHEAD:position + size], batch)
                    if records is None:
                        records = decode_records(buf, batch, limits)
                except KdumpError as e:
                    yield _item(Item, (batch, None, e.located(self.file.path, position)))
                    continue
                except MemoryError:
                    oom = out_of_memory(self.file.path, position, batch.base_offset, "decode")
                    yield _item(Item, (batch, None, oom))
                    continue
                if check_offsets or check_times:
                    kept = [r for r in records if flt.keep_record(r)]
                    records = LargeRecords(kept) if type(records) is LargeRecords else kept
                    if not records:
                        continue
                yield _item(Item, (batch, records, None))
            else:
                self.stop = walker.stop
                if end < mapped.size and self.stop is not None and self.stop.kind in (TORN_TAIL, TRAILING_BYTES):
                    # The --max-bytes cut ended the walk inside a batch: a limit, not damage
                    # (kafka-dump-log.sh stops there without a word).
                    self.stop = None
                # --max-bytes cuts the file on purpose: what lies past the cut is not "invalid".
                self.trailing_bytes = 0 if self.filters.max_bytes is not None else walker.trailing_bytes
        finally:
            if view is not None:
                view.release()
            if self._walker is not None and self.spans:
                self._walker.close()        # (a stepped walk: the page-dropping buffer told where it ended)
            mapped.close()

    def resume(self, pos: int) -> None:
        """After a Span: the consumer's reader took the whole batches before ``pos``."""
        self._walker.resume(pos)        # type: ignore[union-attr]

    @staticmethod
    def _spans(walker: Walker, last: int, most: int) -> Iterator[Batch]:
        """The walk's batches, and a Span before each batch the consumer may take instead
        (the walk stepped: ``Walker.span``, ``resume``, ``take``)."""
        buf = walker.buf
        declined = 0        # spans in a row the consumer took nothing from
        skip = 0            # batches to walk without a span (it declined RUNS_TRIES in a row)
        while True:
            span = walker.span() if skip <= 0 else None
            if span is not None:
                start = span[0]
                yield _item(Span, (buf, start, min(span[1], last), most))  # type: ignore[misc]  # (in the batches' stream)
                if walker.stop_position > start:
                    declined = 0
                    continue
                declined += 1
                if declined == RUNS_TRIES:
                    declined, skip = 0, RUNS_REST
                batches = walker.take(1)
            else:
                batches = walker.take(max(skip, 1))
            if not batches:
                return
            skip -= len(batches)
            yield from batches

    def _raw_compressed(self, raw, buf, batch: Batch):
        """The raw hook on a compressed batch's records, decompressed (a payload of more than
        LARGE_PAYLOAD, or one that does not decompress, is left to the usual path)."""
        try:
            data = batch_payload(buf, batch, self.limits)
        except (KdumpError, MemoryError):
            return None
        return raw(batch, data) if len(data) <= LARGE_PAYLOAD else None

    # -- seeking ------------------------------------------------------------------------------

    def _seek(self, buf, end: int) -> int:
        flt = self.filters
        if flt.start_offset is None and flt.start_time is None:
            return 0
        if self.file.kind != "log" or self.file.base_offset is None or self.file.leftover:
            return 0
        target = flt.start_offset
        if flt.start_time is not None:
            skip_to = self._time_seek_offset(flt.start_time)
            if skip_to is not None:
                target = skip_to if target is None else max(target, skip_to)
        if target is None:
            return 0
        entries = self._sane_index(end)
        if entries is None:
            return 0
        # The last entry strictly below the target: its batch ends before the target under
        # both conventions (entry = batch last offset since 2.0, base offset before).
        lo, hi = 0, len(entries)
        while lo < hi:
            mid = (lo + hi) // 2
            if entries[mid].offset < target:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return 0
        entry = entries[lo - 1]
        if not self._batch_starts_at(buf, entry.position, entry.offset, end):
            self.seek_note = f"index entry for offset {entry.offset} does not point at its batch; read from the start"
            return 0
        self.seek_note = f"seeked to position {entry.position} with the offset index"
        return entry.position

    def _beside(self, suffix: str, parse):
        """The index file of this segment parsed, or None: absent or unreadable, it is simply
        not used to seek (``verify`` is where its damage is reported)."""
        from kdump.storage.mapped import read_small

        base_offset = self.file.base_offset
        if base_offset is None:     # a .log not named by its offset has none beside it
            return None
        path = offset_path(os.path.dirname(self.file.path), base_offset, suffix)
        if not fs.isfile(path):
            return None
        try:
            return parse(read_small(path, 256 << 20), base_offset)
        except KdumpError:
            return None

    def _sane_index(self, log_size: int):
        from kdump.format.index import parse_index

        idx = self._beside(INDEX_SUFFIX, parse_index)
        if idx is None:
            return None
        entries = idx.entries
        prev_off = prev_pos = -1
        for e in entries:
            if e.offset <= prev_off or e.position <= prev_pos or e.position >= log_size:
                self.seek_note = "offset index is not sane; read from the start"
                return None
            prev_off, prev_pos = e.offset, e.position
        return entries

    def _time_seek_offset(self, start_time: int) -> int | None:
        """First offset that can hold a timestamp >= start_time, from a sane time index."""
        from kdump.format.timeindex import parse_timeindex

        tidx = self._beside(TIMEINDEX_SUFFIX, parse_timeindex)
        if tidx is None:
            return None
        best = None
        prev_ts = prev_off = -1
        for e in tidx.entries:
            if e.timestamp < prev_ts or e.offset < prev_off:
                return None          # not sane: never skip on an index that contradicts itself
            prev_ts, prev_off = e.timestamp, e.offset
            # Each entry is the max timestamp of everything up to its offset.
            if e.timestamp < start_time:
                best = e.offset + 1
        return best

    @staticmethod
    def _batch_starts_at(buf, position: int, entry_offset: int, end: int) -> bool:
        if position + HEADER_UP_TO_MAGIC.size > end:
            return False
        need = getattr(buf, "need", None)       # a remote file's lazy copy: fetch what is read here
        try:
            if need is not None:
                need(position, position + HEADER_UP_TO_MAGIC.size)
            first, size, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, position)
        except Exception:  # noqa: BLE001 - any failure means "do not trust the index"
            return False
        if magic not in (0, 1, 2) or size < 14 or position + 12 + size > end:
            return False
        if need is not None:
            need(position, position + 12 + size)
        walker = Walker(buf, position, position + 12 + size)
        batch = next(iter(walker), None)
        if batch is None or not batch.crc_valid:
            return False
        low = batch.base_offset if batch.base_offset is not None else batch.last_offset
        return low <= entry_offset <= batch.last_offset
