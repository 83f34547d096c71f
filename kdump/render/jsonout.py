"""NDJSON: one object a line, the JSON model of design.md.

The batch and record objects are written with preformatted strings rather than
``json.dumps`` of a dict: ``dump --json`` is the hot path of pipelines and the benchmark.
``tests/test_render_json.py`` proves the fast path equals ``json.dumps(obj.to_dict())``.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import TIMESTAMP_TYPE_NAMES, Batch, Record, compression_name
from .payload import PayloadView

_B = ("false", "true")


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def batch_prefix(file_json: str, b: Batch) -> str:
    """The batch object without its closing brace (records may follow)."""
    horizon = b.delete_horizon_ms
    magic2 = b.magic >= 2
    attrs = b.attributes
    return (f'{{"file":{file_json},"position":{b.position},'
            f'"base_offset":{"null" if b.base_offset is None else b.base_offset},'
            f'"last_offset":{b.last_offset},"count":{"null" if b.count is None else b.count},'
            f'"size":{b.size},"magic":{b.magic},"crc":{b.crc},"crc_valid":{_B[b.crc_valid]},'
            f'"compression":"{compression_name(attrs & 7)}",'
            f'"timestamp_type":"{TIMESTAMP_TYPE_NAMES[b.timestamp_type]}",'
            f'"base_timestamp":{b.base_timestamp},"max_timestamp":{b.max_timestamp},'
            f'"partition_leader_epoch":{b.partition_leader_epoch},"producer_id":{b.producer_id},'
            f'"producer_epoch":{b.producer_epoch},"base_sequence":{b.base_sequence},'
            f'"is_transactional":{_B[magic2 and bool(attrs & 0x10)]},'
            f'"is_control":{_B[magic2 and bool(attrs & 0x20)]},'
            f'"delete_horizon_ms":{"null" if horizon is None else horizon}')


def records_json(records: list[Record], view: PayloadView) -> str:
    """The ``"records":[...]`` member."""
    enc = view.encode_json
    parts = []
    append = parts.append
    plain = view.plain
    for r in records:
        key, value = r.key, r.value
        headers = r.headers
        if headers:
            hjson = "[" + ",".join(
                f'{{"key":{dumps(k.decode("utf-8", "replace"))},"value":{enc(v)}}}' for k, v in headers) + "]"
        else:
            hjson = "[]"
        s = (f'{{"offset":{r.offset},"timestamp":{r.timestamp},'
             f'"key_size":{-1 if key is None else len(key)},"value_size":{-1 if value is None else len(value)},'
             f'"sequence":{r.sequence},"key":{enc(key)},"value":{enc(value)},"headers":{hjson}')
        if r.magic < 2:
            s += f',"crc":{r.crc},"crc_valid":{_B[bool(r.crc_valid)]}'
        if r.control is not None:
            s += ',"control":' + dumps(r.control.to_dict())
        if not plain:
            extras = view.record_extras(r)
            if extras:
                s += "," + dumps(extras)[1:-1]
        append(s + "}")
    return '"records":[' + ",".join(parts) + "]"


def batch_line(file_json: str, b: Batch, records: list[Record] | None, view: PayloadView,
               error: str | None = None) -> str:
    s = batch_prefix(file_json, b)
    if records is not None:
        s += "," + records_json(records, view)
    if error is not None:
        s += ',"records_error":' + dumps(error)
    return s + "}"
