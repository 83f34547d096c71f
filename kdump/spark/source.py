"""Python Data Sources: ``kafka-log`` (one row per record) and ``kafka-log-batches``.

    spark.read.format("kafka-log").load("/var/lib/kafka/data")
    spark.read.format("kafka-log").load(["topic-0", "topic-1"]).where("offset >= 1000")

Each input partition is one slice of a segment (``kdump.export.slices.plan``: segments split at
``.index`` positions, ``splitBytes`` apiece) or a run of small files packed up to that
size (``kdump.export.slices.pack``); each task reads its slices with the same
reader and decoder as ``kdump dump`` and yields Arrow record batches whose schema is
exactly pyspark's ``to_arrow_schema`` of ours, so the JVM takes them unconverted.

Options (case-insensitive): ``path``/``paths`` (set by ``load``), ``splitBytes``
(default 32 MiB; 0 = one task per file), ``minPartitions`` (default 2: small files are
packed into at least this many tasks), ``maxRowsPerBatch``, ``maxBytesPerBatch``,
``json`` (kafka-log only: rows become NDJSON lines in this encoding: base64, hex, utf8),
``maxDecompressed`` / ``maxExpansion`` (bytes / ratio: the decompression bounds of ``kdump
dump --max-decompressed / --max-expansion``; a payload beyond them is an error row),
``valueFormat`` (kafka-log only: avro, protobuf, jsonschema, connect or auto, as ``kdump dump
--value-decoder``: adds ``value_decoded``, the value's JSON text, and ``value_decode_error``;
``schemas`` names the schema store, by default the ``_schemas-0`` of the log dir read),
``pushdown`` ("false" gives a reader without ``pushFilters``, for sessions where
``spark.sql.python.filterPushdown.enabled`` is off: Spark rejects a reader that
implements it then).

Pushed filters: ``topic`` (=, IN), ``partition`` (=, IN, <, <=, >, >=) and ``offset``
(=, <, <=, >, >=) are handled here and prune whole slices before any task starts (the
offset bounds come from segment names and index entries; record rows outside the range
are dropped in the task, so the result is exact). ``offset IN (...)`` prunes but is
left to Spark to apply. Everything else is returned to Spark.

Files must be readable at the same paths by the driver (which plans) and the executors: a
shared disk, or an ``s3://``/``s3a://``/``hdfs://`` URL from which each task reads its own ranges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from kdump.export.columns import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, batch_rows, record_batches
from kdump.export.schema import BATCH_COLUMNS, JSON_COLUMNS, RECORD_COLUMNS, ddl
from kdump.export.slice_rows import json_batches
from kdump.export.slices import DEFAULT_SPLIT_BYTES, Scope, Slice, pack, plan
from kdump.format.codecs import DEFAULT_CAP, DEFAULT_RATIO, limits_for
from kdump.state.txn_status import of_partition

RECORDS_FORMAT = "kafka-log"
BATCHES_FORMAT = "kafka-log-batches"


@dataclass
class SlicePartition(InputPartition):
    """One task: a slice of a big segment, or several small files read one after another."""

    slices: list[Slice]


def _paths(options) -> list[str]:
    paths: list[str] = []
    if options.get("paths"):
        value = options["paths"]
        paths += json.loads(value) if value.lstrip().startswith("[") else [value]
    if options.get("path"):
        paths.append(options["path"])
    if not paths:
        raise ValueError("kafka-log: give a PATH: spark.read.format('kafka-log').load(path or [paths])")
    return paths


def _int_option(options, name: str, default: int) -> int:
    value = options.get(name)
    return default if value is None else int(value)


# -- pushdown ------------------------------------------------------------------------------------

def _narrow(scope: Scope, f) -> tuple[Scope, bool]:
    """The scope with filter ``f`` applied, and whether the result is exact for that filter."""
    if not isinstance(f, (EqualTo, In, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
        return scope, False
    column = f.attribute[0] if len(f.attribute) == 1 else None
    value = f.value
    if column == "topic":
        if isinstance(f, EqualTo) and isinstance(value, str):
            return _topics(scope, {value}), True
        if isinstance(f, In) and all(isinstance(v, str) for v in value):
            return _topics(scope, set(value)), True
        return scope, False
    if column == "partition":
        return _bounds(scope, f, "partition_min", "partition_max", partitions=True)
    if column == "offset":
        return _bounds(scope, f, "start_offset", "end_offset", partitions=False)
    return scope, False


def _topics(scope: Scope, values: set) -> Scope:
    topics = frozenset(values) if scope.topics is None else scope.topics & frozenset(values)
    return scope._replace(topics=topics)


def _bounds(scope: Scope, f, low_name: str, high_name: str, partitions: bool) -> tuple[Scope, bool]:
    value = f.value
    if isinstance(f, In):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return scope, False
        if partitions:
            current = scope.partitions
            chosen = frozenset(value) if current is None else current & frozenset(value)
            return scope._replace(partitions=chosen), True
        # Offsets: prune by the range of the list, let Spark apply the list itself.
        low, high = min(value), max(value)
        exact = False
    elif isinstance(value, int) and not isinstance(value, bool):
        low = high = None
        if isinstance(f, EqualTo):
            low = high = value
        elif isinstance(f, GreaterThan):
            low = value + 1
        elif isinstance(f, GreaterThanOrEqual):
            low = value
        elif isinstance(f, LessThan):
            high = value - 1
        elif isinstance(f, LessThanOrEqual):
            high = value
        else:
            return scope, False
        exact = True
    else:
        return scope, False
    current_low, current_high = getattr(scope, low_name), getattr(scope, high_name)
    if low is not None:
        scope = scope._replace(**{low_name: low if current_low is None else max(low, current_low)})
    if high is not None:
        scope = scope._replace(**{high_name: high if current_high is None else min(high, current_high)})
    return scope, exact


# -- readers -------------------------------------------------------------------------------------

class _Reader(DataSourceReader):
    """Plans slices on the driver; reads one slice per task."""

    columns: tuple = RECORD_COLUMNS

    def __init__(self, options, schema) -> None:
        self.paths = _paths(options)
        self.split_bytes = _int_option(options, "splitBytes", DEFAULT_SPLIT_BYTES)
        self.max_rows = _int_option(options, "maxRowsPerBatch", DEFAULT_MAX_ROWS)
        self.max_bytes = _int_option(options, "maxBytesPerBatch", DEFAULT_MAX_BYTES)
        self.min_partitions = _int_option(options, "minPartitions", 2)
        self.limits = limits_for(_int_option(options, "maxDecompressed", DEFAULT_CAP),
                                 _int_option(options, "maxExpansion", DEFAULT_RATIO))
        self.encoding = options.get("json")
        self.scope = Scope()
        # A user-given .schema(...) with fewer columns selects them (no other pruning exists).
        names = [f.name for f in schema.fields] if schema is not None else None
        own = [name for name, _ in self.columns]
        self.select = names if names and names != own else None
        if self.select is not None and not set(self.select) <= set(own):
            unknown = sorted(set(self.select) - set(own))
            raise ValueError(f"{type(self).__name__}: unknown columns {unknown}; the columns are {own}")

    def partitions(self):
        slices = plan(self.paths, self.split_bytes, self.scope)
        return [SlicePartition(group) for group in pack(slices, self.split_bytes, self.min_partitions)]

    def read(self, partition):
        if not isinstance(partition, SlicePartition):
            return          # Spark's stand-in partition when the plan is empty
        for sl in partition.slices:
            for batch in self._batches(sl):
                yield batch.select(self.select) if self.select is not None else batch

    def _batches(self, sl: Slice):
        raise NotImplementedError


class _PushdownMixin:
    handled_columns = ("topic", "partition", "offset")

    def pushFilters(self, filters):  # noqa: N802 - Spark's name
        unhandled = []
        for f in filters:
            if f.attribute and f.attribute[0] in self.handled_columns:
                self.scope, exact = _narrow(self.scope, f)
                if exact:
                    continue
            unhandled.append(f)
        return unhandled


DECODED_COLUMNS = RECORD_COLUMNS + (("value_decoded", "string"), ("value_decode_error", "string"))


def _record_columns(options) -> tuple:
    return JSON_COLUMNS if options.get("json") else DECODED_COLUMNS if options.get("valueFormat") else RECORD_COLUMNS


class RecordReader(_Reader):
    def __init__(self, options, schema) -> None:
        self.columns = _record_columns(options)
        super().__init__(options, schema)
        self.value_format = options.get("valueFormat")
        self.store = None
        self._column = None
        if self.value_format and not self.encoding:
            # Read on the driver; the store (plain data) travels to the tasks with the reader.
            from kdump.schemas.decoder import SCHEMA_DECODERS
            from kdump.schemas.sources import find_schemas_dir, load
            from kdump.schemas.store import SchemaStore

            if self.value_format not in SCHEMA_DECODERS:
                raise ValueError(f"valueFormat {self.value_format!r}: one of {', '.join(SCHEMA_DECODERS)}")
            where = options.get("schemas") or find_schemas_dir(self.paths)
            self.store = load(where) if where else SchemaStore()

    def _batches(self, sl: Slice):
        if self.encoding:
            return json_batches(sl, self.encoding, self.scope, self.max_rows, self.max_bytes, self.limits,
                                txn=of_partition)
        batches = record_batches(sl, self.scope, self.max_rows, self.max_bytes, self.limits, txn=of_partition)
        if self.store is None:
            return batches
        if self._column is None:        # made in the task: parsed schemas stay there
            from kdump.schemas.arrow import ValueColumn
            from kdump.schemas.decoder import SchemaDecoder

            self._column = ValueColumn(SchemaDecoder(self.value_format, self.store), set(),
                                       uses_store=self.value_format != "auto")
        return (self._column.add(b) for b in batches)


class PushdownRecordReader(_PushdownMixin, RecordReader):
    pass


class BatchReader(_Reader):
    columns = BATCH_COLUMNS

    def _batches(self, sl: Slice):
        return batch_rows(sl, self.scope, self.max_rows)


class PushdownBatchReader(_PushdownMixin, BatchReader):
    # Offsets are not pushed: a batch row stands for a range of offsets.
    handled_columns = ("topic", "partition")


def _pushdown(options) -> bool:
    return str(options.get("pushdown", "true")).lower() != "false"


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")``: one row per record (see kdump.export.schema.RECORD_COLUMNS)."""

    @classmethod
    def name(cls) -> str:
        return RECORDS_FORMAT

    def schema(self) -> str:
        return ddl(_record_columns(self.options))

    def reader(self, schema):
        return (PushdownRecordReader if _pushdown(self.options) else RecordReader)(self.options, schema)


class KafkaLogBatchesDataSource(DataSource):
    """``spark.read.format("kafka-log-batches")``: one row per batch header, for verification."""

    @classmethod
    def name(cls) -> str:
        return BATCHES_FORMAT

    def schema(self) -> str:
        return ddl(BATCH_COLUMNS)

    def reader(self, schema):
        return (PushdownBatchReader if _pushdown(self.options) else BatchReader)(self.options, schema)


def register(spark) -> None:
    """Make both formats available in ``spark`` and turn on the pushdown they rely on."""
    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaLogBatchesDataSource)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
