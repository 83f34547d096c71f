"""One index rebuild: fresh ``.index``/``.timeindex`` files from the log, as ``LogSegment.recover``
builds them (``kdump.check.broker_rule.build_indexes``), written atomically.

One policy for every command: a symbolic link is refused before any work, wherever it
points; each file is written through a temporary file, fsync, rename and fsync of the
directory (``kdump.storage.safewrite.write_file``); a file that already holds the bytes is
not touched; the old file is kept as ``.bak`` where the command promises it (``kdump
index --rebuild``, unless ``--no-backup``). ``verify --truncate`` and ``recover --apply``
write what the broker's recovery writes (time index: the batch's last offset) and keep no
``.bak`` in the partition (``recover`` keeps its copy in the quarantine).

``rebuild_indexes`` answers ``kdump index --rebuild``; ``rebuild_changes`` the repairs, as
``Change`` rows; ``trim_txnindex`` cuts a ``.txnindex`` to a new log end. The caller holds
the partition's lock (``kdump.storage.writelock``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, build_indexes, index_bytes
from kdump.check.indexes.forward_pass import segment_log_path, verify_time_index
from kdump.errors import InputError, KdumpError, UsageError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.index import ENTRY_SIZE as INDEX_SLOT
from kdump.format.index import encode_index
from kdump.format.timeindex import ENTRY_SIZE as TIME_SLOT
from kdump.format.timeindex import encode_timeindex, parse_timeindex
from kdump.storage.mapped import MappedFile, open_regular, read_small
from kdump.storage.names import INDEX_SUFFIX, TIMEINDEX_SUFFIX, filename_offset, sibling
from kdump.storage.safewrite import Change, atomic_write, refuse_symlink, write_file

KINDS = ("index", "timeindex")


class WrittenFile(NamedTuple):
    path: str
    kind: str               # "index" | "timeindex"
    entries: int
    status: str             # "created" | "replaced" | "unchanged"
    backup: str | None      # where the old file was kept


class RebuildResult(NamedTuple):
    log: str
    files: list[WrittenFile]
    time_offset: str        # the time-index convention written
    time_offset_from: str   # "existing file" | "option" | "default"
    interval_bytes: int
    valid_bytes: int        # where recovery would cut the log; the indexes cover [0, valid_bytes)
    log_size: int
    notes: list[str]


class _Fresh(NamedTuple):
    data: dict[str, bytes]      # kind -> the file's bytes
    counts: dict[str, int]      # kind -> entries
    time_offset: str
    time_offset_from: str
    valid_bytes: int
    log_size: int
    notes: list[str]


def existing_time_convention(log_buf, base_offset: int, timeindex_path: str,
                             limits: Limits = DEFAULT_LIMITS) -> str | None:
    """"last" or "record" when an existing ``.timeindex`` shows which one it follows, else None."""
    if not os.path.isfile(timeindex_path):
        return None
    try:
        with MappedFile(timeindex_path) as mf:
            tix = parse_timeindex(mf.buf, base_offset)
    except KdumpError:
        return None
    check = verify_time_index(log_buf, base_offset, tix, limits=limits)
    return check.convention if check.convention in ("last", "record") else None


def _paths(log: str) -> dict[str, str]:
    return {"index": sibling(log, INDEX_SUFFIX), "timeindex": sibling(log, TIMEINDEX_SUFFIX)}


def _fresh(log: str, base: int, time_offset: str | None, interval_bytes: int, limits: Limits,
           existing: bool = True) -> _Fresh:
    """The new files' bytes. ``time_offset`` None: follow the existing ``.timeindex`` when it
    shows a convention, else "last". ``existing``: look at the existing ``.timeindex`` at all."""
    notes: list[str] = []
    with MappedFile(log) as mf:
        buf = mf.buf
        source = "option"
        conv = time_offset
        found = existing_time_convention(buf, base, _paths(log)["timeindex"], limits) if existing else None
        if conv is None:
            conv, source = (found, "existing file") if found else ("last", "default")
        elif found and found != conv:
            notes.append(f"the existing .timeindex follows the '{found}' convention; writing '{conv}' as asked")
        offsets, times, valid = build_indexes(buf, base, interval_bytes, conv, limits)
        size = len(buf)
    data = {"index": encode_index(offsets, base), "timeindex": encode_timeindex(times, base)}
    return _Fresh(data, {"index": len(offsets), "timeindex": len(times)}, conv, source, valid, size, notes)


def rebuild_indexes(segment_path: str, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                    time_offset: str | None = None, backup: bool = True, kinds: tuple[str, ...] = KINDS,
                    limits: Limits = DEFAULT_LIMITS) -> RebuildResult:
    """``kdump index --rebuild``: write fresh ``.index``/``.timeindex`` files for a segment.

    ``segment_path``: the ``.log`` (or one of its index files). ``time_offset``: "last" or
    "record" forces the time-index convention; None follows the existing ``.timeindex``
    when it shows one, else "last". The old file is kept as ``.bak`` unless ``backup`` is
    False (the module docstring has the rest of the policy).
    """
    if interval_bytes < 0:
        raise UsageError(f"--interval-bytes must not be negative ({interval_bytes})")
    if time_offset not in (None, "last", "record"):
        raise UsageError(f"time offset must be 'last' or 'record', not {time_offset!r}")
    log = segment_log_path(segment_path)
    base = filename_offset(log)
    if base is None:
        raise UsageError("the segment's name does not start with its base offset", file=log)
    if not os.path.lexists(log):
        raise InputError("cannot rebuild: the segment's .log is missing", file=log)
    os.close(open_regular(log))         # a link loop, a FIFO...: one located error
    paths = _paths(log)
    for kind in kinds:
        refuse_symlink(paths[kind])         # before any work
    fresh = _fresh(log, base, time_offset, interval_bytes, limits, existing="timeindex" in kinds)
    notes = fresh.notes
    if fresh.valid_bytes < fresh.log_size:
        notes.append(f"the log has {fresh.log_size - fresh.valid_bytes} bytes after the last valid batch (byte "
                     f"{fresh.valid_bytes}); the new indexes cover only what a broker's recovery keeps")
    written = []
    for kind in kinds:
        status, bak = write_file(paths[kind], fresh.data[kind], backup, like=log)
        written.append(WrittenFile(paths[kind], kind, fresh.counts[kind], status, bak))
    return RebuildResult(log, written, fresh.time_offset, fresh.time_offset_from, interval_bytes, fresh.valid_bytes,
                         fresh.log_size, notes)


def rebuild_changes(log_path: str, base_offset: int, which: Iterable[str] = (INDEX_SUFFIX, TIMEINDEX_SUFFIX),
                    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                    limits: Limits = DEFAULT_LIMITS) -> list[Change]:
    """``verify --truncate`` and ``recover --apply``: rewrite the named index files of a segment
    (``which``: extensions) as the broker's recovery writes them, no ``.bak``. A log that cannot
    be read is skipped (one row says so)."""
    paths = _paths(log_path)
    kinds = [ext[1:] for ext in which]
    for kind in kinds:
        refuse_symlink(paths[kind])         # before any work
    try:
        data = dict(zip(KINDS, index_bytes(log_path, base_offset, interval_bytes, limits), strict=True))
    except KdumpError as e:
        return [Change("skipped", log_path, f"indexes not rebuilt: {e.message}")]
    out = []
    for kind in kinds:
        write_file(paths[kind], data[kind], False, like=log_path)
        n = len(data[kind]) // (INDEX_SLOT if kind == "index" else TIME_SLOT)
        out.append(Change("rebuilt", paths[kind], f"{n} entr{'y' if n == 1 else 'ies'} from the log"))
    return out


def trim_txnindex(path: str, next_offset: int | None) -> Change | None:
    """Drop aborted transactions ending at or after ``next_offset`` (TransactionIndex.truncateTo)."""
    from kdump.format.txnindex import encode_txnindex, parse_txnindex

    t = parse_txnindex(read_small(path, 256 << 20))
    limit = next_offset if next_offset is not None else -1
    keep = [e for e in t.entries if e.last_offset < limit]
    if len(keep) == len(t.entries) and not t.partial_bytes:
        return None
    atomic_write(path, encode_txnindex(keep))
    return Change("trimmed", path, f"kept {len(keep)} of {len(t.entries)} aborted transactions "
                                   f"(those ending before offset {limit})")
