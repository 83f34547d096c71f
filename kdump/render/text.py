"""The kafka-dump-log.sh text view: DumpLogSegments' current lines, field for field.

Line formats follow the 2026 Java port of DumpLogSegments (kafka-reference.md §1.4),
so scripts written against ``kafka-dump-log.sh`` keep working: codec names in lower case,
no stray ``}`` after the legacy ``crc:``, header keys only (values are in --json/table).
"""

from __future__ import annotations

import json
import os

from ..model import CONTROL_TYPE_NAMES, TIMESTAMP_TYPE_NAMES, Batch, Control, Record, compression_name
from ..segment import snapshot_id

_BOOL = ("false", "true")


def dumping_line(path: str) -> str:
    return f"Dumping {path}"


def start_line(path: str) -> str | None:
    """``Log starting offset: N`` for segments; the snapshot line for KRaft ``.checkpoint`` files."""
    name = os.path.basename(path)
    if name.startswith("bootstrap.checkpoint"):
        return "KRaft bootstrap snapshot"
    if ".checkpoint" in name:
        sid = snapshot_id(name)
        if sid is not None:
            return f"Snapshot end offset: {sid[0]}, epoch: {sid[1]}"
    digits = name.split(".")[0]
    return f"Log starting offset: {int(digits)}" if digits.isdigit() else None


def batch_line(b: Batch) -> str:
    ts_name = TIMESTAMP_TYPE_NAMES[b.timestamp_type]
    codec = compression_name(b.attributes & 7)
    valid = _BOOL[b.crc_valid]
    if b.magic >= 2:
        horizon = b.delete_horizon_ms
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        return (f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.count} "
                f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
                f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
                f"isTransactional: {_BOOL[b.is_transactional]} isControl: {_BOOL[b.is_control]} "
                f"deleteHorizonMs: {horizon_text} position: {b.position} {ts_name}: {b.max_timestamp} "
                f"size: {b.size} magic: {b.magic} compresscodec: {codec} crc: {b.crc} isvalid: {valid}")
    return (f"offset: {b.last_offset} position: {b.position} {ts_name}: {b.max_timestamp} size: {b.size} "
            f"magic: {b.magic} compresscodec: {codec} crc: {b.crc} isvalid: {valid}")


def control_text(c: Control) -> str:
    """The control-record part of a record line, as DumpLogSegments prints each type."""
    name = CONTROL_TYPE_NAMES.get(c.type)
    if name in ("ABORT", "COMMIT"):
        return f" endTxnMarker: {name} coordinatorEpoch: {c.coordinator_epoch}"
    body = json.dumps(c.data, separators=(",", ":")) if c.data is not None else "{}"
    if name == "LEADER_CHANGE":
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
                metadata: bool = True) -> str:
    """One ``| offset: ...`` line; key/payload texts are given only in print (--data) mode."""
    parts = []
    if metadata:
        parts.append(f"| offset: {r.offset} {TIMESTAMP_TYPE_NAMES[r.timestamp_type]}: {r.timestamp} "
                     f"keySize: {r.key_size} valueSize: {r.value_size}")
        if r.magic >= 2:
            keys = ",".join(k.decode("utf-8", "replace") for k, _ in r.headers)
            parts.append(f" sequence: {r.sequence} headerKeys: [{keys}]")
        else:
            parts.append(f" isValid: {_BOOL[bool(r.crc_valid)]} crc: {r.crc}")
        if r.control is not None:
            parts.append(control_text(r.control))
    elif r.control is not None:
        return ""           # --skip-record-metadata prints an empty line for control records
    if r.control is None:
        if key_text is not None:
            parts.append(f" key: {key_text}")
        if payload_text is not None:
            parts.append(f" payload: {payload_text}")
    line = "".join(parts)
    if not metadata:
        line = "|" + line
    return line


def trailing_line(path: str, count: int) -> str:
    return f"Found {count} invalid bytes at the end of {os.path.basename(path)}"
