"""The one row schema of ``kdump export``: column layouts as Spark DDL and as Arrow types.

Both engines (``kdump.export.local``'s writers and the Spark source) build their rows
against these lists, so they produce the same rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable


def text(name: str | None) -> str | None:
    """A file or topic name as Arrow and JSON can hold it. A name that is not valid UTF-8
    reaches Python with surrogates (\\udcXX); those are written as that escape, in letters,
    instead of failing the export."""
    if name is None or name.isascii():
        return name
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


# -- row layouts ---------------------------------------------------------------------------------
# One list each, in column order: (name, Spark DDL type). The Arrow types follow from
# ``arrow_type`` and equal pyspark's to_arrow_schema(..., timezone="UTC") for the DDL
# (tests/spark/test_source.py checks this), so record batches go to the JVM unconverted.

HEADER_DDL = "array<struct<key:string,value:binary>>"

RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"), ("partition", "int"), ("segment", "string"), ("file", "string"),
    ("position", "bigint"), ("base_offset", "bigint"), ("offset", "bigint"),
    ("timestamp", "timestamp"), ("timestamp_type", "string"),
    ("key", "binary"), ("value", "binary"), ("headers", HEADER_DDL),
    ("magic", "int"), ("compression", "string"),
    ("producer_id", "bigint"), ("producer_epoch", "int"), ("sequence", "int"),
    ("is_transactional", "boolean"), ("is_control", "boolean"),
    ("partition_leader_epoch", "int"), ("crc_valid", "boolean"), ("error", "string"),
)

BATCH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"), ("partition", "int"), ("segment", "string"), ("file", "string"),
    ("position", "bigint"), ("size", "bigint"), ("base_offset", "bigint"), ("last_offset", "bigint"),
    ("count", "int"), ("magic", "int"), ("crc", "bigint"), ("crc_valid", "boolean"),
    ("compression", "string"), ("timestamp_type", "string"),
    ("base_timestamp", "bigint"), ("max_timestamp", "bigint"),
    ("partition_leader_epoch", "int"), ("producer_id", "bigint"), ("producer_epoch", "int"),
    ("base_sequence", "int"), ("is_transactional", "boolean"), ("is_control", "boolean"),
    ("error_kind", "string"), ("error", "string"),
)

# The NDJSON rows, as the Spark text writer needs them: partition columns and one line.
JSON_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"), ("partition", "int"), ("segment", "string"), ("line", "string"), ("is_error", "boolean"),
)

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
    if kind == HEADER_DDL:
        return pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))
    raise ValueError(kind)


@functools.lru_cache(maxsize=None)
def arrow_schema(columns: tuple[tuple[str, str], ...] = RECORD_COLUMNS):
    import pyarrow as pa

    return pa.schema([pa.field(name, arrow_type(kind)) for name, kind in columns])
