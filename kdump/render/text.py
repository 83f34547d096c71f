"""The kafka-dump-log.sh text view: DumpLogSegments' current lines, field for field.

Line formats follow the 2026 Java port of DumpLogSegments (kafka-reference.md §1.4),
so scripts written against ``kafka-dump-log.sh`` keep working: codec names in lower case,
no stray ``}`` after the legacy ``crc:``, header keys only (values are in --json/table).

``item_lines`` (a batch's lines) is the reference of kdump/_speedups/text.c, which draws the
same lines as UTF-8 for the views that are plain bytes (``c_mode``); tests/speedups/ holds
the two equal.
"""

from __future__ import annotations

import json
import os

from kdump.decoders import kafka_lines as K
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine
from kdump.decoders.views import escape_controls
from kdump.format.javautf8 import java_utf8
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
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CONTROL_TYPE_NAMES,
    CREATE_TIME,
    DELETE_HORIZON_FLAG,
    LOG_APPEND_TIME,
    TIMESTAMP_TYPE_MASK,
    TIMESTAMP_TYPE_NAMES,
    TRANSACTIONAL_FLAG,
    Batch,
    Control,
    Record,
    compression_name,
)
from kdump.render.escape import printable
from kdump.storage.names import BOOTSTRAP_CHECKPOINT, filename_offset, snapshot_id

_BOOL = ("false", "true")


def dumping_line(path: str) -> str:
    return f"Dumping {printable(path)}"


def start_line(path: str) -> str | None:
    """``Log starting offset: N`` for segments; the snapshot line for KRaft ``.checkpoint`` files."""
    name = os.path.basename(path)
    if name.startswith(BOOTSTRAP_CHECKPOINT):
        return "KRaft bootstrap snapshot"
    if ".checkpoint" in name:
        sid = snapshot_id(name)
        if sid is not None:
            return f"Snapshot end offset: {sid[0]}, epoch: {sid[1]}"
    base = filename_offset(name)
    return f"Log starting offset: {base}" if base is not None else None


_V2_PARTS: dict[int, tuple[str, str, str]] = {}


def _v2_parts(attributes: int) -> tuple[str, str, str]:
    """The pieces of a v2 batch line fixed by its attributes, built once per value."""
    parts = _V2_PARTS.get(attributes)
    if parts is None:
        flags = (f" isTransactional: {_BOOL[bool(attributes & TRANSACTIONAL_FLAG)]} "
                 f"isControl: {_BOOL[bool(attributes & CONTROL_FLAG)]} deleteHorizonMs: ")
        ts_name = TIMESTAMP_TYPE_NAMES[LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME]
        parts = _V2_PARTS[attributes] = (flags, f" {ts_name}: ", f" magic: 2 compresscodec: "
                                         f"{compression_name(attributes & COMPRESSION_MASK)} crc: ")
    return parts


def batch_line(b: Batch) -> str:
    """The batch line (the hot path of a plain listing: the fields are read by position)."""
    position, last_offset, size, magic, crc = b[B_POSITION], b[B_LAST_OFFSET], b[B_SIZE], b[B_MAGIC], b[B_CRC]
    attributes, max_ts = b[B_ATTRIBUTES], b[B_MAX_TIMESTAMP]
    valid = _BOOL[b[B_CRC_VALID]]
    if magic >= 2:
        flags, ts_part, codec_part = _v2_parts(attributes)
        horizon_text = (f"OptionalLong[{b[B_BASE_TIMESTAMP]}]" if attributes & DELETE_HORIZON_FLAG
                        else "OptionalLong.empty")
        return (f"baseOffset: {b[B_BASE_OFFSET]} lastOffset: {last_offset} count: {b[B_COUNT]} "
                f"baseSequence: {b[B_BASE_SEQUENCE]} lastSequence: {b.last_sequence} producerId: {b[B_PRODUCER_ID]} "
                f"producerEpoch: {b[B_PRODUCER_EPOCH]} partitionLeaderEpoch: {b[B_PARTITION_LEADER_EPOCH]}{flags}"
                f"{horizon_text} "
                f"position: {position}{ts_part}{max_ts} size: {size}{codec_part}{crc} isvalid: {valid}")
    ts_name = TIMESTAMP_TYPE_NAMES[b.timestamp_type]
    codec = compression_name(attributes & COMPRESSION_MASK)
    return (f"offset: {last_offset} position: {position} {ts_name}: {max_ts} size: {size} "
            f"magic: {magic} compresscodec: {codec} crc: {crc} isvalid: {valid}")


# The control types each line's ControlRecordType knows (fromTypeId: any other is UNKNOWN).
_KRAFT_CONTROL = ("KRAFT_VERSION", "KRAFT_VOTERS")


