"""Writing repairs safely: cut a segment where the broker would, keep what is cut, fix indexes.

Every step is atomic on its own and is chosen again from what is on disk, so a run
killed at any moment leaves either the old or the new state of each file, and running
the same command again finishes the job:

1. the bytes to cut are copied to ``<segment>.corrupt-<position>`` (temporary file in the
   same directory, fsync, ``os.replace``, fsync of the directory). A rerun finds the same
   damage at the same position, sees an identical copy already there and keeps it;
2. the segment is cut with ``ftruncate`` + fsync, as the broker's own recovery does
   (``FileRecords.truncateTo``): copying a 1 GiB segment to drop a torn tail would cost
   more than it protects, and a truncate is all-or-nothing;
3. only then are the indexes checked against the shortened log; those that disagree are
   rebuilt with the broker's recovery rule (``repair.indexes.rebuild_changes``, the one
   index rebuild) and replaced atomically, and ``.txnindex`` entries past the new end are dropped
   (``TransactionIndex.truncateTo``). An index that still agrees is left as it is, so an
   interrupted run and an uninterrupted one end with the same bytes.

Files are written as ``kdump.storage.safewrite`` writes every file (never through a symlink, the
saved copy checked before the cut); the caller holds the partition's lock
(``kdump.storage.writelock``), which also removed the temporary files of interrupted runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from kdump import findings as F
from kdump.errors import KdumpError, WriteError
from kdump.repair.indexes import rebuild_changes, trim_txnindex
from kdump.storage.names import CORRUPT_INFIX, INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX, offset_name
from kdump.storage.safewrite import (
    Change,
    atomic_write,
    link_count,
    read_range,
    refuse_symlink,
    same_content,
    write_error,
)

__all__ = ["CORRUPT_INFIX"]      # (its home is storage.names; imported from here too)

# -- cutting a segment ------------------------------------------------------------------------

def corrupt_name(log_path: str, position: int) -> str:
    return f"{log_path}{CORRUPT_INFIX}{position}"


def keep_bytes(path: str, start: int, end: int, first: str, numbered: Callable[[int], str],
               like: str | None = None) -> tuple[str, bool]:
    """A verified copy of bytes [start, end) of ``path`` at ``first``, or at ``numbered(n)`` for
    n = 2, 3...: the first name that is free or already holds exactly these bytes (the copy an
    interrupted run made: a rerun keeps it). Returns (copy, newly written)."""
    target, n = first, 1
    while os.path.lexists(target):
        if same_content(target, read_range(path, start, end)):
            return target, False
        n += 1
        target = numbered(n)
    atomic_write(target, read_range(path, start, end), like=like or path, verify=True)
    return target, True


def save_cut_bytes(log_path: str, position: int, size: int) -> tuple[str, bool]:
    """Copy bytes [position, size) of the segment beside it; (path, newly written).

    An existing ``.corrupt-<position>`` with the same bytes is the copy an interrupted
    run already made; one with other bytes is kept, and the new copy gets a ``-N`` suffix.
    """
    base = corrupt_name(log_path, position)
    return keep_bytes(log_path, position, size, base, lambda n: f"{base}-{n}")


def truncate_log(log_path: str, valid_bytes: int, expected_size: int) -> list[Change]:
    """Save the cut bytes, then cut the segment to ``valid_bytes``."""
    refuse_symlink(log_path)
    try:
        size = os.path.getsize(log_path)
    except OSError as e:
        raise write_error(log_path, "inspect", e) from None
    if size != expected_size:
        raise WriteError(f"the file changed since it was scanned ({expected_size} bytes then, {size} now); "
                         f"not truncated", file=log_path)
    if valid_bytes >= size:
        return []
    changes = []
    saved, new = save_cut_bytes(log_path, valid_bytes, size)
    again = "" if new else " (already saved by an earlier run)"
    changes.append(Change("saved", saved, f"{size - valid_bytes} bytes cut from {os.path.basename(log_path)} at "
                                          f"byte {valid_bytes}{again}"))
    links = link_count(log_path)
    if links > 1:       # a cut in place would shrink every other name of the file too
        atomic_write(log_path, read_range(log_path, 0, valid_bytes), verify=True)
        changes.append(Change("truncated", log_path, f"cut to {valid_bytes} bytes (was {size}); it had {links} hard "
                                                     f"links: written as a new file, the other links keep all "
                                                     f"{size} bytes"))
        return changes
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(log_path, flags)
    except OSError as e:
        raise write_error(log_path, "open for truncation", e) from None
    try:
        if os.fstat(fd).st_size != size:
            raise WriteError("the file changed while it was being repaired; not truncated", file=log_path)
        os.ftruncate(fd, valid_bytes)
        os.fsync(fd)
    except OSError as e:
        raise write_error(log_path, "truncate", e) from None
    finally:
        os.close(fd)
    changes.append(Change("truncated", log_path, f"cut to {valid_bytes} bytes (was {size})"))
    return changes


# -- verify --truncate --------------------------------------------------------------------------

def cut_position(r, opts) -> int | None:
    """Where ``verify --truncate`` cuts this report's segment, or None (not a live damaged segment)."""
    f, s = r.log, r.scan
    if f is None or f.kind != "log" or f.leftover is not None or s is None:
        return None
    broker_cut = getattr(opts, "broker_cut", False)
    cut_at = s.valid_bytes if broker_cut else s.intact_bytes
    if cut_at >= s.size:
        return None
    if f.base_offset is not None and kept_whole(f.path, f.base_offset):
        return None
    return cut_at


