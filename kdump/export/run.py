"""Records of a log dir as rows: the export core shared by the local engine and Spark.

The unit of work is a *slice*: a byte range of one segment that starts and ends on batch
boundaries. ``plan()`` cuts big segments at positions taken from their ``.index`` (each
cut is checked to be a real batch with a valid CRC before it is used) and drops slices a
topic/partition/offset scope cannot touch. ``SliceReader`` reads one slice with the same
``SegmentReader`` (and so the same walker and decoder) that ``kdump dump`` uses, and the
column builders below turn its batches into Arrow record batches bounded by rows *and*
bytes. Damage never raises: it becomes a row whose ``error`` column says what happened.

The local engine (``export_local``) runs the same plan in this process and writes Parquet
with pyarrow or NDJSON; the Spark source (``kdump.spark.source``) runs each slice as a
task. Both share everything above the writer, so they produce the same rows.

pyarrow is imported lazily: planning and NDJSON need nothing beyond the standard library.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from kdump.errors import ExitStatus, KdumpError, OutOfMemoryError, UsageError, WriteError
from kdump.export.schema import (  # noqa: F401
    BATCH_COLUMNS,
    HEADER_DDL,
    JSON_COLUMNS,
    PARTITION_COLUMNS,
    RECORD_COLUMNS,
    arrow_schema,
    arrow_type,
    ddl,
    text,
)
from kdump.export.write import HIVE_NULL, ParquetSink, binary_array, hive_dir, joined, record_lines, size_parts  # noqa: F401
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.storage.logdir import BATCH_KINDS, LOG, LogFile, resolve
from kdump.model import COMPRESSION_NAMES, TIMESTAMP_TYPE_NAMES, Batch, Record
from kdump.storage.reader import Filters, SegmentReader, out_of_memory
from kdump.render.jsonout import maybe_large
from kdump.storage.names import INDEX_SUFFIX, offset_path
from kdump.storage.segment import MappedFile, file_size

DEFAULT_SPLIT_BYTES = 32 << 20       # slice size: ~1-2 s of decoding per task
DEFAULT_MAX_ROWS = 16384             # Arrow batch bounds: rows ...
DEFAULT_MAX_BYTES = 16 << 20         # ... and key/value/header bytes (binary offsets are int32)
MAX_TIMESTAMP_MS = 253402300799999   # 9999-12-31T23:59:59.999Z: the end of Spark's range


# -- planning ------------------------------------------------------------------------------------

class Scope(NamedTuple):
    """What a query asks for: files and slices outside it are skipped, and ``read_slice`` drops
    the records outside the offset range (so a pushed-down filter is applied exactly)."""

    topics: frozenset | None = None           # None: any topic
    partitions: frozenset | None = None       # None: any partition
    partition_min: int | None = None
    partition_max: int | None = None
    start_offset: int | None = None           # inclusive
    end_offset: int | None = None             # inclusive

    def keeps_file(self, topic: str | None, partition: int | None) -> bool:
        if self.topics is not None and topic not in self.topics:
            return False
        if self.partitions is None and self.partition_min is None and self.partition_max is None:
            return True
        if partition is None:
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_min is not None and partition < self.partition_min:
            return False
        return not (self.partition_max is not None and partition > self.partition_max)

    def overlaps(self, low: int | None, high: int | None) -> bool:
        """Can records with offsets in [low, high] (None: unknown) be in the offset range?"""
        if self.start_offset is not None and high is not None and high < self.start_offset:
            return False
        return not (self.end_offset is not None and low is not None and low > self.end_offset)

    def record_filters(self) -> Filters:
        return Filters(start_offset=self.start_offset, end_offset=self.end_offset)

    @property
    def empty(self) -> bool:
        """A range no offset can satisfy (offset > 5 AND offset < 3)."""
        return (self.start_offset is not None and self.end_offset is not None
                and self.start_offset > self.end_offset)


class Slice(NamedTuple):
    """Batches of one file from byte ``start`` up to ``end`` (None: the end of the file)."""

    path: str                 # absolute, so a task on another machine or cwd finds it
    kind: str
    topic: str | None
    partition: int | None
    base_offset: int | None   # the segment's, from its name
    leftover: str | None
    start: int
    end: int | None
    low: int | None           # every record of the slice has an offset in [low, high] (if known)
    high: int | None
    nbytes: int = 0           # bytes of the file the slice covers (for packing small slices into a task)

    @property
    def segment(self) -> str:
        return os.path.basename(self.path)

    def log_file(self) -> LogFile:
        return LogFile(self.path, self.kind, self.topic, self.partition, self.base_offset, self.leftover)


def plan(paths: Iterable[str], split_bytes: int = DEFAULT_SPLIT_BYTES, scope: Scope = Scope()) -> list[Slice]:
    """The slices of every segment (and KRaft snapshot) under ``paths``, in dump order.

    Raises a UsageError/InputError for a PATH that names nothing readable, as the other
    commands do; damage inside files is left to the readers.
    """
    files = resolve(list(paths), kinds=BATCH_KINDS)
    if scope.empty:
        return []
    upper = _segment_upper_bounds(files)
    out: list[Slice] = []
    for f in files:
        if not scope.keeps_file(f.topic, f.partition):
            continue
        live = f.kind == LOG and f.leftover is None and f.base_offset is not None
        low = f.base_offset if live else None
        high = upper.get(f.path) if live else None
        if live and not scope.overlaps(low, high):
            continue
        path = os.path.abspath(f.path)
        size = file_size(path)
        pieces = _split(f, size, split_bytes) if live and split_bytes > 0 else [(0, None, None, None)]
        for start, end, slow, shigh in pieces:
            s_low = low if slow is None else slow
            s_high = high if shigh is None else shigh
            if scope.overlaps(s_low, s_high):
                out.append(Slice(path, f.kind, f.topic, f.partition, f.base_offset, f.leftover, start, end,
                                 s_low, s_high, (size if end is None else end) - start))
    return out


def pack(slices: list[Slice], target_bytes: int, min_groups: int = 1) -> list[list[Slice]]:
    """Group consecutive slices into tasks of about ``target_bytes``, at least ``min_groups`` of them.

    A log dir holds many small segments (and empty active ones); a task each would cost
    more in scheduling than in reading. Slices of split segments are already about
    ``target_bytes`` and stay alone; a small tree is still spread over ``min_groups`` tasks.
    """
    if target_bytes <= 0:
        return [[sl] for sl in slices]
    weights = [max(sl.nbytes, 4096) for sl in slices]     # an empty file still costs an open and a walk
    target = min(target_bytes, max(4096, -(-sum(weights) // max(1, min_groups))))
    groups: list[list[Slice]] = []
    current: list[Slice] = []
    total = 0
    for sl, weight in zip(slices, weights):
        current.append(sl)
        total += weight
        if total >= target:
            groups.append(current)
            current, total = [], 0
    if current:
        groups.append(current)
    return groups


def _segment_upper_bounds(files: list[LogFile]) -> dict[str, int]:
    """For each live segment, the last offset it may hold: the next segment's base - 1."""
    by_dir: dict[str, list[LogFile]] = {}
    for f in files:
        if f.kind == LOG and f.leftover is None and f.base_offset is not None:
            by_dir.setdefault(os.path.dirname(os.path.abspath(f.path)), []).append(f)
    out = {}
    for segs in by_dir.values():
        segs.sort(key=lambda f: f.base_offset)
        for a, b in zip(segs, segs[1:]):
            out[a.path] = b.base_offset - 1
    return out


