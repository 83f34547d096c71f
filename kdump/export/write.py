"""Writing export rows in memory bounded by the largest value.

A 4 MB lz4 segment may hold one 1000 MiB value within the decompression limits. Once it is
decoded, the rows and writers here hold it about once more than the output format itself
needs, not several times:

- a Kafka batch's records are cut into Arrow batches by bytes (``size_parts``), so a record
  over the bound goes out alone, and a lone large key or value is wrapped, not copied
  (``binary_array``);
- Parquet keeps no min/max statistics of the payload columns (each would be two more whole
  copies of the largest value, and says nothing useful about a row group) and writes a batch
  holding a large record before the next one is decoded;
- an NDJSON record over ``STREAM_CHUNK`` bytes of payload is written in pieces
  (``record_lines``), with ``dump --json``'s own writer.

Running out of memory on the way is a located error (``OutOfMemoryError``, exit 3).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

from kdump.export.ndjson import STREAM_CHUNK, literal_for, maybe_large, record_json, record_pieces
from kdump.export.schema import RECORD_COLUMNS, arrow_schema, text
from kdump.model import Batch, Record
from kdump.storage.record_reader import out_of_memory

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"    # Spark's directory name for a null partition value
PAYLOAD_COLUMNS = ("key", "value", "headers")
PARQUET_OPTIONS = {"compression": "zstd", "coerce_timestamps": "ms", "allow_truncated_timestamps": False}
ROW_GROUP_ROWS = 1 << 20
ROW_GROUP_BYTES = 128 << 20
LARGE_BATCH = 16 << 20       # an Arrow batch over this holds a large record: written before the next


def payload_size(r: Record) -> int:
    """Bytes of a record's key, value and header values."""
    key, value, headers = r[3], r[4], r[5]
    n = (0 if key is None else len(key)) + (0 if value is None else len(value))
    if headers:
        n += sum(len(v) for _, v in headers if v is not None)
    return n


def size_parts(records: list[Record], max_bytes: int) -> Iterator[list[Record]]:
    """``records`` in runs of at most ``max_bytes`` of payload; a larger record is a run alone."""
    part: list[Record] = []
    size = 0
    for r in records:
        n = payload_size(r)
        if part and size + n > max_bytes:
            yield part
            part, size = [], 0
        part.append(r)
        size += n
    if part:
        yield part


def binary_array(values: list):
    """A binary Arrow array of ``values``; a single large one (a record's over the Arrow batch
    bound is alone in its batch) is wrapped without a copy."""
    import pyarrow as pa

    if len(values) == 1 and values[0] is not None and len(values[0]) > STREAM_CHUNK:
        v = values[0]
        return pa.Array.from_buffers(pa.binary(), 1, [None, pa.py_buffer(struct.pack("<ii", 0, len(v))),
                                                      pa.py_buffer(v)])
    return pa.array(values, pa.binary())


# -- NDJSON ----------------------------------------------------------------------------------------

def record_lines(prefix: str, path: str, b: Batch, records: list[Record], view) -> Iterator[str | Iterator[str]]:
    """The NDJSON lines of a batch's records: ``prefix`` (the line's first members, ending in a
    comma), then ``dump --json``'s record object. A record with over STREAM_CHUNK bytes of
    payload comes as an iterator of pieces that joined are its line."""
    lit = literal_for(view)
    large = maybe_large(b, records)
    try:
        for r in records:
            if large and payload_size(r) > STREAM_CHUNK:
                yield _line_pieces(prefix, path, b, r, view)
            else:
                yield prefix + record_json(r, lit, view)[1:]
    except MemoryError:
        raise out_of_memory(path, b.position, b.base_offset, "export") from None


def _line_pieces(prefix: str, path: str, b: Batch, r: Record, view) -> Iterator[str]:
    try:
        pieces = record_pieces(r, view)
        yield prefix + next(pieces)[1:]
        yield from pieces
    except MemoryError:
        raise out_of_memory(path, b.position, b.base_offset, "export") from None


def joined(line: str | Iterator[str]) -> str:
    return line if type(line) is str else "".join(line)


# -- Parquet ---------------------------------------------------------------------------------------

