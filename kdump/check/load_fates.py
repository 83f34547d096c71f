"""What the next broker start does to a partition's files, as verify reports it: the one loader
rule (``check.loader_rule.plan_partition``, on the scans verify already made) read back as
findings on the files it names. Today: the producer snapshots the load deletes
(``check.loader_snapshots``), on both shutdown paths.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kdump import findings as F
from kdump.check.file_report import FileReport
from kdump.check.logdir_checkpoints import partitions_in, reading
from kdump.check.partition import VerifyOptions, check_directory
from kdump.model import Finding
from kdump.storage import fs
from kdump.storage.logdir import PRODUCER_SNAPSHOT, LogFile, parse_partition_dir
from kdump.storage.names import SNAPSHOT_SUFFIX

if TYPE_CHECKING:
    from kdump.check.recovery_plan import LogDirState

_WHY = "producer snapshot: "        # how the loader's producer-state reasons start (loader_rewrites)


def verify_directory(directory: str, requested: list[LogFile], opts: VerifyOptions) -> list[FileReport]:
    """``check_directory``'s reports, with what the broker's next load does to the files named."""
    return add_load_fates(directory, check_directory(directory, requested, opts), opts)


def add_load_fates(directory: str, reports: list[FileReport], opts: VerifyOptions) -> list[FileReport]:
    """``reports`` of one partition dir, with ``snapshot_deleted`` on each producer snapshot the
    broker's load deletes."""
    if not any(r.kind == PRODUCER_SNAPSHOT for r in reports) or fs.is_remote(directory):
        return reports
    # (the loader's rule imported only here: a run of partitions without snapshots starts without it)
    from kdump.check.loader_rule import plan_partition
    from kdump.check.recovery_plan import QUARANTINE, RecoverOptions

    by_path = {r.file: r for r in reports}
    norm = fs.normpath(directory)
    if parse_partition_dir(os.path.basename(norm)) is None:
        return reports
    scans = {r.file: r.scan for r in reports if r.scan is not None}
    plan = plan_partition(directory, _state(os.path.dirname(norm), opts.offsets),
                          RecoverOptions(max_message_size=opts.max_message_size,
                                         index_interval_bytes=opts.index_interval_bytes, indexes=False), scans)
    deleted = {step.path: step for step in plan.steps if step.action == QUARANTINE and step.path in by_path}
    for r in reports:
        if r.kind != PRODUCER_SNAPSHOT or not r.file.endswith(SNAPSHOT_SUFFIX):
            continue        # (a leftover .snapshot.deleted says so itself)
        step = deleted.get(r.file)
        if step is None:    # past the scanned end, but the load keeps it (a clean load's end is further)
            r.findings = [x for x in r.findings if x.kind != F.SNAPSHOT_STALE]
        elif not any(x.kind == F.SNAPSHOT_STALE for x in r.findings):   # (that one says it already)
            why = step.reason.removeprefix(_WHY)
            r.findings.append(Finding(F.SNAPSHOT_DELETED, None, step.offset,
                                      f"the broker's next load deletes this snapshot: {why}"))
    return reports


def _state(logdir: str, cache: dict) -> LogDirState:
    """The log dir's checkpoints and shutdown marker, for the partitions it holds (read once a run)."""
    from kdump.check.recovery_plan import LogDirState

    key = ("load_state", logdir)
    if key not in cache:
        cache[key] = LogDirState.read(logdir, partitions_in(logdir, cache), lambda p: reading(p, cache).table)
    return cache[key]
