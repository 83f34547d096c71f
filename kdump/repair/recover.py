"""``kdump recover``: a broker's startup recovery carried out (the plan is
``check.loader_rule.plan_partition``), and salvage.

Where the broker deletes, kdump moves the file into a quarantine directory: nothing is
deleted. ``apply_plan`` performs the steps in an order chosen so that a run killed at any
point and then run again (planning afresh from the disk) reaches the same final state:
decisions that depend on a file are taken before that file is touched (unfinished swaps
before the ``.cleaned`` files that reveal them, later segments before the cut that makes
them "later", the ``.log.swap`` first among the swap renames).

``salvage`` copies every intact batch found past the damage (and in the segments that
would go away) into new valid segments with indexes, so the data can be replayed.
"""

from __future__ import annotations

import os
import time

from kdump.check.broker_rule import encode_batch_indexes, index_bytes
from kdump.check.loader_rule import plan_partition
from kdump.check.recovery_plan import (
    CREATE_SEGMENT,
    QUARANTINE,
    REBUILD,
    RENAME,
    TRIM_EPOCHS,
    TRUNCATE,
    WRITE_TXN,
    LogDirState,
    PartitionPlan,
    RecoverOptions,
    Step,
)
from kdump.errors import InputError, KdumpError, UsageError, WriteError
from kdump.format.walk import Walker
from kdump.repair.cut import keep_bytes, truncate_log
from kdump.repair.indexes import rebuild_changes
from kdump.storage import fs
from kdump.storage import logdir as K
from kdump.storage.mapped import MappedFile, read_small
from kdump.storage.names import INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX, offset_name, offset_path
from kdump.storage.safewrite import (
    QUARANTINE_PREFIX,
    Change,
    atomic_write,
    copy_file,
    fsync_dir,
    is_cross_device,
    make_dir_like,
    read_range,
    refuse_symlink,
    remove_stale_temps,
    same_content,
)
from kdump.storage.writelock import log_dir_of

# -- finding the partitions -------------------------------------------------------------------

def partition_dirs(path: str) -> list[tuple[str, str | None]]:
    """(partition dir, its log dir) for a PATH that is a partition dir or a log dir."""
    if not fs.exists(path):
        raise InputError("cannot read: no such file or directory", file=path)
    if not fs.isdir(path):
        raise UsageError("recover works on directories (a partition or a log dir)", file=path)
    name = os.path.basename(os.path.normpath(path))
    parent = log_dir_of(path)     # its checkpoints are in the log dir it really lives in
    # The listing decides, as for every command (a log dir may be called kafka-1); a partition's
    # own quarantine folders do not make it a log dir.
    entries = [e for e in K.list_directory(path) if not e.name.startswith(QUARANTINE_PREFIX)]
    if K.is_partition_dir(entries, name):
        return [(path, parent)]
    out = []
    for e in sorted(fs.scandir(path), key=lambda e: e.name):
        if e.is_dir(follow_symlinks=False) and K.parse_partition_dir(e.name) is not None:
            out.append((e.path, path))
    if not out:
        raise UsageError("no partition directories found here", file=path)
    out.sort(key=lambda d: (K.parse_partition_dir(os.path.basename(d[0])) or ("", 0, None))[:2])
    return out


# -- applying ---------------------------------------------------------------------------------

def default_quarantine(directory: str, stamp: str) -> str:
    """Inside the partition directory: LogLoader ignores subdirectories there, whereas any
    extra directory in a log dir stops the broker ("... is not in the form of topic-partition")."""
    return os.path.join(directory, QUARANTINE_PREFIX + stamp)


def timestamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def check_quarantine_root(root: str, logdirs: set[str]) -> None:
    parent = os.path.dirname(os.path.realpath(root))
    if any(os.path.realpath(d) == parent for d in logdirs if d):
        raise UsageError("a directory directly inside a log dir would stop the broker from starting (it is not "
                         "a topic-partition directory); choose another place", file=root)


def _ensure_dir(path: str, like: str) -> None:
    if os.path.islink(path):
        raise WriteError("is a symbolic link; kdump does not write through links", file=path)
    if not os.path.isdir(path):
        try:
            make_dir_like(path, like)
        except OSError as e:
            raise WriteError(f"cannot create: {e.strerror}", file=path) from None
        fsync_dir(os.path.dirname(path))


def move_to(src: str, dest_dir: str) -> str:
    """Move a file into ``dest_dir`` under a free name; across filesystems copy then unlink."""
    refuse_symlink(src)
    _ensure_dir(dest_dir, os.path.dirname(src))
    name = os.path.basename(src)
    target = os.path.join(dest_dir, name)
    n = 1
    while os.path.lexists(target):
        if same_content(target, read_range(src, 0, os.path.getsize(src))):
            os.unlink(src)              # an interrupted cross-device move already copied it
            fsync_dir(os.path.dirname(src))
            return target
        n += 1
        target = os.path.join(dest_dir, f"{name}.{n}")
    try:
        os.rename(src, target)
    except OSError as e:
        if not is_cross_device(e):
            raise WriteError(f"cannot move to {target}: {e.strerror}", file=src) from None
        copy_file(src, target)
        os.unlink(src)
    fsync_dir(dest_dir)
    fsync_dir(os.path.dirname(src))
    return target


