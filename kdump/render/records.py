"""``kdump records``: one record a line, as a flat NDJSON object or through a kcat-style
format string, and the damage met on the way as objects of the same stream.

Format string tokens (kcat's ``-f``): ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k``
key, ``%s`` value, ``%K``/``%S`` key/value length (-1 for null), ``%T`` timestamp (epoch ms),
``%h`` headers (``k=v,k=v``), ``%x`` the transaction's outcome (committed, aborted, open; empty
outside a transaction), ``%%``; and ``\\n``, ``\\t``, ``\\r``, ``\\0``, ``\\\\``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kdump import _accel
from kdump.errors import UsageError
from kdump.export.ndjson import dumps, literal_for
from kdump.model import TIMESTAMP_TYPE_NAMES, Batch, Record, compression_name
from kdump.render.escape import printable
from kdump.render.jsonout import C_ENCODINGS

DEFAULT_FORMAT = "%t-%p %o %T %k %s\\n"
_TOKEN = re.compile(r"%.|\\.|[^%\\]+", re.S)
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\0": "\0", "\\\\": "\\"}
_FIELDS = "tpokKsSThx%"
RUN_BATCHES = 1 << 16           # batches one C run call takes, at most
RUN_OUT = 1 << 16               # characters a C run call writes, about (1 MiB pieces took 2x the time)


class Line:
    """The fields of one record that a format string or a JSON object draws from."""

    __slots__ = ("topic", "partition", "batch", "record", "txn", "file")

    def __init__(self, topic: str | None, partition: int | None, file: str, batch: Batch, record: Record,
                 txn: str | None) -> None:
        self.topic, self.partition, self.file = topic, partition, file
        self.batch, self.record, self.txn = batch, record, txn


def compile_format(fmt: str, encode: Callable[[bytes], str], escape: bool) -> Callable[[Line], str]:
    """A function drawing one record by ``fmt``; ``encode``: bytes -> text (--encoding); ``escape``:
    control characters of keys, values and names escaped (for a terminal)."""
    parts: list[Callable[[Line], str] | str] = []
    for tok in _TOKEN.findall(fmt):
        if tok.startswith("%"):
            if len(tok) < 2 or tok[1] not in _FIELDS:
                raise UsageError(f"--format-string: unknown token {tok!r} (known: "
                                 + ", ".join("%" + c for c in _FIELDS) + ")")
            parts.append(_field(tok[1], encode, escape))
        elif tok.startswith("\\"):
            parts.append(_ESCAPES.get(tok, tok))
        else:
            parts.append(tok)
    fixed = [p if callable(p) else (lambda _line, _p=p: _p) for p in parts]

    def draw(line: Line) -> str:
        return "".join(p(line) for p in fixed)
    return draw


def _field(c: str, encode: Callable[[bytes], str], escape: bool) -> Callable[[Line], str]:
    def text(s: str) -> str:
        return printable(s) if escape else s

    def data(d: bytes | None) -> str:
        return "" if d is None else text(encode(d))

    if c == "t":
        return lambda x: text(x.topic or "")
    if c == "p":
        return lambda x: "" if x.partition is None else str(x.partition)
    if c == "o":
        return lambda x: str(x.record.offset)
    if c == "k":
        return lambda x: data(x.record.key)
    if c == "s":
        return lambda x: data(x.record.value)
    if c == "K":
        return lambda x: str(-1 if x.record.key is None else len(x.record.key))
    if c == "S":
        return lambda x: str(-1 if x.record.value is None else len(x.record.value))
    if c == "T":
        return lambda x: str(x.record.timestamp)
    if c == "h":
        return lambda x: ",".join(f"{text(k.decode('utf-8', 'replace'))}={data(v)}" for k, v in x.record.headers)
    if c == "x":
        return lambda x: x.txn or ""
    return lambda x: "%"


def record_head(topic: str | None, partition: int | None) -> str:
    """The text before a record's offset in each record object of a partition."""
    return '{"object":"record","topic":%s,"partition":%s,"offset":' % (
        dumps(topic), "null" if partition is None else partition)