def _split(f: LogFile, size: int, split_bytes: int) -> list[tuple[int, int | None, int | None, int | None]]:
    """(start, end, low, high) pieces of a segment cut at ``.index`` positions.

    A cut is used only where the index entry points at a batch that parses, has a valid
    CRC and holds the entry's offset: a lying index must not split a batch in two.
    ``low``/``high`` are offset bounds from neighbouring entries (None: the segment's own).
    """
    if size <= split_bytes:
        return [(0, None, None, None)]
    entries = _sane_entries(f, size)
    if not entries:
        return [(0, None, None, None)]
    cuts: list[tuple[int, int, int | None]] = []     # (position, entry offset, offset of the entry before)
    last = 0
    try:
        mapped = MappedFile(f.path)
    except KdumpError:
        return [(0, None, None, None)]
    try:
        for i, e in enumerate(entries):
            if e.position - last < split_bytes or size - e.position < split_bytes // 4:
                continue
            # Reuses the reader's own check of "does this index entry point at its batch".
            if SegmentReader._batch_starts_at(mapped.buf, e.position, e.offset, size):
                cuts.append((e.position, e.offset, entries[i - 1].offset if i else None))
                last = e.position
    finally:
        mapped.close()
    pieces = []
    start, low = 0, None
    for position, entry_offset, before in cuts:
        # Records before the cut are below the cut batch's base, so at most its entry offset.
        pieces.append((start, position, low, entry_offset))
        start, low = position, before
    pieces.append((start, None, low, None))
    return pieces


