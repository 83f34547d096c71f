"""NDJSON: one object a line, the JSON model of design.md.

The batch and record objects are written with preformatted strings rather than
``json.dumps`` of a dict: ``dump --json`` is the hot path of pipelines and the benchmark.
``tests/test_render_json.py`` proves the fast path equals ``json.dumps(obj.to_dict())``.
"""

from __future__ import annotations

import json
from binascii import b2a_base64
from codecs import getincrementaldecoder
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any

from kdump.format import accel
from kdump.format.records import LargeRecords
from kdump.model import (COMPRESSION_MASK, CONTROL_FLAG, CREATE_TIME, DELETE_HORIZON_FLAG, LOG_APPEND_TIME,
                         NO_TIMESTAMP_TYPE, TIMESTAMP_TYPE_MASK, TIMESTAMP_TYPE_NAMES, TRANSACTIONAL_FLAG, Batch,
                         Record, compression_name)
from kdump.render.payload import PayloadView

# The C writer of whole lines for a plain view (kdump/_speedups.c), or None; it answers
# None for what it does not write (legacy or control records, ...), and the Python code
# below, the reference, writes those.
c_batch_line = getattr(accel.speedups, "json_batch_line", None)
C_ENCODINGS = {"base64": 0, "hex": 1, "utf8": 2}

_B = ("false", "true")


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


_FRAGMENTS: dict[tuple[int, int], tuple[str, str]] = {}


def _fragments(magic: int, attributes: int) -> tuple[str, str]:
    """The parts of a batch object fixed by its magic and attributes, built once each."""
    key = (magic, attributes)
    frag = _FRAGMENTS.get(key)
    if frag is None:
        ts_type = (NO_TIMESTAMP_TYPE if magic == 0 else
                   LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME)
        v2 = magic >= 2
        middle = (f',"compression":"{compression_name(attributes & COMPRESSION_MASK)}",'
                  f'"timestamp_type":"{TIMESTAMP_TYPE_NAMES[ts_type]}"')
        tail = (f',"is_transactional":{_B[v2 and bool(attributes & TRANSACTIONAL_FLAG)]},'
                f'"is_control":{_B[v2 and bool(attributes & CONTROL_FLAG)]},"delete_horizon_ms":')
        frag = _FRAGMENTS[key] = (middle, tail)
    return frag


def batch_prefix(file_json: str, b: Batch) -> str:
    """The batch object without its closing brace (records may follow)."""
    (position, base_offset, last_offset, count, size, magic, crc, crc_valid, attributes, epoch,
     base_ts, max_ts, producer_id, producer_epoch, base_sequence) = b
    middle, tail = _fragments(magic, attributes)
    horizon = base_ts if magic >= 2 and attributes & DELETE_HORIZON_FLAG else "null"
    return (f'{{"file":{file_json},"position":{position},'
            f'"base_offset":{"null" if base_offset is None else base_offset},'
            f'"last_offset":{last_offset},"count":{"null" if count is None else count},'
            f'"size":{size},"magic":{magic},"crc":{crc},"crc_valid":{_B[crc_valid]}{middle},'
            f'"base_timestamp":{base_ts},"max_timestamp":{max_ts},'
            f'"partition_leader_epoch":{epoch},"producer_id":{producer_id},'
            f'"producer_epoch":{producer_epoch},"base_sequence":{base_sequence}{tail}{horizon}')


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
            f'{{"key":{encode_basestring_ascii(k.decode("utf-8", "replace"))},"value":{lit(v)}}}'
            for k, v in headers) + "]"
    else:
        hjson = "[]"
    s = (f'{{"offset":{offset},"timestamp":{timestamp},'
         f'"key_size":{-1 if key is None else len(key)},"value_size":{-1 if value is None else len(value)},'
         f'"sequence":{sequence},"key":{lit(key)},"value":{lit(value)},"headers":{hjson}')
    if magic < 2:
        s += f',"crc":{crc},"crc_valid":{_B[bool(crc_valid)]}'
    if control is not None:
        s += ',"control":' + dumps(control.to_dict())
    if not view.plain:
        extras = view.record_extras(r)
        if extras:
            s += "," + dumps(extras)[1:-1]
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
    measuring its records (every batch asks): its size when uncompressed, the decoder's
    LargeRecords mark for a v2 compressed one; a legacy compressed wrapper is measured."""
    compressed = b[8] & 7
    if not compressed:
        return b[4] > STREAM_ABOVE
    return type(records) is LargeRecords or b[5] < 2


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


def batch_line(file_json: str, b: Batch, records: list[Record] | None, view: PayloadView,
               error: str | None = None) -> str:
    if error is None and c_batch_line is not None and view.plain:
        line = c_batch_line(file_json, b, records, C_ENCODINGS.get(view.encoding, -1))
        if line is not None:
            return line
    return py_batch_line(file_json, b, records, view, error)


def py_batch_line(file_json: str, b: Batch, records: list[Record] | None, view: PayloadView,
                  error: str | None = None) -> str:
    """``batch_line`` in Python only: the reference the C writer is tested against."""
    s = batch_prefix(file_json, b)
    if records is not None:
        s += "," + records_json(records, view)
    if error is not None:
        s += ',"records_error":' + dumps(error)
    return s + "}"