def control_text(c: Control, kafka: KafkaLine = NEWEST_LINE) -> str:
    """The control-record part of a record line, as DumpLogSegments prints each type."""
    name = CONTROL_TYPE_NAMES.get(c.type)
    if name in _KRAFT_CONTROL and not kafka.has(K.KRAFT_CONTROL_TEXT):
        name = None
    if name in ("ABORT", "COMMIT"):
        return f" endTxnMarker: {name} coordinatorEpoch: {c.coordinator_epoch}"
    body = json.dumps(c.data, separators=(",", ":")) if c.data is not None else "{}"
    if name == "LEADER_CHANGE" and kafka.has(K.LEADER_CHANGE_TEXT):
        return f" LeaderChange: {body}"
    if name == "SNAPSHOT_HEADER":
        return f" SnapshotHeader {body}"
    if name == "SNAPSHOT_FOOTER":
        return f" SnapshotFooter {body}"
    if name == "KRAFT_VERSION":
        return f" KRaftVersion {body}"
    if name == "KRAFT_VOTERS":
        return f" KRaftVoters {body}"
    return f" controlType: {name or 'UNKNOWN'}({c.type})"


def record_line(r: Record, key_text: str | None = None, payload_text: str | None = None,
                metadata: bool = True, escape: bool = True, kafka: KafkaLine = NEWEST_LINE) -> str:
    """One record's line; key/payload texts are given only in print (--data) mode; ``escape``:
    header keys escaped as keys and values are (a client names them), or raw (--escape none).

    As DumpLogSegments: --skip-record-metadata leaves ``| key: ... payload: ...`` (and an
    empty line for a control record, or for any record when no data is printed).
    """
    parts = []
    if metadata:
        parts.append(f"| offset: {r.offset} {TIMESTAMP_TYPE_NAMES[r.timestamp_type]}: {r.timestamp} "
                     f"keySize: {r.key_size} valueSize: {r.value_size}")
        if r.magic >= 2:
            keys = ",".join(escape_controls(java_utf8(k)) if escape else java_utf8(k) for k, _ in r.headers)
            parts.append(f" sequence: {r.sequence} headerKeys: [{keys}]")
        else:
            parts.append(f" isValid: {_BOOL[bool(r.crc_valid)]} crc: {r.crc}"
                         + ("" if kafka.has(K.LEGACY_CRC_NO_BRACE) else "}"))
        if r.control is not None:
            parts.append(control_text(r.control, kafka))
    if r.control is None:
        prefix = " " if metadata else "| "
        if key_text is not None:
            parts.append(f"{prefix}key: {key_text}")
            prefix = " "
        if payload_text is not None:
            if not kafka.has(K.SKIP_METADATA_PAYLOAD_PREFIX):
                prefix = " "
            parts.append(f"{prefix}payload: {payload_text}")
    return "".join(parts)


def item_lines(b: Batch, records: list[Record] | None, view, data: bool, metadata: bool) -> list[str]:
    """A batch's line and its records' lines (``view``: the PayloadView giving keys and payloads)."""
    lines = [batch_line(b)]
    for r in records or ():
        k, v = view.text(r) if data and r.control is None else (None, None)
        lines.append(record_line(r, k, v, metadata, view.escape, view.kafka))
    return lines


# The mode of item_lines' C twin (kdump/_speedups/text.c text_item): the parts of a record
# line, and how keys and payloads are shown (the views that are plain bytes).
C_METADATA, C_DATA, C_ESCAPE = 1, 2, 4
C_RECORDS_ONLY = 1 << 12      # text_item draws the records' lines alone (a slice of a streamed batch)
C_KINDS = {"utf8": 0, "hex": 1, "base64": 2, "int": 3, "long": 4}


def c_mode(view, data: bool, metadata: bool) -> int | None:
    """text_item's mode for ``view``, or None where only Python shows records (internal-topic
    and JSON decoders)."""
    key = C_KINDS.get(view.key_decoder or view.encoding)
    value = C_KINDS.get(view.value_decoder or view.encoding)
    if view.internal is not None or key is None or value is None or not view.kafka.c_text:
        return None
    return ((C_METADATA if metadata else 0) | (C_DATA if data else 0) | (C_ESCAPE if view.escape else 0)
            | key << 4 | value << 8)


def non_consecutive_block(path: str, gaps: list[tuple[int, int]],
                          kafka: KafkaLine = NEWEST_LINE) -> tuple[int, list[str]] | None:
    """DumpLogSegments' --deep-iteration report of offsets that do not follow one another
    (``gaps``: (previous offset, offset) as met, the first record's previous being -1).

    Kafka reports every gap, the first record of a segment not at offset 0 included
    (``-1 is followed by <base>``), whatever made it: compaction, a deleted batch. The Scala
    tool (GAPS_EVERY_RECORD) skipped the first record and listed them newest first.
    """
    from kdump.check.indexes.dls_view import SUMMARY_NON_CONSECUTIVE, absolute

    if kafka.has(K.GAPS_EVERY_RECORD):
        pairs = dict(gaps)         # Kafka keeps one per previous offset, in offset order
        listed = [(prev, pairs[prev]) for prev in sorted(pairs)]
    else:
        listed = [g for g in reversed(gaps) if g[0] != -1]
    if not listed:
        return None
    return SUMMARY_NON_CONSECUTIVE, [f"Non-consecutive offsets in {absolute(path)}"] + [
        f"  {prev} is followed by {nxt}" for prev, nxt in listed]


def trailing_line(path: str, count: int) -> str:
    return f"Found {count} invalid bytes at the end of {printable(os.path.basename(path))}"
