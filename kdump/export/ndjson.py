"""NDJSON rows: the batch and record objects of ``dump --json`` (the JSON model in the README),
which ``kdump export --format ndjson`` writes too.

They are written with preformatted strings rather than ``json.dumps`` of a dict:
``dump --json`` is the hot path of pipelines and the benchmark. ``py_batch_line`` is the
reference the C writer (``kdump.render.jsonout``) is tested against.
"""

from __future__ import annotations

import json
from binascii import b2a_base64
from codecs import getincrementaldecoder
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any

from kdump.decoders.views import PayloadView
from kdump.format.records import LargeRecords
from kdump.model import (
    B_ATTRIBUTES,
    B_BASE_OFFSET,
    B_BASE_SEQUENCE,
    B_BASE_TIMESTAMP,
    B_COUNT,
    B_CRC,
    B_CRC_VALID,
    B_LAST_OFFSET,
    B_MAGIC,
    B_MAX_TIMESTAMP,
    B_PARTITION_LEADER_EPOCH,
    B_POSITION,
    B_PRODUCER_EPOCH,
    B_PRODUCER_ID,
    B_SIZE,
    BATCH_FIELDS,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CREATE_TIME,
    DELETE_HORIZON_FLAG,
    HEADER_FIELDS,
    LEGACY_RECORD_FIELDS,
    LOG_APPEND_TIME,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_MASK,
    TIMESTAMP_TYPE_NAMES,
    TRANSACTIONAL_FLAG,
    Batch,
    Record,
    compression_name,
)

_B = ("false", "true")


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _members(names: tuple[str, ...]) -> str:
    """A %-template of JSON object members, one per schema field: ``"a":%s,"b":%s``."""
    return ",".join(f'"{name}":%s' for name in names)


# The objects' text, from the row schema's layouts.
_BATCH = '{"object":"batch","file":%s,' + _members(BATCH_FIELDS)     # (jsonout.c's LINE_HEAD)
_LEGACY = "," + _members(LEGACY_RECORD_FIELDS)
_HEADER = "{" + _members(HEADER_FIELDS) + "}"

_FRAGMENTS: dict[tuple[int, int], tuple[str, str, str, str]] = {}


def _fragments(magic: int, attributes: int) -> tuple[str, str, str, str]:
    """The batch values fixed by its magic and attributes, as JSON literals, built once each:
    compression, timestamp_type, is_transactional, is_control."""
    key = (magic, attributes)
    frag = _FRAGMENTS.get(key)
    if frag is None:
        ts_type = NO_TIMESTAMP_TYPE if magic == 0 else (
            LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME)
        v2 = magic >= 2
        frag = _FRAGMENTS[key] = (f'"{compression_name(attributes & COMPRESSION_MASK)}"',
                                  f'"{TIMESTAMP_TYPE_NAMES[ts_type]}"',
                                  _B[v2 and bool(attributes & TRANSACTIONAL_FLAG)],
                                  _B[v2 and bool(attributes & CONTROL_FLAG)])
    return frag


def batch_prefix(file_json: str, b: Batch) -> str:
    """The batch object without its closing brace (records may follow)."""
    magic, attributes, base_offset, count = b[B_MAGIC], b[B_ATTRIBUTES], b[B_BASE_OFFSET], b[B_COUNT]
    base_ts = b[B_BASE_TIMESTAMP]
    compression, ts_type, transactional, control = _fragments(magic, attributes)
    horizon = base_ts if magic >= 2 and attributes & DELETE_HORIZON_FLAG else "null"
    return _BATCH % (file_json, b[B_POSITION], "null" if base_offset is None else base_offset, b[B_LAST_OFFSET],
                     "null" if count is None else count, b[B_SIZE], magic, b[B_CRC], _B[b[B_CRC_VALID]], compression,
                     ts_type, base_ts, b[B_MAX_TIMESTAMP], b[B_PARTITION_LEADER_EPOCH], b[B_PRODUCER_ID],
                     b[B_PRODUCER_EPOCH], b[B_BASE_SEQUENCE], transactional, control, horizon)


def _literal_fn(view: PayloadView):
    """bytes|None -> JSON literal, specialised per encoding (called for every key and value)."""
    if view.encoding == "base64":
        def lit(d):
            return "null" if d is None else '"' + b2a_base64(d, newline=False).decode("ascii") + '"'
    elif view.encoding == "hex":
        def lit(d):
            return "null" if d is None else '"' + d.hex() + '"'
    else:
        def lit(d):
            return "null" if d is None else encode_basestring_ascii(d.decode("utf-8", "replace"))
    return lit


_LITERALS: dict[str, Any] = {}


def literal_for(view: PayloadView):
    """bytes|None -> JSON literal under the encoding of ``view`` (made once per encoding)."""
    lit = _LITERALS.get(view.encoding)
    if lit is None:
        lit = _LITERALS[view.encoding] = _literal_fn(view)
    return lit


