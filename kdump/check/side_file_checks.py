"""``verify``'s findings for a partition's side files: producer snapshots, the
leader-epoch-checkpoint, the log dir's checkpoints and the other files a broker reads.

``kdump.check.partition`` calls these with what they need from the segments' scans (the log
end offset, the epochs on the batches); reading and describing the files is
``kdump.check.side_file_views``.
"""

from __future__ import annotations

import os

from kdump import findings as F
from kdump.check.broker_rule import log_start_past_end
from kdump.check.logdir_checkpoints import LOG_DIR_CHECKPOINTS, logdir_offsets, own_reading
from kdump.check.side_file_views import checkpoint_entries, describe, read_snapshot
from kdump.errors import KdumpError, RemoteError
from kdump.format.checkpoint import LEADER_EPOCH, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, EpochEntry
from kdump.model import Finding
from kdump.storage import logdir as K
from kdump.storage.logdir import LogFile

FALLBACK_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT)
_LOG_START = [name for name, _ in LOG_DIR_CHECKPOINTS].index(LOG_START_OFFSET_CHECKPOINT)


def log_start_findings(directory: str, leo: int | None, offsets: dict | None = None) -> list[Finding]:
    """The log dir's log-start-offset-checkpoint against this partition's log end offset
    (``offsets``: the run's reading of the log dir's checkpoints, kept across partitions)."""
    found = logdir_offsets(directory, offsets)
    lso = None if found is None else found[_LOG_START]
    if not log_start_past_end(leo, lso):
        return []
    return [Finding(F.LOG_START_PAST_END, None, lso,
                    f"the log-start-offset-checkpoint says {lso}, above the log end offset {leo}: the broker "
                    f"deletes every segment of this partition at startup")]


def snapshot_findings(f: LogFile, leo: int | None) -> list[Finding]:
    """A producer snapshot's CRC and structure, and (``leo`` known) whether it is past the log end."""
    try:
        snap, _ = read_snapshot(f.path)      # streamed: a 2 M-entry snapshot is 92 MB
    except KdumpError as e:
        return [Finding(F.SNAPSHOT_INVALID, e.position, f.base_offset, e.message)]
    out = []
    if not snap.crc_valid:
        out.append(Finding(F.SNAPSHOT_CRC, 2, f.base_offset, snap.crc_error or "CRC mismatch"))
    if leo is not None and f.base_offset is not None and f.base_offset > leo:
        out.append(Finding(F.SNAPSHOT_STALE, None, f.base_offset,
                           f"snapshot of offset {f.base_offset} is past the log end offset {leo}: the broker "
                           f"deletes it at startup"))
    return out


def leader_epoch_order(path: str) -> tuple[list[Finding], EpochEntry | None, EpochEntry | None]:
    """The leader-epoch-checkpoint streamed once (never held whole: a 10 M-entry file is 99 MB):
    (order findings, first entry, last entry); raises the located error if it does not parse."""
    out = []
    first = a = None
    for b in checkpoint_entries(path, LEADER_EPOCH):
        if a is None:
            first = b
        elif b.epoch <= a.epoch or b.start_offset < a.start_offset:
            out.append(Finding(F.LEADER_EPOCH_ORDER, None, b.start_offset,
                               f"entries out of order: epoch {a.epoch} at {a.start_offset} is followed by "
                               f"epoch {b.epoch} at {b.start_offset}"))
        a = b
    return out, first, a


def leader_epochs_against_log(path: str, first_epoch: int, last_epoch: int, scans, leo: int | None) -> list[Finding]:
    """The checkpoint streamed again, against the epochs on the batches of ``scans`` (the live
    segments' (LogFile, ScanReport) in offset order); ``leo``: the log end offset when every
    segment was scanned (entries past it are stale), else None."""
    log_epochs: list[tuple[int, int]] = []
    for _, s in scans:
        for epoch, start in s.epochs:
            if not log_epochs or epoch > log_epochs[-1][0]:
                log_epochs.append((epoch, start))
    wanted = {epoch for epoch, _ in log_epochs}
    by_epoch: dict[int, int] = {}
    late, first_late = 0, None
    for e in checkpoint_entries(path, LEADER_EPOCH):
        if e.epoch in wanted:
            by_epoch[e.epoch] = e.start_offset      # the last one of an epoch, as a dict of all would keep
        if leo is not None and e.start_offset > leo:
            late += 1
            first_late = e.start_offset if first_late is None else first_late
    out = []
    for epoch, start in log_epochs:
        ck = by_epoch.get(epoch)
        if ck is not None and start < ck and epoch != first_epoch:
            out.append(Finding(F.LEADER_EPOCH_MISMATCH, None, start,
                               f"batches of leader epoch {epoch} start at offset {start}, before the checkpoint's "
                               f"start offset {ck} for that epoch"))
        elif ck is None and epoch < last_epoch:
            out.append(Finding(F.LEADER_EPOCH_MISMATCH, None, start,
                               f"leader epoch {epoch} (from offset {start}) is in the log but not in the "
                               f"checkpoint"))
    if late:
        out.append(Finding(F.LEADER_EPOCH_STALE, None, first_late,
                           f"{late} entr{'ies' if late > 1 else 'y'} start past the log end offset "
                           f"{leo}: the broker drops them at startup"))
    return out


_TEXT_KINDS = (K.LEADER_EPOCH, K.OFFSET_CHECKPOINT, K.PARTITION_METADATA, K.META_PROPERTIES, K.QUORUM_STATE,
               K.CLEAN_SHUTDOWN)


def at_line(e: KdumpError) -> str:
    """Text files report a line number, not a byte position: it goes into the message. A remote
    store's failure is not the file's damage: it is raised on (the file is unreadable)."""
    if isinstance(e, RemoteError):
        raise e
    return e.message if e.position is None else f"{e.message} (line {e.position})"


def side_file_findings(f: LogFile, offsets: dict | None = None) -> list[Finding]:
    """What parsing the file shows (``offsets``: the run's reading of the log dir's
    checkpoints, which says it for those without reading them again)."""
    text = f.kind in _TEXT_KINDS
    # A broker that cannot read these falls back (recovers everything, starts at the first segment).
    kind = F.CHECKPOINT_INVALID if os.path.basename(f.path) in FALLBACK_CHECKPOINTS else F.INVALID_FILE
    try:
        read = own_reading(f, offsets)
        if read is None:
            desc = describe(f)
        elif read.error is not None:
            raise read.error
        else:
            return []       # (a checkpoint that parses has no problems to list)
    except KdumpError as e:
        return [Finding(kind, None, None, at_line(e)) if text else Finding(kind, e.position, None, e.message)]
    return [Finding(kind, None if text else pos, None, msg) for msg, pos in desc.problems]
