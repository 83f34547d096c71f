"""NDJSON rows of a slice: ``dump --json``'s record objects with topic, partition and segment first.

The Spark text writer takes them as Arrow batches of JSON_COLUMNS (``json_batches``).
"""

from __future__ import annotations

from collections.abc import Iterator

from kdump.decoders.views import PayloadView
from kdump.export.columns import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, TxnOf
from kdump.export.ndjson import dumps
from kdump.export.read import Damage, damage_message, in_range, read_slice
from kdump.export.schema import JSON_COLUMNS, arrow_schema, text
from kdump.export.slices import Scope, Slice
from kdump.export.write import joined, record_lines
from kdump.format.codecs import DEFAULT_LIMITS, Limits

# The txn member of a record line, by outcome (TxnOf's status: committed, aborted, open or None).
_TXN = {None: '"txn":null,', **{o: f'"txn":"{o}",' for o in ("committed", "aborted", "open")}}


def json_items(sl: Slice, encoding: str = "base64", scope: Scope = Scope(),
               limits: Limits = DEFAULT_LIMITS, txn: TxnOf | None = None) -> Iterator[tuple[str, Damage | None]]:
    """One ``(line, damage)`` pair per record: ``dump --json``'s record object (written by
    ``kdump.export.ndjson``, the dump's own writer) with topic, partition, segment and txn
    first (the Parquet column's value: ``txn`` gives the partition's outcomes, from above this
    floor; without it txn is null). A damaged stretch gives ``{"topic",...,"position","offset",
    "error"}`` with its Damage; damage is None on record lines, and a line holding a large
    record is an iterator of its pieces (``kdump.export.write.record_lines``)."""
    view = PayloadView(encoding)
    prefix = f'{{"topic":{dumps(text(sl.topic))},"partition":{dumps(sl.partition)},"segment":{dumps(text(sl.segment))},'
    outcomes = None
    for item in read_slice(sl, scope, True, limits):
        if isinstance(item, Damage):
            if in_range(scope, item.offset):
                yield (f'{prefix}"position":{dumps(item.position)},"offset":{dumps(item.offset)},'
                       f'"error":{dumps(damage_message(item))}}}'), item
            continue
        b = item[0]
        status = None
        if b.is_transactional and txn is not None:
            if outcomes is None:        # the partition's markers, read at the first such batch
                outcomes = txn(sl.log_file())
            status = outcomes.status(b)
        for line in record_lines(prefix + _TXN[status], sl.path, b, item[1], view):
            yield line, None


def json_batches(sl: Slice, encoding: str = "base64", scope: Scope = Scope(), max_rows: int = DEFAULT_MAX_ROWS,
                 max_bytes: int = DEFAULT_MAX_BYTES, limits: Limits = DEFAULT_LIMITS, txn: TxnOf | None = None):
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

    for line, damage in json_items(sl, encoding, scope, limits, txn):
        line = joined(line)         # the Spark text writer takes whole lines
        lines.append(line)
        flags.append(damage is not None)
        size += len(line)
        if len(lines) >= max_rows or size >= max_bytes:
            yield flush()
            lines, flags, size = [], [], 0
    if lines:
        yield flush()
