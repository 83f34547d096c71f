"""``export --decode``: the decoded value as a Parquet column, ``value_decoded``.

A topic whose framed values all use one Avro schema gets a typed column: the Avro record as
an Arrow struct (long int64, string, decimal decimal128, timestamp-millis/micros timestamps
in UTC, date date32, uuid and enum strings, arrays lists, maps maps, ``["null", T]`` a
nullable T). Any other topic (several schemas, Protobuf, JSON Schema, a union Arrow cannot
type) gets the value's JSON text, as ``dump --json`` shows it. A value that does not decode
is null there, and ``value_decode_error`` says why.
"""

from __future__ import annotations

from typing import Any

from kdump.errors import DecodeError, KdumpError
from kdump.schemas import frame
from kdump.schemas.avro import PRIMITIVES
from kdump.schemas.decoder import SchemaDecoder
from kdump.schemas.store import AVRO

FIXED_COLUMN_BYTES = 1 << 16      # a fixed is a hash, an id, a decimal's bytes: tens of bytes
_SIMPLE = {"null": "null", "boolean": "bool_", "int": "int32", "long": "int64", "float": "float32",
           "double": "float64", "bytes": "binary", "string": "string"}


def arrow_type(s: Any, named: dict[str, Any], seen: frozenset = frozenset()) -> Any:
    """The Arrow type of an Avro schema node; None when it has none (several-branch unions,
    recursive types)."""
    import pyarrow as pa

    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        return arrow_type(branches[0], named, seen) if len(branches) == 1 else None
    if isinstance(s, str):
        if s in PRIMITIVES:
            return None if s == "null" else getattr(pa, _SIMPLE[s])()
        if s in seen:
            return None
        return arrow_type(named[s], named, seen | {s})
    t, logical = s["type"], s.get("logicalType")
    if logical == "decimal" and t in ("bytes", "fixed"):
        # (Arrow's decimal128 holds 1 to 38 digits: any other is written as JSON text)
        precision = s.get("precision")
        if type(precision) is int and 1 <= precision <= 38:
            return pa.decimal128(precision, int(s.get("scale", 0)))
        return None
    if logical in ("timestamp-millis", "timestamp-micros") and t == "long":
        return pa.timestamp("ms" if logical.endswith("millis") else "us", tz="UTC")
    if logical == "date" and t == "int":
        return pa.date32()
    if logical == "uuid" and t == "string":
        return pa.string()
    if isinstance(t, (list, dict)) or (isinstance(t, str) and t in PRIMITIVES):
        return arrow_type(t, named, seen)
    if t in ("record", "error"):
        fields = []
        inner = seen | {s["name"]}
        for f in s["fields"]:
            ft = arrow_type(f["type"], named, inner)
            if ft is None:
                return None
            fields.append(pa.field(f["name"], ft))
        return pa.struct(fields)
    if t == "enum":
        return pa.string()
    if t == "fixed":
        # A fixed-size column takes its size for every row, null or not: the schema alone
        # must not size the allocation (1e9 bytes took 9.8 GB for 10 rows); larger is text.
        size = int(s["size"])
        return pa.binary(size) if 0 <= size <= FIXED_COLUMN_BYTES else None
    if t == "array":
        it = arrow_type(s["items"], named, seen)
        return None if it is None else pa.list_(it)
    if t == "map":
        vt = arrow_type(s["values"], named, seen)
        return None if vt is None else pa.map_(pa.string(), vt)
    return None


def _arrow_value(v: Any) -> Any:
    """fastavro's value as pyarrow takes it: UUIDs as text, maps as (key, value) pairs."""
    t = type(v)
    if t is dict:
        return {k: _arrow_value(x) for k, x in v.items()}
    if t is list:
        return [_arrow_value(x) for x in v]
    if t.__name__ == "UUID":
        return str(v)
    return v


class ValueColumn:
    """Adds ``value_decoded`` (and ``value_decode_error``) to a topic's Arrow record batches."""

    def __init__(self, decoder: SchemaDecoder, schema_ids: set[int], uses_store: bool = True) -> None:
        self.decoder = decoder
        self.typed = None
        self.uses_store = uses_store         # else a value only starting with a 0 byte is no frame
        store = decoder.store
        if len(schema_ids) == 1:
            s = store.get(next(iter(schema_ids)))
            if s is not None and s.schema_type == AVRO:
                try:
                    p = decoder.parsed(s)
                    self.typed = arrow_type(p.schema, p.named), s.id, p
                except DecodeError:
                    self.typed = None
                if self.typed is not None and self.typed[0] is None:
                    self.typed = None

    def add(self, batch) -> Any:
        import pyarrow as pa

        from kdump.schemas import avro

        values, errors = [], []
        for data in batch.column("value").to_pylist():
            v = err = None
            if data is not None and (frame.is_framed(data) or self.decoder.kind != "auto"):
                try:
                    if self.typed is not None and frame.schema_id(data) == self.typed[1]:
                        v = _arrow_value(avro.raw(self.typed[2], data, frame.HEADER_SIZE))
                    else:
                        v = self.decoder.decode(data, True)[0]
                        if not getattr(v, "is_json_text", False):
                            from kdump.schemas.avro_text import compact_json

                            v = compact_json(v)
                        if self.typed is not None:
                            raise DecodeError(f"schema {frame.schema_id(data)}, not the topic's one schema "
                                              f"{self.typed[1]}")
                except KdumpError as e:
                    v, err = None, (e.message if self.uses_store or not getattr(e, "show_raw", False) else None)
            values.append(v)
            errors.append(err)
        col = pa.array(values, self.typed[0] if self.typed is not None else pa.string())
        return pa.RecordBatch.from_arrays([*batch.columns, col, pa.array(errors, pa.string())],
                                          names=[*batch.schema.names, "value_decoded", "value_decode_error"])


class TopicColumns:
    """``slice -> ValueColumn``, one per topic, typed by the schema ids all of the topic's
    partitions in the slice's log dir use (a first pass over frame headers)."""

    def __init__(self, decoder: SchemaDecoder) -> None:
        self.decoder = decoder
        self.columns: dict[tuple[str, str | None], ValueColumn] = {}

    def __call__(self, sl) -> ValueColumn:
        import os

        from kdump.schemas.usage import partition_usage
        from kdump.storage.levels import expand
        from kdump.storage.logdir import parse_partition_dir

        log_dir = os.path.dirname(os.path.dirname(sl.path))
        key = (log_dir, sl.topic)
        col = self.columns.get(key)
        if col is None:
            ids: set[int] = set()
            internal = not sl.topic or sl.topic.startswith("__") or sl.topic == "_schemas"
            for name in sorted(os.listdir(log_dir)) if not internal else ():
                parsed = parse_partition_dir(name)
                if parsed is not None and parsed[0] == sl.topic and parsed[2] is None:
                    files = expand(os.path.join(log_dir, name))
                    ids |= {u["id"] for u in partition_usage(files, self.decoder.store) if u["side"] == "value"}
            store = self.decoder.store
            uses = not internal and (any(store.get(i) for i in ids) or store.had_subject(f"{sl.topic}-value"))
            col = self.columns[key] = ValueColumn(self.decoder, ids, uses)
        return col