def kept_whole(log_path: str, base_offset: int) -> bool:
    """Does a broker starting on the log dir as it is keep this segment whole? After a clean
    shutdown it recovers no segment with an ``.index`` (``check.clean_load``), so neither
    ``--truncate`` nor ``--broker-cut`` cuts one, unless the partition's load fails: then the
    broker does not start on it at all, and the cut is what lets it load."""
    from kdump.check.clean_load import clean_verdict, kept_after_clean_shutdown

    if not kept_after_clean_shutdown(log_path, base_offset):
        return False
    verdict = clean_verdict(os.path.dirname(os.path.abspath(log_path)))
    return verdict is None or verdict.failure is None


def repair_reports(reports, opts) -> list[Change]:
    """Carry out ``verify --truncate`` for these ``check.partition.FileReport``s.

    Each damaged live segment is cut at its first damaged batch (``intact_bytes``; with
    ``opts.broker_cut`` exactly where the broker would, ``valid_bytes``); then, against the logs as
    they are now, the indexes of the segments named (and the index files named) are
    checked again and those that disagree are rebuilt or trimmed. After a clean shutdown the
    segments a broker keeps whole, and their indexes, are left as they are (``kept_whole``).
    """
    by_dir: dict[str, list] = {}
    for r in reports:
        by_dir.setdefault(os.path.dirname(r.file), []).append(r)
    changes: list[Change] = []
    for directory, reps in by_dir.items():
        for r in reps:
            cut_at = cut_position(r, opts)
            if cut_at is not None:
                changes += truncate_log(r.file, cut_at, r.scan.size)
        changes += fix_indexes(directory, reps, opts)
    return changes


def fix_indexes(directory: str, reps, opts) -> list[Change]:
    """Rebuild or trim the index files of ``directory`` that disagree with their logs now."""
    from kdump.check.partition import check_directory, index_damage
    from kdump.storage import logdir as K

    try:
        files = K.partition_files(directory)
    except KdumpError:
        return []
    bases = {r.log.base_offset for r in reps if r.log is not None and r.log.kind == K.LOG
             and r.log.leftover is None}

    named = {r.file for r in reps}
    targets = [f for f in files if f.kind in (K.INDEX, K.TIMEINDEX, K.TXNINDEX) and f.leftover is None
               and (f.base_offset in bases or f.path in named)]
    # After a clean shutdown the broker trusts the indexes of the segments it keeps.
    targets = [f for f in targets if f.base_offset is None or not kept_whole(
        os.path.join(directory, offset_name(f.base_offset, LOG_SUFFIX)), f.base_offset)]
    if not targets:
        return []
    fresh = check_directory(directory, targets, opts)
    rebuild: dict[int, list[str]] = {}
    logs = {f.base_offset: f for f in files if f.kind == K.LOG and f.leftover is None}
    changes: list[Change] = []
    for target, fr in zip(targets, fresh, strict=True):
        log = logs.get(target.base_offset)
        if log is None or not index_damage(fr):
            continue
        if target.kind == K.TXNINDEX:
            if any(x.kind == F.TXNINDEX_PAST_END for x in fr.findings):
                scan = opts.scan(log)
                ch = trim_txnindex(target.path, scan.next_offset)
                if ch is not None:
                    changes.append(ch)
            continue
        rebuild.setdefault(target.base_offset, []).append(INDEX_SUFFIX if target.kind == K.INDEX else TIMEINDEX_SUFFIX)
    for base, exts in sorted(rebuild.items()):
        changes += rebuild_changes(logs[base].path, base, exts, opts.index_interval_bytes, opts.limits)
    return changes
