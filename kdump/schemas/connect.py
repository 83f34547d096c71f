"""Kafka Connect's JsonConverter envelope, ``{"schema": {...}, "payload": ...}``: the payload
typed by its schema (Connect's logical types Decimal, Date, Time and Timestamp as a person
reads them, a Decimal's digits exact)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
from typing import Any

from kdump.errors import DecodeError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


def looks_like_envelope(data: bytes | None) -> bool:
    return bool(data) and data.lstrip()[:1] == b"{" and b'"payload"' in data and b'"schema"' in data


def decode(data: bytes) -> tuple[Any, str | None]:
    """(typed payload, the schema's name); DecodeError when it is not an envelope."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise DecodeError(f"not JSON: {e}") from None
    except RecursionError:
        raise DecodeError("JSON nested too deeply") from None
    if not isinstance(doc, dict) or set(doc) != {"schema", "payload"}:
        raise DecodeError("not a Connect JsonConverter envelope (an object of exactly schema and payload)")
    schema = doc["schema"]
    if schema is None:
        return doc["payload"], None
    if not isinstance(schema, dict):
        raise DecodeError("the envelope's schema is not an object")
    try:
        return typed(schema, doc["payload"], []), schema.get("name")
    except RecursionError:
        raise DecodeError("the envelope nests too deeply") from None


def typed(schema: dict, v: Any, path: list[str]) -> Any:
    if v is None:
        if not schema.get("optional", False) and "default" not in schema:
            raise DecodeError(f"{_at(path)}: null, but the schema says it is not optional")
        return schema.get("default")
    t, name = schema.get("type"), schema.get("name")
    try:
        if t == "struct":
            fields = schema.get("fields") or []
            return {f["field"]: typed(f, v.get(f["field"]), path + [f["field"]]) for f in fields}
        if t == "array":
            return [typed(schema["items"], x, path + [f"[{i}]"]) for i, x in enumerate(v)]
        if t == "map":
            if isinstance(v, dict):
                return {k: typed(schema["values"], x, path + [k]) for k, x in v.items()}
            return [[typed(schema["keys"], k, path + ["key"]), typed(schema["values"], x, path + ["value"])]
                    for k, x in v]
        if t == "bytes":
            raw = base64.b64decode(v, validate=True)
            if name == DECIMAL:
                scale = int((schema.get("parameters") or {}).get("scale", 0))
                return format(decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale), "f")
            return v
        if name == TIMESTAMP and t == "int64":
            return (_EPOCH + dt.timedelta(milliseconds=v)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if name == DATE and t == "int32":
            return (_EPOCH + dt.timedelta(days=v)).date().isoformat()
        if name == TIME and t == "int32":
            return (_EPOCH + dt.timedelta(milliseconds=v)).time().isoformat(timespec="milliseconds")
        if t in ("int8", "int16", "int32", "int64") and (type(v) is not int):
            raise DecodeError(f"{_at(path)}: {v!r} is not an {t}")
        return v
    except DecodeError:
        raise
    except (AttributeError, TypeError, KeyError, ValueError, binascii.Error, OverflowError) as e:
        raise DecodeError(f"{_at(path)}: does not match its {t} schema ({e})") from None


def _at(path: list[str]) -> str:
    return "field " + ".".join(path) if path else "the payload"
