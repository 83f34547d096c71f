"""kafka-dump-log.sh's view of ``.index`` and ``.timeindex`` files, for ``kdump dump``'s text.

DumpLogSegments does not only list an index: it checks every entry against the segment
and reports, after all files, the entries that do not match (on stderr). These are its
own checks, narrower than ``kdump index --verify``:

- offset index: the first batch read at the entry's position (at most --max-message-size
  bytes) must end at the entry's offset; the listing stops at the first slot after slot 0
  whose relative offset is 0 (a preallocated tail);
- time index: the entry's offset must be the last offset of a batch (found from the
  offset index's position for it), that batch's largest record timestamp must be the
  entry's timestamp, and timestamps must increase.

Where DumpLogSegments dies with an exception (no segment, a corrupt index under
--index-sanity-check, no batch at an entry's position) the result carries an ``error``
and the lines printed up to there.
"""

from __future__ import annotations

import bisect
import os
from typing import NamedTuple

from kdump.check.indexes.forward_pass import check_against_log, segment_log_path
from kdump.check.indexes.index_file import opened_index_file, read_index_file
from kdump.errors import CorruptDataError, InputError, KdumpError
from kdump.findings import is_damage
from kdump.format.batch import NO_TIMESTAMP
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.index import ENTRY as INDEX_ENTRY
from kdump.format.index import parse_index
from kdump.format.timeindex import ENTRY as TIME_ENTRY
from kdump.format.timeindex import parse_timeindex
from kdump.format.walk import FOLLOW_STEP, INVALID_BATCH, INVALID_MAGIC, INVALID_SIZE, Walker, record_slices
from kdump.storage import fs
from kdump.storage.mapped import MappedFile
from kdump.storage.names import INDEX_SUFFIX, LOG_SUFFIX
from kdump.storage.remote import is_remote

_WALK_FAULTS = (INVALID_SIZE, INVALID_MAGIC, INVALID_BATCH)   # Kafka throws on these


# The blocks of DumpLogSegments' summary (stderr), in the order it prints them after all files
# (not finding kinds: those are kdump.findings', some of the same names as strings).
(SUMMARY_INDEX_MISMATCH, SUMMARY_TIME_MISMATCH, SUMMARY_TIME_OUT_OF_ORDER, SUMMARY_TIME_NOT_FOUND,
 SUMMARY_NON_CONSECUTIVE) = range(5)


DLS_MAX_MESSAGE_SIZE = 5 * 1024 * 1024     # DumpLogSegments' --max-message-size default


class IndexOptions(NamedTuple):
    """kafka-dump-log.sh's options for index files."""

    sanity_only: bool = False            # --index-sanity-check
    verify_only: bool = False            # --verify-index-only
    max_message_size: int = DLS_MAX_MESSAGE_SIZE


class IndexView(NamedTuple):
    lines: list[str]                               # stdout
    summary: list[tuple[int, list[str]]]           # stderr blocks for this file, by kind (above)
    error: KdumpError | None                       # where DumpLogSegments would have died


def absolute(path: str) -> str:
    """``File.getAbsolutePath()``: the working directory joined, nothing normalised."""
    return path if os.path.isabs(path) or is_remote(path) else os.path.join(os.getcwd(), path)


# DumpLogSegments' own rule, looser than the log dir's: the name up to its first dot.
def _segment_path(path: str, ext: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, name.split(".")[0] + ext)


def _base_offset(path: str) -> int:
    return int(os.path.basename(path).split(".")[0])


def _slots(data, entry) -> list[tuple]:
    return list(entry.iter_unpack(data[:len(data) - len(data) % entry.size]))


