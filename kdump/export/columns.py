"""Arrow rows of a slice: RECORD_COLUMNS (one row per record) and BATCH_COLUMNS (one per batch).

The column builders turn a slice's batches into Arrow record batches bounded by rows *and*
bytes; both engines write these. pyarrow is imported lazily: planning and NDJSON need
nothing beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kdump.export.ndjson import maybe_large
from kdump.export.read import Damage, damage_message, in_range, read_slice
from kdump.export.schema import BATCH_COLUMNS, RECORD_COLUMNS, arrow_schema, arrow_type, text
from kdump.export.slices import Scope, Slice
from kdump.export.write import binary_array, size_parts
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.model import COMPRESSION_NAMES, FIELD_TYPES, HEADERS_TYPE, TIMESTAMP_TYPE_NAMES, Batch, Record
from kdump.storage.logdir import LogFile
from kdump.storage.record_reader import out_of_memory

# A segment -> the outcomes of its partition's transactions: an object whose status(batch) is
# committed, aborted, open or None (state/txn_status.py of_partition).
TxnOf = Callable[[LogFile], Any]

DEFAULT_MAX_ROWS = 16384             # Arrow batch bounds: rows ...
DEFAULT_MAX_BYTES = 16 << 20         # ... and key/value/header bytes (binary offsets are int32)
MAX_TIMESTAMP_MS = 253402300799999   # 9999-12-31T23:59:59.999Z: the end of Spark's range


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

    def __init__(self, sl: Slice, txn: TxnOf | None = None) -> None:
        self.slice = sl
        self.txn_of = txn
        self.outcomes: Any = None
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

    # The columns kept once per group, in the order of ``_group``'s tuples.
    _GROUP_FIELDS = ("position", "base_offset", "timestamp_type", "magic", "compression", "producer_id",
                     "producer_epoch", "is_transactional", "txn", "is_control", "partition_leader_epoch", "crc_valid",
                     "error")
    _GROUP_TYPES = tuple(FIELD_TYPES[name] for name in _GROUP_FIELDS)

    def _group(self, b: Batch, ts_type: int, crc_valid: bool | None, error: str | None = None) -> tuple:
        txn = None
        if b.is_transactional and error is None and self.txn_of is not None:
            if self.outcomes is None:           # the partition's markers, read at the first such batch
                self.outcomes = self.txn_of(self.slice.log_file())
            txn = self.outcomes.status(b)
        return (b.position, b.base_offset, TIMESTAMP_TYPE_NAMES[ts_type], b.magic, _CODEC_NAMES[b.compression],
                b.producer_id, b.producer_epoch, b.is_transactional, txn, b.is_control, b.partition_leader_epoch,
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
            self.groups.append((d.position, None, None, None, None, None, None, None, None, None, None, None,
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
        take = pa.array(self.group, pa.int32())
        cols = {name: pa.array(c, arrow_type(t)).take(take)
                for name, c, t in zip(self._GROUP_FIELDS, zip(*self.groups), self._GROUP_TYPES)}
        header_struct = pa.StructArray.from_arrays(
            [pa.array(self.header_keys, pa.string()), binary_array(self.header_values)],
            fields=[pa.field("key", pa.string()), pa.field("value", pa.binary())])
        cols["headers"] = pa.ListArray.from_arrays(pa.array(self.header_ends, pa.int32()), header_struct,
                                                   type=arrow_type(HEADERS_TYPE))
        for name, value in (("topic", text(sl.topic)), ("partition", sl.partition), ("segment", text(sl.segment)),
                            ("file", text(sl.path))):
            cols[name] = pa.repeat(pa.scalar(value, arrow_type(FIELD_TYPES[name])), n)
        cols["offset"] = pa.array(self.offset, pa.int64())
        cols["timestamp"] = _timestamps(self.timestamp)
        cols["key"] = binary_array(self.key)
        cols["value"] = binary_array(self.value)
        cols["sequence"] = pa.array(self.sequence, pa.int32())
        arrays = [cols[name] for name, _ in RECORD_COLUMNS]
        batch = pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(RECORD_COLUMNS))
        self._reset()
        return batch


def record_batches(sl: Slice, scope: Scope = Scope(), max_rows: int = DEFAULT_MAX_ROWS,
                   max_bytes: int = DEFAULT_MAX_BYTES, limits: Limits = DEFAULT_LIMITS, txn: TxnOf | None = None):
    """Arrow record batches (RECORD_COLUMNS) of one slice, each at most ~max_rows / ~max_bytes.
    ``txn``: the segment's partition -> its transactions' outcomes (state/txn_status.py
    of_partition, given from above this floor), for the txn column; None: the column is null."""
    cols = RecordColumns(sl, txn)
    at = (sl.start, None)
    try:
        for item in read_slice(sl, scope, True, limits):
            if isinstance(item, Damage):
                if in_range(scope, item.offset):
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
    head = {"topic": text(sl.topic), "partition": sl.partition, "segment": text(sl.segment), "file": text(sl.path)}
    schema = arrow_schema(BATCH_COLUMNS)

    def row(values: dict) -> tuple:
        return tuple(values.get(name) for name, _ in BATCH_COLUMNS)

    def flush():
        cols = list(zip(*rows))
        return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)

    # Offsets are not filtered per batch here: a batch row stands for the whole batch.
    for item in read_slice(sl, Scope(), records=False):
        if isinstance(item, Damage):
            rows.append(row({**head, "position": item.position, "last_offset": item.offset, "error_kind": item.kind,
                             "error": item.message}))
        else:
            rows.append(row({**head, **item[0].to_dict()}))     # the batch's fields as --json has them
        if len(rows) >= max_rows:
            yield flush()
            rows = []
    if rows:
        yield flush()
