"""Which live remote segments RemoteLogManager reads: the leader-epoch lineage rule.

``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs``: a remote segment is part of the
partition's log only if its leader epochs (``segmentLeaderEpochs``, epochs without records
dropped as ``buildFilteredLeaderEpochMap`` does) follow the partition's leader-epoch
lineage (the local ``leader-epoch-checkpoint``). Two live uploads of the same offsets (a
leader change during an upload): the one within the lineage is read, and of several the
one whose COPY_SEGMENT_FINISHED came last (the metadata cache puts each later one in the
earlier one's place).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


def filtered(epochs) -> list[tuple[int, int]]:
    """(epoch, start offset) in epoch order, an epoch dropped when the next starts at the same offset."""
    entries = sorted(epochs)
    return [(e, o) for i, (e, o) in enumerate(entries) if i + 1 == len(entries) or entries[i + 1][1] != o]


def within_lineage(epochs, end_offset: int, lineage: list[tuple[int, int]], log_end_offset: int | None) -> bool:
    """The rule, over (epoch, start offset) pairs; ``lineage`` sorted by epoch;
    ``log_end_offset`` None: not known, not checked."""
    seg = filtered(epochs)
    if not seg or not lineage:
        return True             # nothing to judge by (no epochs listed, or no local checkpoint)
    keys = [e for e, _ in lineage]
    starts = dict(lineage)
    seg_map = dict(seg)
    seg_keys = [e for e, _ in seg]
    last = seg_keys[-1]
    if last < keys[0] or last > keys[-1]:
        return False
    i = bisect_left(seg_keys, keys[0])
    if i == len(seg_keys):
        return False
    first = seg_keys[i]
    for epoch in seg_keys[i:]:
        offset = seg_map[epoch]
        if epoch not in starts:
            return False
        k = bisect_left(keys, epoch)
        if epoch == first and k > 0 and offset < starts[epoch]:
            return False
        nxt = keys[k + 1] if k + 1 < len(keys) else None
        if epoch == last and nxt is not None and end_offset > starts[nxt] - 1:
            return False
        if epoch != last:
            j = bisect_right(seg_keys, epoch)
            if nxt is None or (nxt, starts[nxt]) != (seg_keys[j], seg_map[seg_keys[j]]):
                return False
    return log_end_offset is None or end_offset < log_end_offset


def choose(live: list, lineage: list[tuple[int, int]], log_end_offset: int | None) -> tuple[list, list, list]:
    """(chosen, duplicates, outside): the live segments the log takes, in offset order; the
    uploads of the same offsets left for another; those outside the lineage (left out too,
    unless nothing else holds their offsets: their records are then the only copy)."""
    inside = [m for m in live if within_lineage(m.epochs, m.end_offset, lineage, log_end_offset)]
    outside = [m for m in live if m not in inside]
    chosen: list = []
    duplicates: list = []
    # a later finished upload takes an earlier one's place where their offsets meet
    for m in sorted(inside, key=lambda m: m.metadata_offset):
        clash = [c for c in chosen if c.start_offset <= m.end_offset and m.start_offset <= c.end_offset
                 and (c.start_offset, c.end_offset) == (m.start_offset, m.end_offset)]
        for c in clash:
            chosen.remove(c)
            duplicates.append(c)
        chosen.append(m)
    for m in outside:           # the only holder of its offsets: kept, so that nothing is lost
        if not any(c.start_offset <= m.start_offset and m.end_offset <= c.end_offset for c in chosen):
            chosen.append(m)
    chosen.sort(key=lambda m: (m.start_offset, m.end_offset))
    return chosen, duplicates, outside