def offset_index(path: str, opts: IndexOptions = IndexOptions()) -> IndexView:
    base = _base_offset(path)
    log_path = _segment_path(path, LOG_SUFFIX)
    lines: list[str] = []
    mismatches: dict[int, int] = {}
    with MappedFile(path) as ix:
        if not fs.exists(log_path):
            return IndexView(lines, [], InputError("its segment is missing", file=log_path))
        slots = ix.size // INDEX_ENTRY.size
        if slots == 0:
            return IndexView([f"{path} is empty."], [], None)
        if opts.sanity_only:
            return _sanity(path, parse_index(ix.buf, base), lines)
        with MappedFile(log_path) as log:
            behind = _Follower(log.buf)
            for i, (rel, position) in enumerate(INDEX_ENTRY.iter_unpack(ix.buf[:slots * INDEX_ENTRY.size])):
                if rel == 0 and i > 0:
                    break
                behind.reached(position)
                offset = base + rel
                batch = _first_batch(log.buf, log.size, position, opts.max_message_size, offset)
                if isinstance(batch, KdumpError):
                    return IndexView(lines, _mismatch_block(path, mismatches), batch.located(path, i * 8))
                if batch.last_offset != offset:
                    mismatches[offset] = batch.last_offset
                if not opts.verify_only:
                    lines.append(f"offset: {offset} position: {position}")
    return IndexView(lines, _mismatch_block(path, mismatches), None)


def _mismatch_block(path: str, mismatches: dict[int, int]) -> list[tuple[int, list[str]]]:
    if not mismatches:
        return []
    # Kafka keeps them in a map sorted by index offset, highest first.
    return [(SUMMARY_INDEX_MISMATCH, [f"Mismatches in :{absolute(path)}"] + [
        f"  Index offset: {o}, log offset: {mismatches[o]}" for o in sorted(mismatches, reverse=True)])]


def _first_batch(buf, size: int, position: int, window: int, offset: int):
    """The first batch within ``window`` bytes of ``position`` (FileRecords.slice), or the error."""
    if position < 0 or position > size:
        return CorruptDataError(f"index entry for offset {offset} points at position {position}, past the end of "
                                f"the segment ({size} bytes)")
    walker = Walker(buf, position, min(size, position + max(window, 0)))
    for batch in walker:
        return batch
    if walker.stop is not None and walker.stop.kind in _WALK_FAULTS:
        return CorruptDataError(walker.stop.message, position=walker.stop.position)
    return CorruptDataError(f"no whole batch within --max-message-size {window} bytes at position {position} "
                            f"(index entry for offset {offset})")


def _sanity(path: str, parsed, lines: list[str]) -> IndexView:
    problems = parsed.sanity_check(absolute(path))
    if problems:
        return IndexView(lines, [], CorruptDataError(problems[0], file=path))
    return IndexView([f"{path} passed sanity check."], [], None)


