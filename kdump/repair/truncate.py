"""``verify --truncate``: cut damaged segments, and leave no offset gap behind them.

A broker's recovery that cuts a segment deletes every later segment of the partition
(``LogLoader.recoverLog``): data after a cut is never served across a hole. ``verify
--truncate`` follows it, but keeps instead of deleting: before that segment is shortened,
every later segment (its ``.log`` and indexes) moves into ``kdump-quarantine-<time>/`` inside
the partition, as ``kdump recover --apply`` does. A segment the broker recovers where it opens
it (no ``.index``: ``check.recover_log``) is only cut, as the broker cuts it. The order (move,
then cut) means a run killed half-way and run again ends the same.
"""

from __future__ import annotations

import os

from kdump.check.recover_log import recovered_at_load, recovery_cut
from kdump.errors import KdumpError
from kdump.repair.cut import cut_position, repair_reports
from kdump.repair.recover import default_quarantine, move_to, timestamp
from kdump.storage import logdir as K
from kdump.storage.names import LOG_SUFFIX, offset_name
from kdump.storage.safewrite import Change

SEGMENT_KINDS = (K.LOG, K.INDEX, K.TIMEINDEX, K.TXNINDEX)


def truncate_reports(reports, opts) -> list[Change]:
    """Carry out ``verify --truncate`` for these ``check.partition.FileReport``s."""
    by_dir: dict[str, list] = {}
    for r in reports:
        by_dir.setdefault(os.path.dirname(r.file), []).append(r)
    changes: list[Change] = []
    keep = []
    for directory, reps in by_dir.items():
        cut = sorted(r.log.base_offset for r in reps
                     if cut_position(r, opts) is not None and r.log.base_offset is not None)
        # (recovered from its first segment: every damaged one is recovered, as with --full)
        at = recovery_cut(cut, set(cut), set(cut), {b for b in cut if recovered_at_load(directory, b)}).truncated_at
        if at is not None:
            moved = quarantine_later(directory, at)
            changes += moved
            gone = {c.path for c in moved}
            reps = [r for r in reps if r.file not in gone]
        keep += reps
    return changes + repair_reports(keep, opts)


def quarantine_later(directory: str, base: int) -> list[Change]:
    """Move the live segments after the one at ``base`` into the partition's quarantine."""
    try:
        files = K.partition_files(directory)
    except KdumpError:
        return []
    later = sorted((f for f in files if f.kind in SEGMENT_KINDS and f.leftover is None
                    and f.base_offset is not None and f.base_offset > base),
                   key=lambda f: (f.base_offset, f.kind != K.LOG, f.path))
    if not later:
        return []
    target = default_quarantine(directory, timestamp())
    out = []
    for f in later:
        moved = move_to(f.path, target)
        out.append(Change("moved", f.path, f"to {moved}: segment after the cut in {offset_name(base, LOG_SUFFIX)} "
                                           f"(a broker's recovery deletes it; kept here, no offset gap is left)"))
    return out
