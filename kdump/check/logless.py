"""Partition directories whose log is gone: indexes or producer snapshots but no ``.log``.

Kafka never leaves a partition without a segment (retention keeps the active one), so side
files with no segment at all mean the segments were removed or lost (a copy that skipped
``*.log``, say). A broker starts on it all the same: it deletes the indexes as orphans and
every producer snapshot, and makes an empty segment at the partition's log start offset
(``tests/kafka/test_broker_accepts.py``). Hence an anomaly, ``log_missing``, which ``verify``
reports on the first side file and ``dump`` as a note, in the same words.
"""

from __future__ import annotations

import os

from kdump.findings import LOG_MISSING
from kdump.model import Finding
from kdump.storage.logdir import INDEX, LOG, PRODUCER_SNAPSHOT, TIMEINDEX, TXNINDEX, LogFile

SEGMENT_SIDE_KINDS = (INDEX, TIMEINDEX, TXNINDEX, PRODUCER_SNAPSHOT)


def log_missing(files: list[LogFile]) -> Finding | None:
    """The ``log_missing`` finding of one partition directory's ``files``, or None."""
    if any(f.kind == LOG and f.leftover in (None, ".swap") for f in files):
        return None         # a .swap becomes the log at startup; .cleaned and .deleted go away
    # (only in a <topic>-<partition> directory is a log expected)
    side = [f.name for f in files if f.kind in SEGMENT_SIDE_KINDS and f.topic is not None]
    if not side:
        return None
    listed = ", ".join(side[:3]) + (f" and {len(side) - 3} more" if len(side) > 3 else "")
    return Finding(LOG_MISSING, None, None,
                   f"no log segment (.log) in this partition, only {listed}: the records they describe are gone; "
                   f"a broker deletes them and starts the partition empty at its log start offset")


def add_log_missing(context: list[LogFile], requested: list[LogFile], reports: list) -> list:
    """``reports`` (of ``requested``, files of one directory listing ``context``), the first
    side file's carrying the ``log_missing`` finding if the directory has no log."""
    missing = log_missing(context)
    if missing is not None:
        carrier = next((f.path for f in requested if f.kind in SEGMENT_SIDE_KINDS), None)
        for r in reports:
            if r.file == carrier:
                r.findings.append(missing)
    return reports


def logless_dirs(files: list[LogFile]) -> list[tuple[str, Finding]]:
    """(directory, finding) for each directory among ``files`` that has side files but no log."""
    by_dir: dict[str, list[LogFile]] = {}
    for f in files:
        by_dir.setdefault(os.path.dirname(f.path), []).append(f)
    found = ((d, log_missing(group)) for d, group in by_dir.items())
    return [(d or ".", finding) for d, finding in found if finding is not None]