def hive_dir(out: str, partition_by: tuple[str, ...], sl) -> str:
    parts = []
    for c in partition_by:
        v = getattr(sl, c)
        parts.append(f"{c}={HIVE_NULL if v is None else text(v) if isinstance(v, str) else v}")
    return os.path.join(out, *parts)


class ParquetSink:
    """Parquet files, one per output directory, fed with record batches of single slices.

    A slice lies in one topic/partition/segment, so each batch belongs to one hive
    directory whole: no per-row partitioning is needed, only a writer per directory.
    Batches are gathered into row groups (up to ROW_GROUP_ROWS / ROW_GROUP_BYTES) and, with
    ``threads``, encoded and compressed by a background thread (pyarrow releases the GIL)
    while the caller decodes the next ones; a batch over LARGE_BATCH is written before
    ``write`` returns, so only one large record is ever in memory.
    """

    def __init__(self, out: str, partition_by: tuple[str, ...], name: str = "part-00000.zstd.parquet",
                 threads: bool = True) -> None:
        import pyarrow as pa

        schema = arrow_schema(RECORD_COLUMNS)
        self.out, self.partition_by, self.name = out, partition_by, name
        self.keep = [i for i, f in enumerate(schema) if f.name not in partition_by]
        self.file_schema = pa.schema([schema.field(i) for i in self.keep])
        self.statistics = [f.name for f in self.file_schema if f.name not in PAYLOAD_COLUMNS]
        self.writers: dict[str, Any] = {}
        self.buffer: list = []
        self.buffered_rows = self.buffered_bytes = 0
        self.directory: str | None = None
        self.error: BaseException | None = None
        self.queue = None
        if threads:
            import queue
            import threading

            self.queue = queue.Queue(maxsize=2)       # bounded: decoding runs at most 2 row groups ahead
            self.thread = threading.Thread(target=self._drain, name="kdump-parquet", daemon=True)
            self.thread.start()

    def write(self, sl, batch) -> None:
        directory = hive_dir(self.out, self.partition_by, sl)
        if directory != self.directory:
            self._flush()
            self.directory = directory
        # Columns past RECORD_COLUMNS (export --decode's value_decoded) are kept as they come.
        self.buffer.append(batch.select(self.keep + list(range(len(RECORD_COLUMNS), batch.num_columns))))
        self.buffered_rows += batch.num_rows
        self.buffered_bytes += batch.nbytes
        if batch.nbytes > LARGE_BATCH:
            self._flush()
            if self.queue is not None:
                self.queue.join()
            if self.error is not None:
                raise self.error
        elif self.buffered_rows >= ROW_GROUP_ROWS or self.buffered_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def close(self) -> None:
        try:
            self._flush()
        finally:
            if self.queue is not None:
                self.queue.put(None)
                self.thread.join()
            for w in self.writers.values():
                w.close()
        if self.error is not None:
            raise self.error

    def _flush(self) -> None:
        if not self.buffer:
            return
        import pyarrow as pa

        schema = self.file_schema if self.buffer[0].num_columns == len(self.file_schema) else self.buffer[0].schema
        table = pa.Table.from_batches(self.buffer, schema=schema)
        self.buffer, self.buffered_rows, self.buffered_bytes = [], 0, 0
        if self.queue is None:
            self._write(self.directory, table)
            return
        if self.error is not None:
            raise self.error
        self.queue.put((self.directory, table))

    def _drain(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is None:
                    return
                if self.error is None:
                    try:
                        self._write(*item)
                    except BaseException as e:  # noqa: BLE001 - handed over to the caller's thread
                        self.error = e
            finally:
                item = None         # the table is not kept alive while waiting for the next one
                self.queue.task_done()

    def _write(self, directory: str, table) -> None:
        import pyarrow.parquet as pq

        writer = self.writers.get(directory)
        if writer is None:
            os.makedirs(directory, exist_ok=True)
            writer = self.writers[directory] = pq.ParquetWriter(
                os.path.join(directory, self.name), table.schema, write_statistics=self.statistics,
                **PARQUET_OPTIONS)
        try:
            writer.write_table(table, row_group_size=table.num_rows)
        except MemoryError:
            last = table.num_rows - 1        # a large batch is the last one of its row group
            raise out_of_memory(table.column("file")[last].as_py(), table.column("position")[last].as_py(),
                                table.column("base_offset")[last].as_py(), "write") from None
