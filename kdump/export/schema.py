"""The columns of ``kdump export``: layouts of the one row schema (``kdump.model``) as Spark
DDL and as Arrow types.

Both engines (``kdump.export.local``'s writers and the Spark source) build their rows
against these lists, so they produce the same rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from kdump.model import FIELD_TYPES, HEADERS_TYPE


def text(name: str | None) -> str | None:
    """A file or topic name as Arrow and JSON can hold it. A name that is not valid UTF-8
    reaches Python with surrogates (\\udcXX); those are written as that escape, in letters,
    instead of failing the export."""
    if name is None or name.isascii():
        return name
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


# -- row layouts ---------------------------------------------------------------------------------
# One list each, in column order: (name, Spark DDL type), the types those of the one row
# schema (``kdump.model.FIELD_TYPES``). The Arrow types follow from ``arrow_type`` and equal
# pyspark's to_arrow_schema(..., timezone="UTC") for the DDL (tests/spark/test_source.py
# checks this), so record batches go to the JVM unconverted.


def columns(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, FIELD_TYPES[name]) for name in names)


RECORD_COLUMNS = columns(
    "topic", "partition", "segment", "file", "position", "base_offset", "offset", "timestamp", "timestamp_type",
    "key", "value", "headers", "magic", "compression", "producer_id", "producer_epoch", "sequence",
    "is_transactional", "txn", "is_control", "partition_leader_epoch", "crc_valid", "error")

BATCH_COLUMNS = columns(
    "topic", "partition", "segment", "file", "position", "size", "base_offset", "last_offset", "count", "magic",
    "crc", "crc_valid", "compression", "timestamp_type", "base_timestamp", "max_timestamp",
    "partition_leader_epoch", "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control",
    "error_kind", "error")

# The NDJSON rows, as the Spark text writer needs them: partition columns and one line.
JSON_COLUMNS = columns("topic", "partition", "segment", "line", "is_error")

PARTITION_COLUMNS = ("topic", "partition", "segment")


def ddl(columns: Iterable[tuple[str, str]]) -> str:
    """A Spark DDL schema string (names quoted: ``partition`` is a SQL keyword)."""
    return ", ".join(f"`{name}` {kind}" for name, kind in columns)


@functools.lru_cache(maxsize=None)
def arrow_type(kind: str):
    import pyarrow as pa

    simple = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "binary": pa.binary(),
              "boolean": pa.bool_(), "timestamp": pa.timestamp("us", tz="UTC")}
    if kind in simple:
        return simple[kind]
    if kind == HEADERS_TYPE:
        return pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))
    raise ValueError(kind)


@functools.lru_cache(maxsize=None)
def arrow_schema(columns: tuple[tuple[str, str], ...] = RECORD_COLUMNS):
    import pyarrow as pa

    return pa.schema([pa.field(name, arrow_type(kind)) for name, kind in columns])
