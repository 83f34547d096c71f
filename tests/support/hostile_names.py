"""A log dir whose every client-controlled name is a terminal attack.

Each payload is planted in every string field of every record type the internal-topic
decoders know (``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``,
``__share_group_state``, ``__remote_log_metadata``; written with tests/decoders/kafka_wire's
generic writer over kdump's own schemas), in record keys, values, header keys and header
values, and in topic names (partition directory names).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from kdump.decoders import consumer_offsets, share_group_state, transaction_state
from kdump.decoders.frame import record_types
from kdump.encode import build_end_txn_marker, build_v2_batch
from support.run import write_segment

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "decoders"))
import kafka_wire  # noqa: E402

PAYLOADS = [
    "osc\x1b]0;PWNED-TITLE\x07bel",          # sets the window title
    "osc\x1b]0;PWNED-ST\x1b\\st",            # the same, ended by ST
    "csi\x1b[2J\x1b[31mred",                 # clears the screen, colours what follows
    "c1\x9b2Jcsi",                           # U+009B: a one-character CSI
    "nel\x85line",                           # U+0085: a line break
    "\u202eevil-rlo",                        # right-to-left override
    "zero\u200bwidth", "zwj\u200d", "wj\u2060", "bom\ufeff",
    "\u2066isolate\u2069", "lrm\u200e", "alm\u061c", "ls\u2028ps\u2029",
    "bel\x07bs\x08", "cr\rnl\nvt\x0b", "del\x7f", "nul\x00tab\t",
]

# What must never reach a terminal raw: C0 controls but the line break (and the carriage
# return a terminal's line discipline adds to it), DEL, C1, and the bidi and zero-width
# characters of words.CONTROL_ESCAPES; a C1 control also as a lone byte.
FORBIDDEN = {chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))} - {"\n", "\r"}
FORBIDDEN |= {chr(c) for c in (0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, *range(0x2028, 0x202F), 0x2060,
                               *range(0x2066, 0x206A), 0xFEFF)}
FORBIDDEN |= {chr(0xDC00 + b) for b in range(0x80, 0xA0)}          # a lone byte (surrogateescape)

TIME = 1_700_000_000_000


def _uuid(n: int) -> str:
    return base64.urlsafe_b64encode(bytes([n % 251 + 1]) * 16).rstrip(b"=").decode()


def _value(struct, version: int, name: str, n: int) -> dict[str, Any]:
    """A value of ``struct`` with every string ``name`` (tagged fields too), every uuid the n-th."""
    out: dict[str, Any] = {}
    for f in struct.fields:
        if not f.present(version):
            continue
        v = _element(f, version, name, n)
        out[f.name] = [v] if f.array else v
    return out


_NUMBERS = {"bool": False, "int8": 1, "int16": 1, "uint16": 1, "int32": 1, "uint32": 1, "int64": TIME,
            "float64": 1.0}


def _element(f, version: int, name: str, n: int) -> Any:
    if f.kind in _NUMBERS:
        return _NUMBERS[f.kind]
    if f.kind == "uuid":
        return _uuid(n)
    if f.kind == "string":
        return name
    if f.kind in ("bytes", "records"):
        return base64.b64encode(name.encode()).decode()
    return _value(f.struct, version, name, n)


def _coordinator_records(table, pinned: dict[int, int] | None = None) -> list[tuple[bytes, bytes]]:
    """A record of each type for each payload, its value at the newest version (``pinned``:
    type id -> the version to write instead)."""
    out = []
    for rtype in table.types.values():
        for n, name in enumerate(PAYLOADS):
            key = kafka_wire.i16(rtype.id) + kafka_wire.encode(rtype.key, 0, _value(rtype.key.root, 0, name, n))
            v = (pinned or {}).get(rtype.id, rtype.value.highest)
            value = kafka_wire.i16(v) + kafka_wire.encode(rtype.value, v, _value(rtype.value.root, v, name, n))
            out.append((key, value))
    return out


def _framed_records(schema_file: str) -> list[tuple[None, bytes]]:
    out = []
    for rtype in record_types(schema_file).values():
        m = rtype.message
        for n, name in enumerate(PAYLOADS):
            body = kafka_wire.encode(m, m.highest, _value(m.root, m.highest, name, n))
            out.append((None, kafka_wire.uvarint(1) + kafka_wire.uvarint(rtype.id) + kafka_wire.uvarint(m.highest)
                        + body))
    return out


def _segment(directory: Path, records: list, per_batch: int = 50) -> None:
    batches = []
    for at in range(0, len(records), per_batch):
        part = records[at:at + per_batch]
        batches.append(build_v2_batch([(i, TIME, k, v) for i, (k, v) in enumerate(part)], base_offset=at))
    write_segment(directory, batches)


def build(root: Path, plain_dir_names: bool = False) -> Path:
    """The hostile log dir under ``root`` (returned); ``plain_dir_names``: the topics' partition
    directories named ``hostile-N-0`` (their records as hostile)."""
    logdir = root / "logdir"
    # (Kafka 4.x reads a type 0 offset commit at value version 0 only)
    _segment(logdir / "__consumer_offsets-0", _coordinator_records(consumer_offsets.table(), {0: 0}))
    _segment(logdir / "__transaction_state-0", _coordinator_records(transaction_state.table()))
    _segment(logdir / "__share_group_state-0", _coordinator_records(share_group_state.table()))
    _segment(logdir / "__cluster_metadata-0", _framed_records("cluster_metadata.json"))
    _segment(logdir / "__remote_log_metadata-0", _framed_records("remote_log_metadata.json"))
    # A topic per payload; its records carry every payload as key, value, header key and value,
    # in a transaction of producer 1 (the transactional ids above name it) and committed.
    records = [(i, TIME, p.encode(), p.encode(), [(p, p.encode()), (PAYLOADS[0], None)])
               for i, p in enumerate(PAYLOADS)]
    for n, p in enumerate(PAYLOADS):
        if "\x00" in p and not plain_dir_names:
            continue            # no file name holds a NUL
        data = build_v2_batch(records, base_offset=0, producer_id=1, producer_epoch=1, base_sequence=0,
                              is_transactional=True)
        marker = build_end_txn_marker(True, base_offset=len(records), producer_id=1, producer_epoch=1)
        write_segment(logdir / (f"hostile-{n}-0" if plain_dir_names else f"{p}-0"), [data, marker])
    # Indexes, so that index, timeindex and the dump of .index files read some.
    from support.run import run_kdump

    assert run_kdump("index", "--rebuild", "--no-backup", "-q", str(logdir)).code == 0
    return logdir
