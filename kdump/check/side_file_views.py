"""What ``dump`` shows for the files beside the segments: indexes, snapshots, checkpoints.

``describe(f)`` parses one file with the pure parsers of ``kdump.format`` and returns rows
(the JSON objects), text lines (DumpLogSegments' lines where it has them) and problems
(message, byte position or line). Problems do not stop the listing: whatever parsed is
still shown.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any, NamedTuple

from kdump.errors import InputError, KdumpError
from kdump.format.snapshot import ProducerSnapshot
from kdump.model import ProducerEntry
from kdump.storage import fs, gentle
from kdump.storage import logdir as kinds
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import open_regular, read_small

SIDE_FILE_LIMIT = 256 << 20      # an index of a 2 GiB segment is far smaller


class Description(NamedTuple):
    rows: Iterable[dict[str, Any]]
    lines: Iterable[str]
    problems: list[tuple[str, int | None]]


def _opt(v: int) -> str:
    return "OptionalLong.empty" if v < 0 else f"OptionalLong[{v}]"


def _index(f: LogFile, data: bytes) -> Description:
    from kdump.format.index import parse_index

    base = f.base_offset or 0
    idx = parse_index(data, base)
    if idx.size == 0 or (not idx.entries and idx.partial_bytes == 0):
        return Description([], [f"{f.path} is empty."], [])
    rows = [e.to_dict() for e in idx.entries]
    lines = [f"offset: {e.offset} position: {e.position}" for e in idx.entries]
    return Description(rows, lines, _tail_problems(idx))


def _timeindex(f: LogFile, data: bytes) -> Description:
    from kdump.format.timeindex import parse_timeindex

    tidx = parse_timeindex(data, f.base_offset or 0)
    rows = [e.to_dict() for e in tidx.entries]
    lines = [f"timestamp: {e.timestamp} offset: {e.offset}" for e in tidx.entries]
    return Description(rows, lines, _tail_problems(tidx))


def _tail_problems(parsed) -> list[tuple[str, int | None]]:
    """A torn last slot, non-zero slots after the zero tail: worded where ``verify`` words them."""
    from kdump.check.indexes.index_file import file_findings

    return [(f.message, f.position) for f in file_findings(parsed)]


def _txnindex(f: LogFile, data: bytes) -> Description:
    from kdump.format.txnindex import parse_txnindex

    t = parse_txnindex(data)
    rows = [e.to_dict() for e in t.entries]
    lines = [f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
             f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}" for e in t.entries]
    problems: list[tuple[str, int | None]] = [] if not t.partial_bytes else [
        (f"{t.partial_bytes} bytes of a partial entry at the end", t.size - t.partial_bytes)]
    return Description(rows, lines, problems)


# -- streamed: producer snapshots and checkpoints can hold millions of entries ----------------------

READ_CHUNK = 1 << 20


def _chunks(path: str, start: int, end: int, step: int = READ_CHUNK) -> Iterator[bytes]:
    fd = open_regular(path)
    try:
        pos = start
        while pos < end:
            chunk = os.pread(fd, min(step, end - pos), pos)
            if not chunk:
                raise InputError("the file shrank while it was read", file=path, position=pos)
            gentle.charge(len(chunk))
            yield chunk
            pos += len(chunk)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=path) from None
    finally:
        os.close(fd)


def read_snapshot(path: str) -> tuple[ProducerSnapshot, Callable[[], Iterator[ProducerEntry]]]:
    """A producer snapshot checked and its CRC computed in one streamed pass, and a function
    iterating its entries (read again, a chunk at a time): memory does not grow with the
    file. The snapshot's ``entries`` list is left empty."""
    from kdump.format.crc import crc32c
    from kdump.format.snapshot import CRC_START, ENTRY_SIZE, HEADER, ProducerSnapshot, entries_of, snapshot_header

    size = fs.getsize(path)
    head = b"".join(_chunks(path, 0, min(size, HEADER.size)))
    version, crc, _, end = snapshot_header(head, size)
    computed = 0
    for chunk in _chunks(path, CRC_START, size):
        computed = crc32c(chunk, computed)

    def entries() -> Iterator[ProducerEntry]:
        for chunk in _chunks(path, HEADER.size, end, READ_CHUNK - READ_CHUNK % ENTRY_SIZE):
            yield from entries_of(chunk)

    return ProducerSnapshot(version, crc, computed, crc == computed, [], size - end), entries


def checkpoint_entries(path: str, kind: str) -> Iterator:
    """The entries of a checkpoint file, read a line at a time (``format.checkpoint.iter_checkpoint``)."""
    from kdump.format.checkpoint import iter_checkpoint, parse_checkpoint

    fd = open_regular(path)
    try:
        with io.TextIOWrapper(open(fd, "rb"), encoding="utf-8", newline=None) as text:
            yield from iter_checkpoint((line[:-1] if line.endswith("\n") else line for line in text), kind, path)
    except UnicodeDecodeError:
        parse_checkpoint(read_small(path, SIDE_FILE_LIMIT), kind, path)     # raises the located error
        raise
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=path) from None


ABSENT_KEPT = 1000      # entries kept of partitions a checkpoint lists but its log dir does not hold