def batch_parts(topic: str | None, partition: int | None, file: str, b: Batch, txn: str | None) -> tuple[str, str]:
    """The text before a record's offset and after its own fields in each of the batch's
    record objects (made once a batch: the hot path writes only what differs per record)."""
    head = record_head(topic, partition)
    tail = (',"txn":%s,"batch":{"file":%s,"position":%d,"base_offset":%s,"magic":%d,"compression":%s,'
            '"timestamp_type":%s,"producer_id":%d,"producer_epoch":%d,"is_transactional":%s,'
            '"partition_leader_epoch":%d}}\n') % (
        dumps(txn), dumps(file), b.position, "null" if b.base_offset is None else b.base_offset, b.magic,
        dumps(compression_name(b.compression)), dumps(TIMESTAMP_TYPE_NAMES[b.timestamp_type]), b.producer_id,
        b.producer_epoch, "true" if b.is_transactional else "false", b.partition_leader_epoch)
    return head, tail


def record_objects(head: str, tail: str, records, view) -> str:
    """The flat objects of ``records`` (one line each): where they are, the record, and the
    batch fields a consumer sees (``batch_parts``)."""
    lit = literal_for(view)
    out = []
    for r in records:
        key, value, headers = r.key, r.value, r.headers
        hs = ",".join('{"key":%s,"value":%s}' % (dumps(k.decode("utf-8", "replace")), lit(v))
                      for k, v in headers) if headers else ""
        out.append('%s%d,"timestamp":%d,"key":%s,"value":%s,"headers":[%s],"key_size":%d,"value_size":%d,'
                   '"sequence":%d%s' % (head, r.offset, r.timestamp, lit(key), lit(value), hs,
                                        -1 if key is None else len(key), -1 if value is None else len(value),
                                        r.sequence, tail))
    return "".join(out)


def record_object(line: Line, view) -> str:
    """One record's flat object (``record_objects`` of one)."""
    head, tail = batch_parts(line.topic, line.partition, line.file, line.batch, line.txn)
    return record_objects(head, tail, (line.record,), view)


def damage_object(kind: str, cls: str, file: str, position: int | None, offset: int | None, message: str) -> str:
    """Damage met while reading, in the stream where a reader of records sees it."""
    obj: dict[str, Any] = {"object": "damage", "kind": kind, "class": cls, "file": file, "position": position,
                           "offset": offset, "message": message}
    return dumps(obj)


# -- the C writer of the same text (jsonout.c), where it can; None: write it as above ----------

def c_encoding(view) -> int | None:
    """The C writer's code for ``view``'s encoding while the accelerator is on, else None."""
    return C_ENCODINGS.get(view.encoding) if view.plain and _accel.native() is not None else None


def c_record_objects(head: str, tail: str, records, encoding: int, limit: int):
    """(text, count): ``record_objects`` of the first ``limit`` (-1: all) Record objects, or None."""
    return _accel.native().flat_records(head, tail, None, records, None, encoding, limit)  # type: ignore[union-attr]


def c_raw_objects(head: str, tail: str, b: Batch, data, log_append_ts: int | None, encoding: int, limit: int):
    """(text, count): the same from a batch's (decompressed) records section or a legacy
    wrapper's inner set, read in place; None: decode them as usual."""
    return _accel.native().flat_records(head, tail, b, data, log_append_ts, encoding, limit)  # type: ignore[union-attr]


def c_run_objects(head: str, file_json: str, buf, pos: int, end: int, max_records: int, encoding: int, limit: int,
                  markers, lso: int | None, committed_only: bool) -> tuple[str | None, int, int]:
    """(text, new_pos, count): the objects of the plain v2 batches from ``pos``, straight from
    the segment (``markers``, ``lso``: state/txn_status.py's Outcomes.table and last stable offset)."""
    return _accel.native().flat_v2_run(head, file_json, buf, pos, end, RUN_BATCHES, max_records,  # type: ignore[union-attr]
                                       encoding, RUN_OUT, limit, markers, lso, committed_only)
