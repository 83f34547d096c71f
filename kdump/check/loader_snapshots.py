"""Which producer snapshots a broker's load deletes (Kafka 4.3.1's ``ProducerStateManager`` as
``LogLoader.load`` drives it), on both shutdown paths.

In the order the load runs:

1. each segment recovered (at load, a segment without ``.index``; after a crash, those from the
   recovery point on) gets a fresh ``ProducerStateManager`` from the files on disk, and
   ``UnifiedLog.rebuildProducerState(.., lastOffset = the segment's base, ..)`` calls
   ``truncateAndReload``: snapshots past that base, or at or below the checkpointed log start,
   go; then ``loadFromSnapshot`` deletes the latest ones that fail to read
   (``CorruptSnapshotException``) down to one that reads. After the segment's recovery,
   ``takeSnapshot`` writes one at its end (``recoverSegment``);
2. ``removeStraySnapshots(segment bases)``: of the snapshots at no segment base, only the
   latest is kept, and only when it lies above every base;
3. ``rebuildProducerState(.., lastOffset = LEO, hadCleanShutdown)``: with no snapshot left after
   a clean shutdown nothing more goes (empty ones are written); otherwise ``truncateAndReload``
   again with the new log start and the log end offset.

Snapshots Kafka writes itself (``takeSnapshot``) are new files, not kept ones: kdump writes
none, and ``written`` names their offsets.
"""

from __future__ import annotations

from typing import NamedTuple

_NEW = "new"        # a snapshot the load writes (always readable)


class SnapshotFate(NamedTuple):
    deleted: dict[int, str]         # pre-existing snapshot offset -> why the load deletes it
    written: set[int]               # offsets at which the load writes a snapshot of its own


def _truncate_and_reload(alive: dict[int, object], log_start: int, log_end: int, map_end: int,
                         deleted: dict[int, str], why: str) -> int:
    """``ProducerStateManager.truncateAndReload`` then ``loadFromSnapshot``: the last snapshot
    offset it is left with (the one loaded, or the log start)."""
    for off in sorted(alive):
        if off > log_end:
            _delete(alive, off, deleted, f"{why}: past offset {log_end}")
        elif off <= log_start:
            _delete(alive, off, deleted, f"{why}: at or below the log start offset {log_start}")
    if log_end == map_end:     # onLogStartOffsetIncremented: the latest snapshot, else the log start
        return max(alive, default=log_start)
    for off in sorted(alive, reverse=True):
        if alive[off] is False:
            _delete(alive, off, deleted, f"{why}: it does not read (CorruptSnapshotException)")
            continue
        return off
    return log_start


def _delete(alive: dict[int, object], off: int, deleted: dict[int, str], why: str) -> None:
    if alive.pop(off) is not _NEW:
        deleted.setdefault(off, why)


def remove_stray_snapshots(alive: dict[int, object], bases: list[int], deleted: dict[int, str]) -> None:
    """``ProducerStateManager.removeStraySnapshots``."""
    base_set = set(bases)
    stray = None
    for off in sorted(alive):
        if off in base_set:
            continue
        if stray is not None:
            _delete(alive, stray, deleted, f"stray snapshot (no segment starts at {stray}; a later one, {off}, "
                                           f"is the latest stray)")
        stray = off
    if stray is not None and bases and stray < max(bases):
        _delete(alive, stray, deleted, f"stray snapshot (no segment starts at {stray}, below the last segment "
                                       f"{max(bases)})")


def _reload_writes(start: int, last_offset: int, segments: list[int]) -> set[int]:
    """The snapshots ``UnifiedLog.rebuildProducerState`` writes reading from the snapshot it
    was left with up to ``last_offset``: at the bases of the last two segments it passes
    (``offsetsToSnapshot``), then at ``last_offset``."""
    marks = set(segments[-2:])
    return {b for b in marks if start <= b < last_offset} | ({last_offset} if start < last_offset else set())


def snapshots_at_load(snapshots: dict[int, bool], recovered: list[tuple[int, int | None, bool]],
                      bases_after: list[int], log_start_checkpoint: int, log_end: int, clean: bool,
                      bases_before: list[int] | None = None) -> SnapshotFate:
    """What the load does to the ``snapshots`` on disk (offset -> reads as Kafka reads it).

    ``recovered``: the segments recovered, in the order the load recovers them, as (base,
    next offset after recovery or None, recovered while the segments are loaded: only the
    ones below it are known then); ``bases_after``: the segment bases once the load has cut
    and deleted (``bases_before``: before); ``log_end``: its log end offset.
    """
    alive: dict[int, object] = dict(snapshots)
    deleted: dict[int, str] = {}
    written: set[int] = set()
    every = bases_before if bases_before is not None else bases_after
    for base, next_offset, at_load in recovered:      # LogLoader.recoverSegment
        why = f"the recovery of segment {base} (truncateAndReload to its base)"
        loaded = _truncate_and_reload(alive, log_start_checkpoint, base, 0, deleted, why)
        known = [b for b in every if b < base] if at_load else every
        for off in sorted(_reload_writes(loaded, base, known)):
            alive[off] = _NEW
            written.add(off)
        if next_offset is not None and next_offset > max(base, loaded):
            alive[next_offset] = _NEW
            written.add(next_offset)
    remove_stray_snapshots(alive, bases_after, deleted)
    if not alive and clean:
        return SnapshotFate(deleted, written | set(bases_after[-2:]) | {log_end})
    new_log_start = max(log_start_checkpoint, bases_after[0]) if bases_after else log_start_checkpoint
    loaded = _truncate_and_reload(alive, new_log_start, log_end, 0, deleted, "the load (truncateAndReload to the "
                                                                            f"log end offset {log_end})")
    written |= _reload_writes(loaded, log_end, bases_after)
    return SnapshotFate(deleted, written)