def offset_table(path: str, kind: str, keep: set[tuple[str, int]], absent: dict | None = None
                 ) -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset of an offset checkpoint's entries whose (topic, partition)
    is in ``keep``, a later entry winning (Kafka's OffsetCheckpointFile.read fills a map);
    raising as ``checkpoint_entries`` does; ``absent`` gets the first ``ABSENT_KEPT`` others.
    The file a broker writes is read a chunk at a time by the format's shortcut; any other is
    read by ``checkpoint_entries``, the reference."""
    try:
        table = _usual_table(path, keep, absent)
    except (KdumpError, OSError):
        table = None        # (the reference says what)
    if table is None:
        table = {}
        if absent is not None:
            absent.clear()
        for e in checkpoint_entries(path, kind):
            if (e.topic, e.partition) in keep:
                table[(e.topic, e.partition)] = e.offset
            elif absent is not None and (len(absent) < ABSENT_KEPT or (e.topic, e.partition) in absent):
                absent[(e.topic, e.partition)] = e.offset
    return table


_HEAD_LIMIT = 1 << 16        # the version and count lines of a broker's file are a few bytes


def _usual_table(path: str, keep: set[tuple[str, int]], absent: dict | None = None
                 ) -> dict[tuple[str, int], int] | None:
    """``offset_table`` of a file whose every line is as a broker writes it; else None."""
    from kdump.format.checkpoint import usual_header, usual_offset_fields

    table: dict[tuple[str, int], int] = {}
    expected = None
    found = 0
    rest = b""
    chunks = _chunks(path, 0, fs.getsize(path), READ_CHUNK)
    for chunk in chain(chunks, [None]):
        if chunk is None:               # the end: a last line without its "\n" is still a line
            data = rest + b"\n" if rest else b""
        else:
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if expected is None:            # the version and the count first
            head = text.split("\n", 2)
            if len(head) < 3:
                if chunk is None or len(rest) > _HEAD_LIMIT:
                    return None
                rest = data + rest
                continue
            expected = usual_header(head[:2])
            if expected is None:
                return None
            text = head[2]
        fields = usual_offset_fields(text)
        if fields is None:
            return None
        found += len(fields) // 3
        pairs = dict(zip(zip(fields[0::3], map(int, fields[1::3])), map(int, fields[2::3])))    # (the last wins)
        if not keep >= pairs.keys():
            if absent is not None:
                for k, v in pairs.items():
                    if k not in keep and (len(absent) < ABSENT_KEPT or k in absent):
                        absent[k] = v
            pairs = {k: v for k, v in pairs.items() if k in keep}
        table.update(pairs)
    return table if found == expected else None


def _producer_snapshot(f: LogFile) -> Description:
    snap, entries = read_snapshot(f.path)

    def line(e) -> str:
        text = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {_opt(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.timestamp}")
        if e.last_offset >= 0:
            text += (f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                     f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        return text

    problems: list[tuple[str, int | None]] = [] if snap.crc_valid else [(snap.crc_error or "bad CRC", 2)]
    return Description((e.to_dict() for e in entries()), (line(e) for e in entries()), problems)


def _checkpoint(f: LogFile) -> Description:
    kind = f.name[: -len(f.leftover)] if f.leftover else f.name
    for _ in checkpoint_entries(f.path, kind):
        pass            # checked whole first: a malformed file shows no rows, only its error
    entries = checkpoint_entries
    if f.kind == kinds.LEADER_EPOCH:
        rows = ({"epoch": e[0], "start_offset": e[1]} for e in entries(f.path, kind))
        lines = (f"epoch: {e[0]} startOffset: {e[1]}" for e in entries(f.path, kind))
    else:
        rows = ({"topic": e[0], "partition": e[1], "offset": e[2]} for e in entries(f.path, kind))
        lines = (f"topic: {e[0]} partition: {e[1]} offset: {e[2]}" for e in entries(f.path, kind))
    return Description(rows, lines, [])


def _metadata(f: LogFile, data: bytes) -> Description:
    from kdump.format import logdir_files

    parse = {kinds.PARTITION_METADATA: logdir_files.parse_partition_metadata,
             kinds.META_PROPERTIES: logdir_files.parse_meta_properties,
             kinds.QUORUM_STATE: logdir_files.parse_quorum_state,
             kinds.CLEAN_SHUTDOWN: logdir_files.parse_clean_shutdown}[f.kind]
    values = parse(data, f.name)
    lines = [f"{k}: {_shown(v)}" for k, v in values.items()]
    return Description([values], lines, [])


def _shown(v) -> str:
    """A value for a person: an absent one (JSON null) is "(not set)", not Python's None."""
    if v is None:
        return "(not set)"
    return str(v) if isinstance(v, (str, int, float)) else json.dumps(v, sort_keys=True)


_HANDLERS = {kinds.INDEX: _index, kinds.TIMEINDEX: _timeindex, kinds.TXNINDEX: _txnindex,
             kinds.PARTITION_METADATA: _metadata, kinds.META_PROPERTIES: _metadata, kinds.QUORUM_STATE: _metadata,
             kinds.CLEAN_SHUTDOWN: _metadata}
_STREAMED = {kinds.PRODUCER_SNAPSHOT: _producer_snapshot, kinds.LEADER_EPOCH: _checkpoint,
             kinds.OFFSET_CHECKPOINT: _checkpoint}


def describe(f: LogFile) -> Description:
    """Parse a side file for display; a file that does not parse at all raises a located KdumpError.

    The rows and lines of snapshots and checkpoints are iterators, read from the file as
    they are drawn (each at most once); the others are lists."""
    try:
        if f.kind in _STREAMED:
            return _STREAMED[f.kind](f)
        return _HANDLERS[f.kind](f, read_small(f.path, SIDE_FILE_LIMIT))
    except KdumpError as e:
        raise e.located(f.path) from None
