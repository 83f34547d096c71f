"""What ``dump`` shows for the files beside the segments: indexes, snapshots, checkpoints.

``describe(f)`` parses one file with the pure parsers of ``kdump.format`` and returns rows
(the JSON objects), text lines (DumpLogSegments' lines where it has them) and problems
(message, byte position or line). Problems do not stop the listing: whatever parsed is
still shown.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from . import logdir as kinds
from .errors import KdumpError
from .logdir import LogFile
from .segment import read_small

SIDE_FILE_LIMIT = 256 << 20      # an index of a 2 GiB segment is far smaller


class Description(NamedTuple):
    rows: list[dict[str, Any]]
    lines: list[str]
    problems: list[tuple[str, int | None]]


def _opt(v: int) -> str:
    return "OptionalLong.empty" if v < 0 else f"OptionalLong[{v}]"


def _index(f: LogFile, data: bytes) -> Description:
    from .format.index import parse_index

    base = f.base_offset or 0
    idx = parse_index(data, base)
    if idx.size == 0 or (not idx.entries and idx.partial_bytes == 0):
        return Description([], [f"{f.path} is empty."], [])
    rows = [e.to_dict() for e in idx.entries]
    lines = [f"offset: {e.offset} position: {e.position}" for e in idx.entries]
    return Description(rows, lines, _tail_problems(idx, 8))


def _timeindex(f: LogFile, data: bytes) -> Description:
    from .format.timeindex import parse_timeindex

    tidx = parse_timeindex(data, f.base_offset or 0)
    rows = [e.to_dict() for e in tidx.entries]
    lines = [f"timestamp: {e.timestamp} offset: {e.offset}" for e in tidx.entries]
    return Description(rows, lines, _tail_problems(tidx, 12))


def _tail_problems(idx, slot: int) -> list[tuple[str, int | None]]:
    problems: list[tuple[str, int | None]] = []
    if idx.nonzero_after_tail is not None:
        problems.append((f"non-zero slot {idx.nonzero_after_tail} after the zero-filled tail that starts at slot "
                         f"{idx.zero_tail_start}", idx.nonzero_after_tail * slot))
    if idx.partial_bytes:
        problems.append((f"{idx.partial_bytes} bytes of a partial entry at the end (size is not a multiple of "
                         f"{slot})", idx.size - idx.partial_bytes))
    return problems


def _txnindex(f: LogFile, data: bytes) -> Description:
    from .format.txnindex import parse_txnindex

    t = parse_txnindex(data)
    rows = [e.to_dict() for e in t.entries]
    lines = [f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
             f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}" for e in t.entries]
    problems = [] if not t.partial_bytes else [
        (f"{t.partial_bytes} bytes of a partial entry at the end", t.size - t.partial_bytes)]
    return Description(rows, lines, problems)


def _producer_snapshot(f: LogFile, data: bytes) -> Description:
    from .format.snapshot import parse_snapshot

    snap = parse_snapshot(data)
    rows, lines = [], []
    for e in snap.entries:
        rows.append(e.to_dict())
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {_opt(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.timestamp}")
        if e.last_offset >= 0:
            line += (f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                     f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        lines.append(line)
    problems = [] if snap.crc_valid else [(snap.crc_error or "bad CRC", 2)]
    return Description(rows, lines, problems)


def _checkpoint(f: LogFile, data: bytes) -> Description:
    from .format.checkpoint import parse_checkpoint

    kind = f.name[: -len(f.leftover)] if f.leftover else f.name
    entries = parse_checkpoint(data, kind, f.path)
    if f.kind == kinds.LEADER_EPOCH:
        rows = [{"epoch": e[0], "start_offset": e[1]} for e in entries]
        lines = [f"epoch: {e[0]} startOffset: {e[1]}" for e in entries]
    else:
        rows = [{"topic": e[0], "partition": e[1], "offset": e[2]} for e in entries]
        lines = [f"topic: {e[0]} partition: {e[1]} offset: {e[2]}" for e in entries]
    return Description(rows, lines, [])


def _metadata(f: LogFile, data: bytes) -> Description:
    from .format import metadata

    parse = {kinds.PARTITION_METADATA: metadata.parse_partition_metadata,
             kinds.META_PROPERTIES: metadata.parse_meta_properties,
             kinds.QUORUM_STATE: metadata.parse_quorum_state,
             kinds.CLEAN_SHUTDOWN: metadata.parse_clean_shutdown}[f.kind]
    values = parse(data, f.name)
    lines = [f"{k}: {_shown(v)}" for k, v in values.items()]
    return Description([values], lines, [])


def _shown(v) -> str:
    """A value for a person: an absent one (JSON null) is "(not set)", not Python's None."""
    if v is None:
        return "(not set)"
    return str(v) if isinstance(v, (str, int, float)) else json.dumps(v, sort_keys=True)


_HANDLERS = {kinds.INDEX: _index, kinds.TIMEINDEX: _timeindex, kinds.TXNINDEX: _txnindex,
             kinds.PRODUCER_SNAPSHOT: _producer_snapshot, kinds.LEADER_EPOCH: _checkpoint,
             kinds.OFFSET_CHECKPOINT: _checkpoint, kinds.PARTITION_METADATA: _metadata,
             kinds.META_PROPERTIES: _metadata, kinds.QUORUM_STATE: _metadata, kinds.CLEAN_SHUTDOWN: _metadata}


def describe(f: LogFile) -> Description:
    """Parse a side file for display; a file that does not parse at all raises a located KdumpError."""
    data = read_small(f.path, SIDE_FILE_LIMIT)
    try:
        return _HANDLERS[f.kind](f, data)
    except KdumpError as e:
        raise e.located(f.path) from None