def time_index(path: str, opts: IndexOptions = IndexOptions(), limits: Limits = DEFAULT_LIMITS) -> IndexView:
    base = _base_offset(path)
    log_path = _segment_path(path, LOG_SUFFIX)
    index_path = _segment_path(path, INDEX_SUFFIX)
    lines: list[str] = []
    if not fs.exists(log_path):
        return IndexView(lines, [], InputError("its segment is missing", file=log_path))
    with MappedFile(path) as tx:
        if opts.sanity_only:
            return _sanity(path, parse_timeindex(tx.buf, base), lines)
        slots = _slots(tx.buf, TIME_ENTRY)
    index = read_index_file(index_path, "index", base).entries if fs.exists(index_path) else []
    index_offsets = [e.offset for e in index]
    mismatch: list[str] = []
    out_of_order: list[str] = []
    not_found: list[str] = []
    error = None
    # Two mappings: the first walk drops its pages behind it to the end, and a mapping
    # drops pages only forward, so the records read afterwards get a mapping of their own.
    with MappedFile(log_path) as log, MappedFile(log_path) as records:
        batches = _Batches(log.buf, log.size, limits, records.buf)
        behind = _Follower(records.buf)
        prev = NO_TIMESTAMP
        for i, (timestamp, rel) in enumerate(slots):
            if rel == 0 and i > 0:
                break
            offset = base + rel
            k = bisect.bisect_right(index_offsets, offset) - 1
            start = index[k].position if k >= 0 else 0
            found = batches.first_ending_at_or_after(start, offset)
            if isinstance(found, KdumpError):
                error = found.located(path, i * TIME_ENTRY.size)
                break
            if found is None:
                not_found.append(f"Indexed offset: {offset}, found log offset: -1")
            elif found.last_offset != offset:
                not_found.append(f"Indexed offset: {offset}, found log offset: {found.last_offset}")
            else:
                behind.reached(found.position)
                largest = batches.max_record_timestamp(found)
                if isinstance(largest, KdumpError):
                    error = largest.located(log_path, found.position)
                    break
                if largest != timestamp:
                    mismatch.append(f"  Index timestamp: {timestamp}, log timestamp: {largest}")
                if prev >= timestamp:
                    out_of_order.append(f"  Index timestamp: {timestamp}, Previously indexed timestamp: {prev}")
            if not opts.verify_only:
                lines.append(f"timestamp: {timestamp} offset: {offset}")
            prev = timestamp
    where = absolute(path)
    summary = []
    for kind, header, block in ((SUMMARY_TIME_MISMATCH, f"Found timestamp mismatch in :{where}", mismatch),
                                (SUMMARY_TIME_OUT_OF_ORDER, f"Found out of order timestamp in :{where}", out_of_order),
                                (SUMMARY_TIME_NOT_FOUND, f"The following indexed offsets are not found in :{where}",
                                 not_found)):
        if block:
            summary.append((kind, [header, *block]))
    return IndexView(lines, summary, error)


class _Follower:
    """Lets a large segment's mapping drop the pages behind entries already checked (memory stays
    flat), as a sequential walk does; entries come in position order."""

    def __init__(self, buf) -> None:
        self.follow = getattr(buf, "follow", None)
        self.next = FOLLOW_STEP

    def reached(self, position: int) -> None:
        if self.follow is not None and position >= self.next:
            self.follow(position)
            self.next = position + FOLLOW_STEP


class _Batches:
    """The segment's batches, walked once, looked up by position and offset."""

    def __init__(self, buf, size: int, limits: Limits, records_buf) -> None:
        self.buf = buf
        self.records_buf = records_buf
        self.size = size
        self.limits = limits
        self._walker = Walker(buf, 0, size, limits)
        self.list = list(self._walker)
        self.positions = [b.position for b in self.list]

    def first_ending_at_or_after(self, position: int, offset: int):
        if position > self.size:
            return CorruptDataError(f"offset index position {position} is past the end of the segment")
        k = bisect.bisect_left(self.positions, position)
        if k < len(self.list) and self.positions[k] == position:
            candidates = self.list[k:]
            stop = self._walker.stop
        else:       # a position inside a batch: walk from there, as Kafka reads it
            walker = Walker(self.buf, position, self.size, self.limits)
            candidates = list(walker)
            stop = walker.stop
        if stop is not None and stop.kind in _WALK_FAULTS:
            # Kafka lists every batch from the position on before it looks: a fault anywhere ends it.
            return CorruptDataError(stop.message, position=stop.position)
        return next((b for b in candidates if b.last_offset >= offset), None)

    def max_record_timestamp(self, batch):
        most = NO_TIMESTAMP
        try:
            for records in record_slices(self.records_buf, batch, self.limits):
                most = max([most, *(r.timestamp for r in records)])
        except KdumpError as e:
            return e
        return most


def damaged(path: str, kind: str, base_offset: int) -> bool:
    """kdump's own verdict on an index whose entries Kafka's tool reported above.

    Kafka's checks are heuristics that also flag states a broker accepts (a time index entry
    whose batch compaction removed), so the exit status follows `kdump index --verify` instead.
    """
    with opened_index_file(path, kind, base_offset) as parsed:      # walked, never held
        check = check_against_log(segment_log_path(path), kind, base_offset, parsed)
    return any(is_damage(x.kind) for x in check.findings)
