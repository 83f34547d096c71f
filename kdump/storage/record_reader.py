"""Reading the batches of one segment for ``dump`` (and ``export``, ``records``): seek, filter, decode.

The walk itself is ``format.walk.Walker``; this adds what a reader of a log dir needs:
where to start (``storage.index_seek``), the offset, time and byte filters, and record
decoding with per-batch error isolation so one bad batch never stops the dump. It calls
no consumer: a consumer with its own C writer asks for Spans and Raw records sections,
hands them to the writer, and says how far it got (``resume``) or asks for the records
decoded (``decoded``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from kdump import _accel
from kdump.errors import KdumpError, OutOfMemoryError
from kdump.format.batch import RECORD_BATCH_OVERHEAD
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.legacy import inner_set
from kdump.format.records import (
    COMPRESSED_OR_CONTROL,
    LARGE_PAYLOAD,
    RECORDS_SLICE,
    LargeRecords,
    batch_payload,
    decode_v2_section,
)
from kdump.format.walk import TORN_TAIL, TRAILING_BYTES, Walker, decode_records, record_slices
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
from kdump.storage.index_seek import start_position
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import MappedFile


class Filters(NamedTuple):
    start_offset: int | None = None
    end_offset: int | None = None        # inclusive
    start_time: int | None = None        # epoch ms, inclusive
    end_time: int | None = None          # epoch ms, inclusive
    max_bytes: int | None = None         # only batches wholly inside the first N bytes

    @property
    def active(self) -> bool:
        return any(v is not None for v in self)

    def up_to(self, last: int) -> Filters:
        """These filters, records above offset ``last`` dropped too."""
        return self._replace(end_offset=last if self.end_offset is None else min(self.end_offset, last))

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


# SegmentReader's ``raw``: which batches come with a Raw for records.
RAW_ALL, RAW_LEGACY = "all", "legacy"


class Raw(NamedTuple):
    """``Item.records`` of a batch yielded undecoded (SegmentReader's ``raw``): its records
    section (decompressed; a view of the segment while the item is handled), or a legacy
    wrapper's inner set, with the wrapper's LogAppendTime (None: CreateTime or v2)."""

    data: object
    log_append_time: int | None


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
    ``records`` is a RecordSlices for a batch of more than RECORDS_SLICE records, and a Raw for
    a batch the reader's ``raw`` leaves to its consumer."""

    batch: Batch
    records: list[Record] | RecordSlices | Raw | tuple | None
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
                 raw: str | None = None, spans: bool = False) -> None:
        self.file = f
        # raw (RAW_ALL or RAW_LEGACY; without a range of offsets or times): a non-control v2
        # batch of one slice of records or fewer comes with a Raw for records, its records
        # section (decompressed), for a consumer that draws them from the bytes; a legacy
        # wrapper's inner set too (only that with RAW_LEGACY). A consumer that cannot draw one
        # has it decoded as usual (``decoded``).
        self.raw = raw
        self._buf: Any = None       # (while iterating: the segment, and the C module or None)
        self._c: Any = None
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
        view: Any = None
        try:
            self.size = mapped.size
            buf = mapped.buf
            end = mapped.size if self.filters.max_bytes is None else min(mapped.size, self.filters.max_bytes)
            start = self._seek(buf, end) if self.span is None else self.span[0]
            stop_at = None if self.span is None else self.span[1]
            self.start_position = start
            mapped.need(start, end)
            mapped.reading_from(start)
            mapped.reading_to(stop_at)
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
            c = self._c = _accel.native()     # once per segment
            self._buf = buf
            raw = self.raw is not None and not (check_offsets or check_times)
            raw_v2 = raw and self.raw == RAW_ALL
            view = memoryview(buf) if raw else None
            keep = flt.keep_record if check_offsets or check_times else None
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
                    yield _item(Item, (batch, RecordSlices(buf, batch, limits, self.file.path, keep), None))
                    continue
                # (magic 2: count is not None; a Raw is a view)
                payload = None
                if raw_v2 and magic == 2 and not attributes & CONTROL_FLAG and count <= max_records:  # type: ignore[operator]
                    if not attributes & COMPRESSION_MASK:
                        yield _item(Item, (batch, _item(Raw, (view[position + RECORD_BATCH_OVERHEAD:position + size],
                                                              None)), None))
                        continue
                    payload = self._payload(buf, batch)
                    if payload is not None and len(payload) <= LARGE_PAYLOAD:
                        yield _item(Item, (batch, _item(Raw, (payload, None)), None))
                        continue
                    # (a large one is decoded from what was decompressed, not decompressed again)
                elif raw and magic < 2 and attributes & COMPRESSION_MASK and (count is None or count <= max_records):
                    inner = inner_set(buf, batch)       # decompressed by the walk, not yet decoded
                    if inner is not None:
                        yield _item(Item, (batch, _item(Raw, inner), None))
                        continue
                it = self._decoded(buf, batch, c, keep, payload)
                payload = None      # (not held while the records are drawn)
                if it is not None:
                    yield it
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

    def decoded(self, batch: Batch) -> Item:
        """The Item of a batch yielded as Raw, its records decoded as for any other batch (for
        a consumer that could not draw it from the bytes)."""
        return self._decoded(self._buf, batch, self._c, None)     # type: ignore[return-value]  # (no range: an Item)

    def _decoded(self, buf, batch: Batch, c, keep, payload: bytes | None = None) -> Item | None:
        """The Item of a batch with its records (those ``keep`` keeps; None: no record was kept),
        or why they did not decode: a wrapper of many as RecordSlices. Uncompressed non-control v2
        batches go straight to the C record decoder (what decode_records -> decode_v2 would call);
        its None means "malformed", and then decode_records reruns in Python for the precise error.
        ``payload``: a compressed v2 batch's records section, already decompressed."""
        position, count, size, magic = batch[B_POSITION], batch[B_COUNT], batch[B_SIZE], batch[B_MAGIC]
        if magic < 2 and count is not None and count > RECORDS_SLICE:     # a wrapper of many
            return _item(Item, (batch, RecordSlices(buf, batch, self.limits, self.file.path, keep), None))
        records = None
        try:
            if c is not None and magic == 2 and not batch[B_ATTRIBUTES] & COMPRESSED_OR_CONTROL \
                    and count <= self.limits.max_records:  # type: ignore[operator]  # magic 2: count is not None
                records = c.decode_v2_records(buf[position + RECORD_BATCH_OVERHEAD:position + size], batch)
            if records is None:
                records = decode_v2_section(payload, batch) if payload is not None else \
                    decode_records(buf, batch, self.limits)
        except KdumpError as e:
            return _item(Item, (batch, None, e.located(self.file.path, position)))
        except MemoryError:
            return _item(Item, (batch, None, out_of_memory(self.file.path, position, batch.base_offset, "decode")))
        if keep is not None:
            kept = [r for r in records if keep(r)]
            records = LargeRecords(kept) if type(records) is LargeRecords else kept
            if not records:
                return None
        return _item(Item, (batch, records, None))

    def _payload(self, buf, batch: Batch) -> bytes | None:
        """A compressed batch's records section decompressed, or None: one that does not
        decompress is decoded as usual (for the error's words)."""
        try:
            return batch_payload(buf, batch, self.limits)
        except (KdumpError, MemoryError):
            return None

    def _seek(self, buf, end: int) -> int:
        flt = self.filters
        start, self.seek_note = start_position(self.file, buf, end, flt.start_offset, flt.start_time)
        return start
