"""Planning an export: the log dir cut into *slices*, the unit of work of both engines.

A slice is a byte range of one segment that starts and ends on batch boundaries.
``plan()`` cuts big segments at positions taken from their ``.index`` (each cut is checked
to be a real batch with a valid CRC before it is used) and drops slices a
topic/partition/offset scope cannot touch; ``pack()`` groups small slices into tasks.
The local engine (``kdump.export.local``) and the Spark source (``kdump.spark.source``)
run the same plan, so they produce the same rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from kdump.errors import KdumpError
from kdump.storage import fs
from kdump.storage.levels import resolve
from kdump.storage.logdir import BATCH_KINDS, LOG, LogFile
from kdump.storage.mapped import file_size
from kdump.storage.record_reader import Filters
from kdump.storage.split import DEFAULT_SPLIT_BYTES, cuts


class Scope(NamedTuple):
    """What a query asks for: files and slices outside it are skipped, and ``read_slice`` drops
    the records outside the offset range (so a pushed-down filter is applied exactly)."""

    topics: frozenset | None = None           # None: any topic
    partitions: frozenset | None = None       # None: any partition
    partition_min: int | None = None
    partition_max: int | None = None
    start_offset: int | None = None           # inclusive
    end_offset: int | None = None             # inclusive

    def keeps_file(self, topic: str | None, partition: int | None) -> bool:
        if self.topics is not None and topic not in self.topics:
            return False
        if self.partitions is None and self.partition_min is None and self.partition_max is None:
            return True
        if partition is None:
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_min is not None and partition < self.partition_min:
            return False
        return not (self.partition_max is not None and partition > self.partition_max)

    def overlaps(self, low: int | None, high: int | None) -> bool:
        """Can records with offsets in [low, high] (None: unknown) be in the offset range?"""
        if self.start_offset is not None and high is not None and high < self.start_offset:
            return False
        return not (self.end_offset is not None and low is not None and low > self.end_offset)

    def record_filters(self) -> Filters:
        return Filters(start_offset=self.start_offset, end_offset=self.end_offset)

    @property
    def empty(self) -> bool:
        """A range no offset can satisfy (offset > 5 AND offset < 3)."""
        return (self.start_offset is not None and self.end_offset is not None
                and self.start_offset > self.end_offset)


class Slice(NamedTuple):
    """Batches of one file from byte ``start`` up to ``end`` (None: the end of the file)."""

    path: str                 # absolute, so a task on another machine or cwd finds it
    kind: str
    topic: str | None
    partition: int | None
    base_offset: int | None   # the segment's, from its name
    leftover: str | None
    start: int
    end: int | None
    low: int | None           # every record of the slice has an offset in [low, high] (if known)
    high: int | None
    nbytes: int = 0           # bytes of the file the slice covers (for packing small slices into a task)
    served_to: int | None = None  # records above this offset are another file's to give (a remote
    #                               segment the local log takes over from: kdump.check.tiered)

    @property
    def segment(self) -> str:
        return os.path.basename(self.path)

    def log_file(self) -> LogFile:
        return LogFile(self.path, self.kind, self.topic, self.partition, self.base_offset, self.leftover)


def plan(paths: Iterable[str], split_bytes: int = DEFAULT_SPLIT_BYTES, scope: Scope = Scope(),
         unlisted: list[KdumpError] | None = None) -> list[Slice]:
    """The slices of every segment (and KRaft snapshot) under ``paths``, in dump order.

    Raises a UsageError/InputError for a PATH that names nothing readable, as the other
    commands do; damage inside files is left to the readers. ``unlisted``: where a partition
    dir that cannot be listed goes (the rest is planned), instead of raising.
    """
    # The log dir's bootstrap.checkpoint holds no topic's records: not exported (named alone, it is).
    return plan_files(resolve(list(paths), kinds=BATCH_KINDS, errors=unlisted, left_out=[]), split_bytes, scope)


def plan_files(files: list[LogFile], split_bytes: int = DEFAULT_SPLIT_BYTES, scope: Scope = Scope(),
               upper: dict[str, int] | None = None, cuts: dict[str, int] | None = None) -> list[Slice]:
    """``plan`` of files already chosen (a tiered partition's whole log: ``kdump.run.tiered``).
    ``upper``: the last offset of segments whose bound no neighbour in their directory gives
    (a remote segment's, from its metadata); ``cuts``: the last offset read from a segment
    whose later offsets another file gives (its slices' ``served_to``)."""
    if scope.empty:
        return []
    upper = {**_segment_upper_bounds(files), **(upper or {})}
    cuts = cuts or {}
    out: list[Slice] = []
    for f in files:
        if not scope.keeps_file(f.topic, f.partition):
            continue
        live = f.kind == LOG and f.leftover is None and f.base_offset is not None
        low = f.base_offset if live else None
        high = upper.get(f.path) if live else None
        cut = cuts.get(f.path)
        if cut is not None:
            high = cut if high is None else min(high, cut)
        if live and not scope.overlaps(low, high):
            continue
        path = fs.abspath(f.path)
        size = file_size(path)
        pieces = _split(f, size, split_bytes) if live and split_bytes > 0 else [(0, None, None, None)]
        for start, end, slow, shigh in pieces:
            s_low = low if slow is None else slow
            s_high = high if shigh is None else shigh
            if cut is not None:
                if s_low is not None and s_low > cut:
                    continue            # the piece holds only offsets another file gives
                s_high = cut if s_high is None else min(s_high, cut)
            if scope.overlaps(s_low, s_high):
                out.append(Slice(path, f.kind, f.topic, f.partition, f.base_offset, f.leftover, start, end,
                                 s_low, s_high, (size if end is None else end) - start, cut))
    return out


def pack(slices: list[Slice], target_bytes: int, min_groups: int = 1) -> list[list[Slice]]:
    """Group consecutive slices into tasks of about ``target_bytes``, at least ``min_groups`` of them.

    A log dir holds many small segments (and empty active ones); a task each would cost
    more in scheduling than in reading. Slices of split segments are already about
    ``target_bytes`` and stay alone; a small tree is still spread over ``min_groups`` tasks.
    """
    if target_bytes <= 0:
        return [[sl] for sl in slices]
    weights = [max(sl.nbytes, 4096) for sl in slices]     # an empty file still costs an open and a walk
    target = min(target_bytes, max(4096, -(-sum(weights) // max(1, min_groups))))
    groups: list[list[Slice]] = []
    current: list[Slice] = []
    total = 0
    for sl, weight in zip(slices, weights):
        current.append(sl)
        total += weight
        if total >= target:
            groups.append(current)
            current, total = [], 0
    if current:
        groups.append(current)
    return groups


def _segment_upper_bounds(files: list[LogFile]) -> dict[str, int]:
    """For each live segment, the last offset it may hold: the next segment's base - 1."""
    by_dir: dict[str, list[LogFile]] = {}
    for f in files:
        if f.kind == LOG and f.leftover is None and f.base_offset is not None:
            by_dir.setdefault(os.path.dirname(fs.abspath(f.path)), []).append(f)
    out = {}
    for segs in by_dir.values():
        segs.sort(key=lambda f: f.base_offset)
        for a, b in zip(segs, segs[1:]):
            out[a.path] = b.base_offset - 1
    return out


def _split(f: LogFile, size: int, split_bytes: int) -> list[tuple[int, int | None, int | None, int | None]]:
    """(start, end, low, high) pieces of a segment cut at ``.index`` positions
    (``storage.split.cuts``). ``low``/``high`` are offset bounds from neighbouring entries
    (None: the segment's own)."""
    pieces = []
    start, low = 0, None
    for position, entry_offset, before in cuts(f, size, split_bytes):
        # Records before the cut are below the cut batch's base, so at most its entry offset.
        pieces.append((start, position, low, entry_offset))
        start, low = position, before
    pieces.append((start, None, low, None))
    return pieces