def apply_plan(plan: PartitionPlan, quarantine_dir: str, opts: RecoverOptions | None = None) -> list[Change]:
    """Carry out the plan's steps in phase order; see the module docstring for why this order.

    The caller holds the partition's lock (``writelock``), whose taking removed the temporary
    files of interrupted runs from the partition and the quarantine directories inside it;
    those of a quarantine directory elsewhere (``--quarantine``) are removed here."""
    opts = opts or RecoverOptions()
    d = plan.directory
    changes = [] if os.path.dirname(os.path.abspath(quarantine_dir)) == os.path.abspath(d) \
        else remove_stale_temps(quarantine_dir)
    for step in sorted(plan.actions, key=lambda s: s.phase):
        if step.action == QUARANTINE:
            if os.path.lexists(step.path):
                target = move_to(step.path, quarantine_dir)
                changes.append(Change("moved", step.path, f"to {target}: {step.reason}"))
        elif step.action == RENAME:
            dest = os.path.join(d, step.target)
            if not os.path.lexists(step.path):
                continue
            refuse_symlink(step.path)
            if os.path.lexists(dest):
                # The original the swap replaces is moved in phase 3; anything else is kept too.
                moved = move_to(dest, quarantine_dir)
                changes.append(Change("moved", dest, f"to {moved}: replaced by {os.path.basename(step.path)}"))
            os.rename(step.path, dest)
            fsync_dir(d)
            changes.append(Change("renamed", step.path, f"to {step.target}"))
        elif step.action == TRUNCATE:
            size = os.path.getsize(step.path)
            changes += truncate_log(step.path, step.position, size)
        elif step.action == CREATE_SEGMENT and not os.path.lexists(step.path):
            # One empty file: a rerun finds it made. Its indexes are what the broker makes for
            # any segment that lacks them when it opens it (empty, for an empty segment).
            like = os.path.join(quarantine_dir, step.target) if step.target else None
            atomic_write(step.path, b"", like=like if like and os.path.isfile(like) else None)
            changes.append(Change("wrote", step.path, step.reason))
    # Indexes and the rest are chosen again from the disk as it is now.
    changes += _finish_indexes(plan, opts, quarantine_dir)
    for step in plan.actions:
        if step.action == WRITE_TXN and step.path in plan.txnindexes:
            data = plan.txnindexes[step.path]
            if os.path.lexists(step.path):
                if same_content(step.path, [data]):
                    continue
                keep_copy(step.path, quarantine_dir)
            atomic_write(step.path, data, like=offset_path(d, step.offset, LOG_SUFFIX))
            changes.append(Change("wrote", step.path, f"{len(data) // 34} aborted transaction(s), as recovery "
                                                      f"writes them"))
        elif step.action == TRIM_EPOCHS:
            changes += _write_epochs(step.path, plan.epochs, quarantine_dir)
    return changes


def _finish_indexes(plan: PartitionPlan, opts: RecoverOptions, quarantine_dir: str) -> list[Change]:
    vopts = opts.verify_options()
    changes = []
    for step in plan.actions:
        if step.action != REBUILD:
            continue
        base = step.offset
        log = offset_path(plan.directory, base, LOG_SUFFIX)
        if not os.path.isfile(log):
            continue
        ext = INDEX_SUFFIX if step.path.endswith(INDEX_SUFFIX) else TIMEINDEX_SUFFIX
        if os.path.exists(step.path):
            try:
                data = read_small(step.path, 256 << 20)
            except KdumpError:          # too large to read (as planned): rebuilt all the same
                data = None
            try:
                want = index_bytes(log, base, opts.index_interval_bytes, vopts.limits)[0 if ext == INDEX_SUFFIX else 1]
            except KdumpError:
                want = None
            if data is not None and data == want:
                continue                # already what recovery writes (a rerun after an interruption)
            keep_copy(step.path, quarantine_dir)       # derived data, but nothing is thrown away
        changes += rebuild_changes(log, base, [ext], opts.index_interval_bytes, vopts.limits)
    return changes


def keep_copy(path: str, quarantine_dir: str) -> str:
    """Copy a file about to be rewritten into the quarantine (once: a rerun finds the same copy).
    Streamed, holes and all: a sparse file stays sparse."""
    refuse_symlink(path)        # it is about to be rewritten: named as itself, not as its copy
    size = os.path.getsize(path)
    earlier = _kept_by_an_earlier_run(path, size, quarantine_dir)
    if earlier is not None:
        return earlier
    _ensure_dir(quarantine_dir, os.path.dirname(path))
    copy = os.path.join(quarantine_dir, os.path.basename(path))
    return keep_bytes(path, 0, size, copy, lambda n: f"{copy}.{n}")[0]


