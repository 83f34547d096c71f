"""Partition directories whose log is gone: indexes or producer snapshots but no ``.log``.

Kafka never leaves a partition without a segment (retention keeps the active one), so
index or snapshot files with no segment at all mean the segments were removed or lost
(a copy that skipped ``*.log``, say).
``dump`` and ``verify`` say so in the same words and both count it as damage.
"""

from __future__ import annotations

import os

from kdump.errors import CorruptDataError
from kdump.storage.logdir import INDEX, LOG, PRODUCER_SNAPSHOT, TIMEINDEX, TXNINDEX, LogFile

SEGMENT_SIDE_KINDS = (INDEX, TIMEINDEX, TXNINDEX, PRODUCER_SNAPSHOT)


def logless_dirs(files: list[LogFile]) -> list[CorruptDataError]:
    """One error per directory among ``files`` that has segment side files but no ``.log``."""
    by_dir: dict[str, list[LogFile]] = {}
    for f in files:
        if f.topic is None:             # not a <topic>-<partition> directory: no log expected
            continue
        by_dir.setdefault(os.path.dirname(f.path), []).append(f)
    out = []
    for directory, found in by_dir.items():
        if any(f.kind == LOG for f in found):
            continue
        side = [f.name for f in found if f.kind in SEGMENT_SIDE_KINDS]
        if side:
            listed = ", ".join(side[:3]) + (f" and {len(side) - 3} more" if len(side) > 3 else "")
            out.append(CorruptDataError(f"no log segment (.log) here, only {listed}: the partition's log is missing",
                                        file=directory or "."))
    return out