def record_json(r: Record, lit, view: PayloadView) -> str:
    """One record object (``lit``: bytes|None -> JSON literal)."""
    offset, timestamp, _, key, value, headers, sequence, control, magic, crc, crc_valid = r
    if headers:
        hjson = "[" + ",".join(
            _HEADER % (encode_basestring_ascii(k.decode("utf-8", "replace")), lit(v)) for k, v in headers) + "]"
    else:
        hjson = "[]"
    # An f-string, the fastest text here (the record object is the hottest text of a dump the
    # C writer leaves to Python); its members are RECORD_FIELDS in order (test_row_schema).
    s = (f'{{"offset":{offset},"timestamp":{timestamp},"key_size":{-1 if key is None else len(key)},'
         f'"value_size":{-1 if value is None else len(value)},"sequence":{sequence},"key":{lit(key)},'
         f'"value":{lit(value)},"headers":{hjson}')
    if magic < 2:
        s += _LEGACY % (crc, _B[bool(crc_valid)])
    if control is not None:
        s += ',"control":' + dumps(control.to_dict())
    if not view.plain:
        s += view.extras_json(r)
    return s + "}"


def records_json(records: list[Record], view: PayloadView) -> str:
    """The ``"records":[...]`` member."""
    lit = literal_for(view)
    return '"records":[' + ",".join([record_json(r, lit, view) for r in records]) + "]"


# -- batches too large for one string --------------------------------------------------------------

# A batch whose keys, values and header values hold more than STREAM_ABOVE bytes is written
# in pieces (``batch_pieces``): a 1000 MiB value decompressed from a 4 MB segment is encoded
# STREAM_CHUNK bytes at a time instead of as whole strings several times its size.
STREAM_ABOVE = 1 << 20
STREAM_CHUNK = 1 << 20
_KEY, _VALUE, _HEADERS = itemgetter(3), itemgetter(4), itemgetter(5)


def maybe_large(b: Batch, records: list[Record]) -> bool:
    """May these records hold more than STREAM_ABOVE bytes? Decided from the batch without
    measuring its records (every batch asks): its size when uncompressed, else the decoder's
    LargeRecords mark (a decompressed records section or inner message set past LARGE_PAYLOAD)."""
    compressed = b[B_ATTRIBUTES] & COMPRESSION_MASK
    if not compressed:
        return b[B_SIZE] > STREAM_ABOVE
    return type(records) is LargeRecords


def payload_bytes(records: list[Record]) -> int:
    """Bytes of the keys, values and header values of ``records`` (C-level iteration: cheap
    enough for every batch)."""
    n = sum(map(len, filter(None, map(_VALUE, records)))) + sum(map(len, filter(None, map(_KEY, records))))
    if any(map(_HEADERS, records)):
        n += sum(len(v) for r in records for _, v in r[5] if v is not None)
    return n


def literal_pieces(data, encoding: str) -> Iterator[str]:
    """The JSON literal of ``data`` under ``encoding``, STREAM_CHUNK bytes at a time; joined,
    the same text as the literal of the whole."""
    if data is None:
        yield "null"
        return
    view = memoryview(data)
    yield '"'
    if encoding in ("base64", "hex"):
        step = STREAM_CHUNK - STREAM_CHUNK % 3          # base64 of whole 3-byte groups joins exactly
        for i in range(0, len(view), step):
            piece = view[i:i + step]
            yield b2a_base64(piece, newline=False).decode("ascii") if encoding == "base64" else piece.hex()
    else:
        decoder = getincrementaldecoder("utf-8")("replace")
        for i in range(0, len(view), STREAM_CHUNK):
            yield encode_basestring_ascii(decoder.decode(view[i:i + STREAM_CHUNK]))[1:-1]
        yield encode_basestring_ascii(decoder.decode(b"", True))[1:-1]
    yield '"'


def record_pieces(r: Record, view: PayloadView) -> Iterator[str]:
    """``record_json`` in pieces, keys, values and header values over STREAM_CHUNK in chunks."""
    lit = literal_for(view)
    big: list = []

    def marked(d):
        # A large datum becomes a NUL-delimited mark, split out below: JSON text never holds
        # a raw NUL (every encoder escapes it), so the mark cannot clash with the record's text.
        if d is not None and len(d) > STREAM_CHUNK:
            big.append(d)
            return f"\x00{len(big) - 1}\x00"
        return lit(d)

    s = record_json(r, marked, view)
    if not big:
        yield s
        return
    for j, part in enumerate(s.split("\x00")):
        if j % 2:
            yield from literal_pieces(big[int(part)], view.encoding)
        else:
            yield part


def batch_pieces(file_json: str, b: Batch, records: list[Record] | None, view: PayloadView,
                 error: str | None = None) -> Iterator[str]:
    """``py_batch_line`` in pieces, large keys, values and header values in chunks."""
    yield batch_prefix(file_json, b)
    if records is not None:
        yield ',"records":['
        for i, r in enumerate(records):
            if i:
                yield ","
            yield from record_pieces(r, view)
        yield "]"
    if error is not None:
        yield ',"records_error":' + dumps(error)
    yield "}"


def py_batch_line(file_json: str, b: Batch, records: list[Record] | None, view: PayloadView,
                  error: str | None = None) -> str:
    """One batch line in Python only: the reference the C writer is tested against."""
    s = batch_prefix(file_json, b)
    if records is not None:
        s += "," + records_json(records, view)
    if error is not None:
        s += ',"records_error":' + dumps(error)
    return s + "}"