def _kept_by_an_earlier_run(path: str, size: int, quarantine_dir: str) -> str | None:
    """A copy with these bytes in another quarantine directory of the partition: a run killed
    after its copy, before the rewrite, kept it there (its rerun has a quarantine of its own)."""
    directory, name = os.path.split(path)
    try:
        with os.scandir(directory) as it:
            others = sorted(e.path for e in it if e.name.startswith(QUARANTINE_PREFIX)
                            and e.is_dir(follow_symlinks=False) and e.path != quarantine_dir)
    except OSError:
        return None
    for other in others:
        copy, n = os.path.join(other, name), 1          # the names keep_copy gives: name, name.2, ...
        while os.path.lexists(copy):
            if os.path.getsize(copy) == size and same_content(copy, read_range(path, 0, size)):
                return copy
            n += 1
            copy = os.path.join(other, f"{name}.{n}")
    return None


def _write_epochs(path: str, entries: list[tuple[int, int]], quarantine_dir: str) -> list[Change]:
    from kdump.format.checkpoint import encode_leader_epochs

    if not os.path.isfile(path):
        return []
    data = encode_leader_epochs(entries)
    if same_content(path, [data]):
        return []
    copy = keep_copy(path, quarantine_dir)
    atomic_write(path, data)
    return [Change("wrote", path, f"{len(entries)} leader epoch entr{'y' if len(entries) == 1 else 'ies'}; the old "
                                  f"file is in {copy}")]


# -- salvage ----------------------------------------------------------------------------------

def salvage(plan: PartitionPlan, out_root: str, opts: RecoverOptions | None = None) -> list[Change]:
    """Copy the intact batches past the damage into new segments under ``out_root/<partition>/``.

    A new segment starts wherever offsets would not increase (or would overflow the
    segment's int32 range), so every file written is a valid segment with its indexes.
    Rerunning writes nothing new: a file with the same bytes is left as it is. The bytes
    are streamed from the sources (a salvaged segment is never held in memory whole).
    """
    opts = opts or RecoverOptions()
    out_dir = os.path.join(out_root, os.path.basename(os.path.normpath(plan.directory)))
    changes = []
    for seg, batches in _salvaged_segments(plan):
        base = seg[0][3]
        if base < 0:
            continue

        def data(seg=seg):
            for p, pos, size, _, _ in seg:
                yield from read_range(p, pos, pos + size)

        size = sum(r[2] for r in seg)
        target_dir = out_dir
        k = 1
        name = offset_name(base, LOG_SUFFIX)
        while os.path.exists(os.path.join(target_dir, name)) and \
                not same_content(os.path.join(target_dir, name), data()):
            k += 1
            target_dir = os.path.join(out_dir, f"run-{k}")
        log = os.path.join(target_dir, name)
        if os.path.exists(log):
            continue
        _ensure_dir(target_dir, plan.directory)
        remove_stale_temps(target_dir)
        # Indexes first, the .log last: a half-finished salvage never shows a segment without them.
        index, timeindex = encode_batch_indexes(_batches_of(seg), base, opts.index_interval_bytes)
        atomic_write(offset_path(target_dir, base, INDEX_SUFFIX), index)
        atomic_write(offset_path(target_dir, base, TIMEINDEX_SUFFIX), timeindex)
        atomic_write(log, data())
        changes.append(Change("wrote", log, f"{batches} salvaged batches, offsets {seg[0][3]}..{seg[-1][4]}, "
                                            f"{size} bytes, with .index and .timeindex"))
    return changes


def _salvaged_segments(plan: PartitionPlan):
    """(regions, batch count) of each segment salvage writes; a region is (path, position,
    size, first offset, last offset) of adjacent intact batches of one source."""
    from kdump.format.index import INT32_MAX

    current: list = []
    count = 0
    for path, regions in plan.salvage_sources:
        with MappedFile(path) as m:
            for start, end in regions:
                for b in Walker(m.buf, start, end):
                    if not b.crc_valid:
                        break
                    first = b.base_offset if b.base_offset is not None else b.last_offset
                    if current and (first <= current[-1][4] or b.last_offset - current[0][3] > INT32_MAX):
                        yield current, count
                        current, count = [], 0
                    last = current[-1] if current else None
                    if last is not None and last[0] == path and last[1] + last[2] == b.position:
                        current[-1] = (path, last[1], last[2] + b.size, last[3], b.last_offset)
                    else:
                        current.append((path, b.position, b.size, first, b.last_offset))
                    count += 1
    if current:
        yield current, count


def _batches_of(seg):
    """The batches of a salvaged segment's regions, read again from their sources."""
    for p, pos, size, _, _ in seg:
        with MappedFile(p) as m:
            yield from Walker(m.buf, pos, pos + size)


__all__ = ["PartitionPlan", "Step", "LogDirState", "RecoverOptions", "plan_partition", "apply_plan", "salvage",
           "partition_dirs", "default_quarantine", "check_quarantine_root", "timestamp"]