def _sane_entries(f: LogFile, log_size: int):
    from kdump.format.index import parse_index
    from kdump.storage.segment import read_small

    path = offset_path(os.path.dirname(f.path), f.base_offset, INDEX_SUFFIX)
    try:
        entries = parse_index(read_small(path, 256 << 20), f.base_offset).entries
    except (KdumpError, OSError):
        return None
    prev_off = prev_pos = -1
    for e in entries:
        if e.offset <= prev_off or e.position <= prev_pos or e.position >= log_size:
            return None
        prev_off, prev_pos = e.offset, e.position
    return entries


# -- reading one slice ---------------------------------------------------------------------------

class SliceReader(SegmentReader):
    """``SegmentReader`` over ``[slice.start, slice.end)``.

    The end is the reader's ``max_bytes`` (whole batches before it), and the start is the
    slice start unless the reader's own index seek for a start offset lands further on.
    """

    def __init__(self, sl: Slice, filters: Filters = Filters(), records: bool = True,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        if sl.end is not None:
            filters = filters._replace(max_bytes=sl.end)
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
            if item.error is not None:
                yield Damage("records", b.position, b.base_offset if b.base_offset is not None else b.last_offset,
                             item.error.message, b)
            else:
                yield item.batch, item.records
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


def damage_message(d: Damage) -> str:
    """The error column: the walk's stop reasons keep their finding kind as a prefix."""
    return d.message if d.kind in ("records", "internal", "unreadable") else f"{d.kind}: {d.message}"


def _in_range(scope: Scope, offset: int | None) -> bool:
    if scope.start_offset is None and scope.end_offset is None:
        return True
    if offset is None:
        return False
    if scope.start_offset is not None and offset < scope.start_offset:
        return False
    return scope.end_offset is None or offset <= scope.end_offset


# -- Arrow columns -------------------------------------------------------------------------------

_CODEC_NAMES = list(COMPRESSION_NAMES) + [f"unknown({c})" for c in range(len(COMPRESSION_NAMES), 8)]


def _timestamps(ms: list[int]):
    """Epoch milliseconds -> timestamp[us, UTC]; -1 (no timestamp) and out-of-range -> null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(ms, pa.int64())
    valid = pc.and_(pc.greater_equal(arr, 0), pc.less_equal(arr, MAX_TIMESTAMP_MS))
    arr = pc.if_else(valid, arr, pa.scalar(None, pa.int64()))
    return pc.multiply(arr, 1000).cast(pa.timestamp("us", tz="UTC"))


class RecordColumns:
    """Column lists for the record rows of one slice, flushed as Arrow batches.

    Fields shared by all records of a batch are kept once per *group* (a v2 batch; a single
    legacy message, whose CRC and timestamp type are its own; or an error row) and expanded
    with one vectorised ``take`` at flush time: per-row Python work is then only the few
    record-level lists, which is where an export spends its time.
    """

    def __init__(self, sl: Slice) -> None:
        self.slice = sl
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.bytes = 0
        # record level
        self.group: list[int] = []
        self.offset: list[int | None] = []
        self.timestamp: list[int] = []
        self.key: list[bytes | None] = []
        self.value: list[bytes | None] = []
        self.sequence: list[int | None] = []
        self.header_ends: list[int] = [0]
        self.header_keys: list[str] = []
        self.header_values: list[bytes | None] = []
        # group level: one tuple per group, in _GROUP_TYPES order
        self.groups: list[tuple] = []

    # position, base_offset, timestamp_type, magic, compression, producer_id, producer_epoch,
    # is_transactional, is_control, partition_leader_epoch, crc_valid, error
    _GROUP_TYPES = ("bigint", "bigint", "string", "int", "string", "bigint", "int", "boolean", "boolean", "int",
                    "boolean", "string")

    @staticmethod
    def _group(b: Batch, ts_type: int, crc_valid: bool | None, error: str | None = None) -> tuple:
        return (b.position, b.base_offset, TIMESTAMP_TYPE_NAMES[ts_type], b.magic, _CODEC_NAMES[b.compression],
                b.producer_id, b.producer_epoch, b.is_transactional, b.is_control, b.partition_leader_epoch,
                crc_valid, error)

    def add(self, b: Batch, records: list[Record]) -> None:
        n = len(records)
        if not n:
            return
        offsets, stamps, ts_types, keys, values, headers, sequences, _, _, _, crc_valids = zip(*records)
        if b.magic >= 2:
            self.group += [len(self.groups)] * n
            self.groups.append(self._group(b, ts_types[0], b.crc_valid))
        else:
            first = len(self.groups)
            self.group += range(first, first + n)
            # A legacy wrapper's inner messages carry their own CRCs and timestamp types.
            self.groups += [self._group(b, t, b.crc_valid and c is not False) for t, c in zip(ts_types, crc_valids)]
        self.offset += offsets
        self.timestamp += stamps
        self.key += keys
        self.value += values
        self.sequence += sequences
        ends = self.header_ends
        header_bytes = 0
        if any(headers):
            total = ends[-1]
            hk, hv = self.header_keys, self.header_values
            for h in headers:
                if h:
                    total += len(h)
                    for k, v in h:
                        hk.append(k.decode("utf-8", "replace"))
                        hv.append(v)
                        header_bytes += 0 if v is None else len(v)
                ends.append(total)
        else:
            ends += [ends[-1]] * n
        self.rows += n
        self.bytes += sum(map(len, filter(None, keys))) + sum(map(len, filter(None, values))) + header_bytes + 32 * n

    def add_damage(self, d: Damage) -> None:
        """One error row: batch fields where a batch is known, record fields null."""
        b = d.batch
        self.group.append(len(self.groups))
        if b is None:
            self.groups.append((d.position, None, None, None, None, None, None, None, None, None, None,
                                damage_message(d)))
        else:
            self.groups.append(self._group(b, b.timestamp_type, b.crc_valid, damage_message(d)))
        self.offset.append(d.offset)
        self.timestamp.append(-1)
        self.key.append(None)
        self.value.append(None)
        self.sequence.append(None)
        self.header_ends.append(self.header_ends[-1])
        self.rows += 1
        self.bytes += 256

    def flush(self):
        import pyarrow as pa

        sl, n = self.slice, self.rows
        group_cols = [pa.array(c, arrow_type(t)) for c, t in zip(zip(*self.groups), self._GROUP_TYPES)]
        take = pa.array(self.group, pa.int32())
        (position, base_offset, ts_type, magic, codec, producer_id, producer_epoch, transactional, control, epoch,
         crc_valid, error) = [c.take(take) for c in group_cols]
        header_struct = pa.StructArray.from_arrays(
            [pa.array(self.header_keys, pa.string()), binary_array(self.header_values)],
            fields=[pa.field("key", pa.string()), pa.field("value", pa.binary())])
        headers = pa.ListArray.from_arrays(pa.array(self.header_ends, pa.int32()), header_struct,
                                           type=arrow_type(HEADER_DDL))
        arrays = [
            pa.repeat(pa.scalar(text(sl.topic), pa.string()), n),
            pa.repeat(pa.scalar(sl.partition, pa.int32()), n),
            pa.repeat(pa.scalar(text(sl.segment), pa.string()), n),
            pa.repeat(pa.scalar(text(sl.path), pa.string()), n),
            position, base_offset,
            pa.array(self.offset, pa.int64()),
            _timestamps(self.timestamp),
            ts_type,
            binary_array(self.key),
            binary_array(self.value),
            headers,
            magic, codec, producer_id, producer_epoch,
            pa.array(self.sequence, pa.int32()),
            transactional, control, epoch, crc_valid, error,
        ]
        batch = pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(RECORD_COLUMNS))
        self._reset()
        return batch


def record_batches(sl: Slice, scope: Scope = Scope(), max_rows: int = DEFAULT_MAX_ROWS,
                   max_bytes: int = DEFAULT_MAX_BYTES, limits: Limits = DEFAULT_LIMITS):
    """Arrow record batches (RECORD_COLUMNS) of one slice, each at most ~max_rows / ~max_bytes."""
    cols = RecordColumns(sl)
    at = (sl.start, None)
    try:
        for item in read_slice(sl, scope, True, limits):
            if isinstance(item, Damage):
                if _in_range(scope, item.offset):
                    cols.add_damage(item)
            else:
                b = item[0]
                at = (b.position, b.base_offset)
                for part in size_parts(item[1], max_bytes) if maybe_large(*item) else (item[1],):
                    if cols.rows and part is not item[1]:
                        yield cols.flush()          # a record over max_bytes goes out alone
                    cols.add(b, part)
            if cols.rows >= max_rows or cols.bytes >= max_bytes:
                yield cols.flush()
        if cols.rows:
            yield cols.flush()
    except MemoryError:
        raise out_of_memory(sl.path, *at, "export") from None


def batch_rows(sl: Slice, scope: Scope = Scope(), max_rows: int = DEFAULT_MAX_ROWS):
    """Arrow record batches (BATCH_COLUMNS): one row per batch header, one per damage."""
    import pyarrow as pa

    rows: list[tuple] = []
    head = (text(sl.topic), sl.partition, text(sl.segment), text(sl.path))
    schema = arrow_schema(BATCH_COLUMNS)

    def flush():
        cols = list(zip(*rows))
        return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)

    # Offsets are not filtered per batch here: a batch row stands for the whole batch.
    for item in read_slice(sl, Scope(), records=False):
        if isinstance(item, Damage):
            rows.append(head + (item.position, None, None, item.offset, None, None, None, None, None, None,
                                None, None, None, None, None, None, None, None, item.kind, item.message))
        else:
            b = item[0]
            rows.append(head + (b.position, b.size, b.base_offset, b.last_offset, b.count, b.magic, b.crc,
                                b.crc_valid, _CODEC_NAMES[b.compression], TIMESTAMP_TYPE_NAMES[b.timestamp_type],
                                b.base_timestamp, b.max_timestamp, b.partition_leader_epoch, b.producer_id,
                                b.producer_epoch, b.base_sequence, b.is_transactional, b.is_control, None, None))
        if len(rows) >= max_rows:
            yield flush()
            rows = []
    if rows:
        yield flush()


# -- NDJSON --------------------------------------------------------------------------------------

def json_items(sl: Slice, encoding: str = "base64", scope: Scope = Scope(),
               limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[str, Damage | None]]:
    """``(line, damage)`` pairs, one line per record: ``dump --json``'s record object with topic,
    partition and segment first, or ``{"topic",...,"position","offset","error"}`` for a damaged
    stretch. Damage is None on record lines, and a line holding a large record is an iterator
    of its pieces (``export.write.record_lines``)."""
    from kdump.render.jsonout import dumps
    from kdump.render.payload import PayloadView

    view = PayloadView(encoding)
    prefix = f'{{"topic":{dumps(text(sl.topic))},"partition":{dumps(sl.partition)},"segment":{dumps(text(sl.segment))},'
    for item in read_slice(sl, scope, True, limits):
        if isinstance(item, Damage):
            if _in_range(scope, item.offset):
                yield (f'{prefix}"position":{dumps(item.position)},"offset":{dumps(item.offset)},'
                       f'"error":{dumps(damage_message(item))}}}'), item
            continue
        for line in record_lines(prefix, sl.path, item[0], item[1], view):
            yield line, None


def json_batches(sl: Slice, encoding: str = "base64", scope: Scope = Scope(), max_rows: int = DEFAULT_MAX_ROWS,
                 max_bytes: int = DEFAULT_MAX_BYTES, limits: Limits = DEFAULT_LIMITS):
    """``json_items`` as Arrow batches (JSON_COLUMNS), for the Spark text writer."""
    import pyarrow as pa

    schema = arrow_schema(JSON_COLUMNS)
    lines: list[str] = []
    flags: list[bool] = []
    size = 0

    def flush():
        n = len(lines)
        return pa.RecordBatch.from_arrays([
            pa.repeat(pa.scalar(text(sl.topic), pa.string()), n), pa.repeat(pa.scalar(sl.partition, pa.int32()), n),
            pa.repeat(pa.scalar(text(sl.segment), pa.string()), n), pa.array(lines, pa.string()),
            pa.array(flags, pa.bool_())], schema=schema)

    for line, damage in json_items(sl, encoding, scope, limits):
        line = joined(line)         # the Spark text writer takes whole lines
        lines.append(line)
        flags.append(damage is not None)
        size += len(line)
        if len(lines) >= max_rows or size >= max_bytes:
            yield flush()
            lines, flags, size = [], [], 0
    if lines:
        yield flush()


# -- the local engine ----------------------------------------------------------------------------

class ExportResult(NamedTuple):
    rows: int
    error_rows: int
    slices: int
    seconds: float
    errors: list[str]          # the first few error rows, as "file:position: message"

    @property
    def status(self) -> int:
        return int(ExitStatus.DAMAGE if self.error_rows else ExitStatus.OK)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "error_rows": self.error_rows, "slices": self.slices,
                "seconds": round(self.seconds, 3), "errors": self.errors}


MAX_REPORTED_ERRORS = 20


def parse_partition_by(value: str | None) -> tuple[str, ...]:
    if value is None:
        return ("topic", "partition")
    cols = tuple(c.strip() for c in value.split(",") if c.strip() and c.strip().lower() != "none")
    bad = [c for c in cols if c not in PARTITION_COLUMNS]
    if bad:
        raise UsageError(f"cannot partition by {', '.join(bad)}: choose from {', '.join(PARTITION_COLUMNS)}")
    if len(set(cols)) != len(cols):
        raise UsageError("--partition-by names a column twice")
    return cols


class _Tally:
    """Counts rows and collects the first error rows while batches stream past."""

    def __init__(self) -> None:
        self.rows = 0
        self.error_rows = 0
        self.errors: list[str] = []

    def batches(self, batches: Iterable) -> Iterator:
        import pyarrow.compute as pc

        for batch in batches:
            self.rows += batch.num_rows
            err = batch.column("error")
            if err.null_count != len(err):
                idx = pc.indices_nonzero(pc.is_valid(err)).to_pylist()
                self.error_rows += len(idx)
                for i in idx[:max(0, MAX_REPORTED_ERRORS - len(self.errors))]:
                    self.errors.append(f"{batch.column('file')[i].as_py()}:{batch.column('position')[i].as_py()}: "
                                       f"{err[i].as_py()}")
            yield batch


def json_error_summary(topic, partition, segment, position, message) -> str:
    """How an NDJSON error line is reported (the line has no file path; both engines use this)."""
    where = segment if topic is None else f"{topic}-{partition}/{segment}"
    return f"{where}:{position}: {message}"


def write_parquet(slices: list[Slice], out: str, partition_by: tuple[str, ...], scope: Scope = Scope(),
                  tally: _Tally | None = None, name: str = "part-00000.zstd.parquet",
                  threads: bool = True, limits: Limits = DEFAULT_LIMITS) -> _Tally:
    """Parquet files under ``out`` in hive directories by ``partition_by`` (zstd, ms timestamps)."""
    tally = tally or _Tally()
    os.makedirs(out, exist_ok=True)
    sink = ParquetSink(out, partition_by, name, threads)
    try:
        for sl in slices:
            for batch in tally.batches(record_batches(sl, scope, limits=limits)):
                sink.write(sl, batch)
    finally:
        sink.close()
    return tally


def write_ndjson(slices: list[Slice], out: str, partition_by: tuple[str, ...], encoding: str = "base64",
                 scope: Scope = Scope(), tally: _Tally | None = None, name: str = "part-00000.ndjson",
                 limits: Limits = DEFAULT_LIMITS) -> _Tally:
    """One file called ``name`` per output directory; slices arrive grouped, so one file is open."""
    tally = tally or _Tally()
    os.makedirs(out, exist_ok=True)
    current, fh = None, None
    opened: set[str] = set()
    try:
        for sl in slices:
            directory = hive_dir(out, partition_by, sl)
            if directory != current:
                if fh is not None:
                    fh.close()
                os.makedirs(directory, exist_ok=True)
                # "w" the first time: a retried Spark task rewrites its file instead of appending.
                fh = open(os.path.join(directory, name), "a" if directory in opened else "w", encoding="utf-8")
                opened.add(directory)
                current = directory
            write = fh.write
            for line, damage in json_items(sl, encoding, scope, limits):
                write(line) if type(line) is str else fh.writelines(line)
                write("\n")
                tally.rows += 1
                if damage is not None:
                    tally.error_rows += 1
                    if len(tally.errors) < MAX_REPORTED_ERRORS:
                        tally.errors.append(json_error_summary(text(sl.topic), sl.partition, text(sl.segment), damage.position,
                                                               damage_message(damage)))
    finally:
        if fh is not None:
            fh.close()
    return tally


def export_local(paths: list[str], out: str, fmt: str = "parquet",
                 partition_by: tuple[str, ...] = ("topic", "partition"), encoding: str = "base64",
                 split_bytes: int = DEFAULT_SPLIT_BYTES, overwrite: bool = False, scope: Scope = Scope(),
                 threads: bool = True, limits: Limits = DEFAULT_LIMITS, jobs: int = 1) -> ExportResult:
    """Export on this machine (no Spark): Parquet through pyarrow, or NDJSON.

    ``threads=False`` encodes Parquet in the decoding thread (one core), for comparisons.
    ``limits`` bound decompression as in ``dump``: a payload beyond them is an error row.
    ``jobs``: worker processes, each writing whole output directories (the files are the
    same as from one process).
    """
    from kdump.export.extras import require_pyarrow
    from kdump.export.outdir import check_out, staged

    started = time.monotonic()
    slices = plan(paths, split_bytes, scope)
    check_out(out, overwrite, paths)
    if fmt not in ("parquet", "ndjson"):
        raise UsageError(f"unknown export format {fmt!r}")
    if fmt == "parquet":
        require_pyarrow()
    try:
        from kdump.parallel import ordered_map

        with staged(out, overwrite, paths) as tmp:      # renamed to `out` only when complete
            def write(group: list[Slice]) -> _Tally:
                if fmt == "parquet":
                    return write_parquet(group, tmp, partition_by, scope, threads=threads, limits=limits)
                return write_ndjson(group, tmp, partition_by, encoding, scope, limits=limits)

            tally = _Tally()
            for t in ordered_map(write, _by_output_dir(slices, tmp, partition_by), jobs):
                tally.rows += t.rows
                tally.error_rows += t.error_rows
                tally.errors += t.errors[:MAX_REPORTED_ERRORS - len(tally.errors)]
    except OSError as e:
        raise WriteError(f"cannot write the export: {e.strerror or e}", file=out) from None
    return ExportResult(tally.rows, tally.error_rows, len(slices), time.monotonic() - started, tally.errors)


def _by_output_dir(slices: list[Slice], out: str, partition_by: tuple[str, ...]) -> list[list[Slice]]:
    """The slices cut into runs that each fill whole output directories: a worker's unit. A
    directory fed from two places in the order (no partition column) makes it one run."""
    runs: list[list[Slice]] = []
    seen: set[str] = set()
    current = None
    for sl in slices:
        d = hive_dir(out, partition_by, sl)
        if d == current:
            runs[-1].append(sl)
        elif d in seen:
            return [slices]
        else:
            seen.add(d)
            current = d
            runs.append([sl])
    return runs


def write_group(task: int, slices: list[Slice], out: str, fmt: str, partition_by: tuple[str, ...],
                encoding: str = "base64", scope: Scope = Scope(), threads: bool = False,
                limits: Limits = DEFAULT_LIMITS) -> tuple[int, int, list[str]]:
    """One Spark task of ``export --engine spark``: write these slices under ``out`` with this
    module's writers, into files named by the task number (so a retried task overwrites its
    own files and two tasks never share one). Returns (rows, error rows, first errors).

    A task is given one core (spark.task.cpus=1), so by default Parquet is encoded inline
    rather than in a second thread.
    """
    if fmt == "parquet":
        tally = write_parquet(slices, out, partition_by, scope, name=f"part-{task:05d}.zstd.parquet",
                              threads=threads, limits=limits)
    else:
        tally = write_ndjson(slices, out, partition_by, encoding, scope, name=f"part-{task:05d}.ndjson",
                             limits=limits)
    return tally.rows, tally.error_rows, tally.errors
