"""Finding what is in a log dir: partitions, segments and side files, in offset order.

A PATH may be a file, a partition dir (``<topic>-<partition>``, also with Kafka's
``.<uuid>-delete|-future|-stray`` suffixes) or a log dir (its partition dirs, sorted by
topic then partition number). The kind of a file is chosen by its name, as in Kafka;
``.deleted``, ``.cleaned`` and ``.swap`` leftovers keep the kind of the name they extend.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from kdump.errors import InputError, NothingToDoError, UnknownFileKindError
from kdump.format import checkpoint, metadata
from kdump.storage.names import (BOOTSTRAP_CHECKPOINT, INDEX_SUFFIX, LEFTOVER_SUFFIXES, LOG_SUFFIX, SNAPSHOT_SUFFIX,
                                 TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX, filename_offset, snapshot_id, strip_leftover)

# File kinds.
LOG, INDEX, TIMEINDEX, TXNINDEX, PRODUCER_SNAPSHOT = "log", "index", "timeindex", "txnindex", "producer_snapshot"
KRAFT_SNAPSHOT, LEADER_EPOCH, OFFSET_CHECKPOINT = "kraft_snapshot", "leader_epoch_checkpoint", "offset_checkpoint"
PARTITION_METADATA, META_PROPERTIES, QUORUM_STATE, CLEAN_SHUTDOWN = (
    "partition_metadata", "meta_properties", "quorum_state", "clean_shutdown")

SEGMENT_EXTENSIONS = {LOG_SUFFIX: LOG, INDEX_SUFFIX: INDEX, TIMEINDEX_SUFFIX: TIMEINDEX, TXNINDEX_SUFFIX: TXNINDEX,
                      SNAPSHOT_SUFFIX: PRODUCER_SNAPSHOT}
FIXED_NAMES = {checkpoint.LEADER_EPOCH: LEADER_EPOCH, metadata.PARTITION_METADATA_FILE: PARTITION_METADATA,
               metadata.META_PROPERTIES_FILE: META_PROPERTIES, metadata.QUORUM_STATE_FILE: QUORUM_STATE,
               metadata.CLEAN_SHUTDOWN_FILE: CLEAN_SHUTDOWN, BOOTSTRAP_CHECKPOINT: KRAFT_SNAPSHOT,
               **{name: OFFSET_CHECKPOINT for name in checkpoint.OFFSET_KINDS}}
BATCH_KINDS = (LOG, KRAFT_SNAPSHOT)           # files made of record batches
_KIND_ORDER = {LOG: 0, INDEX: 1, TIMEINDEX: 2, TXNINDEX: 3, PRODUCER_SNAPSHOT: 4, KRAFT_SNAPSHOT: 5}

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<uid>[0-9a-fA-F]{32})-(?P<state>delete|future|stray))?$")


class LogFile(NamedTuple):
    path: str                       # as the user can find it (joined from the PATH given)
    kind: str
    topic: str | None
    partition: int | None
    base_offset: int | None         # from the name (segments, indexes, snapshots)
    leftover: str | None            # ".deleted", ".cleaned", ".swap" or None

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def parse_partition_dir(name: str) -> tuple[str, int, str | None] | None:
    """(topic, partition, state) for a partition dir name; state is delete/future/stray or None."""
    m = _PARTITION_DIR.match(name)
    if not m:
        return None
    return m.group("topic"), int(m.group("partition")), m.group("state")


def classify(path: str, strict: bool = True) -> tuple[str, int | None, str | None] | None:
    """(kind, base offset, leftover suffix) from a file name, or None when kdump does not read it.

    ``strict=False`` (a file the user named) also takes a segment-style extension on a
    name that is not an offset, such as a copy called ``broken.log``; its base offset is None.
    """
    name, leftover = strip_leftover(os.path.basename(path))
    if name in FIXED_NAMES:
        return FIXED_NAMES[name], None, leftover
    if name.endswith(".checkpoint.part"):
        return None
    if name.endswith(".checkpoint"):
        sid = snapshot_id(name)
        return (KRAFT_SNAPSHOT, sid[0], leftover) if sid else None
    ext = os.path.splitext(name)[1]
    kind = SEGMENT_EXTENSIONS.get(ext)
    base = None if kind is None else filename_offset(name, ext)
    if kind is None or (strict and base is None):
        return None
    return kind, base, leftover


def _log_file(path: str, topic: str | None, partition: int | None, strict: bool = True) -> LogFile | None:
    c = classify(path, strict)
    if c is None:
        return None
    kind, base, leftover = c
    return LogFile(path, kind, topic, partition, base, leftover)


def _partition_of(directory: str) -> tuple[str | None, int | None]:
    parsed = parse_partition_dir(os.path.basename(os.path.normpath(directory)))
    return (parsed[0], parsed[1]) if parsed else (None, None)


def _sort_key(f: LogFile):
    leftover_rank = 0 if f.leftover is None else 1 + LEFTOVER_SUFFIXES.index(f.leftover)
    base = -1 if f.base_offset is None else f.base_offset
    return (f.base_offset is None, base, _KIND_ORDER.get(f.kind, 9), leftover_rank, f.name)


def partition_files(directory: str, entries: list[os.DirEntry] | None = None) -> list[LogFile]:
    """Every file kdump knows in one partition dir, segments in base-offset order
    (``entries``: its listing, when the caller has just made one)."""
    topic, partition = _partition_of(directory)
    files = []
    for entry in _scandir(directory) if entries is None else entries:
        f = _log_file(os.path.join(directory, entry.name), topic, partition)
        if f is not None and _is_file(entry):
            files.append(f)
    return sorted(files, key=_sort_key)


def _is_file(entry: os.DirEntry) -> bool:
    """A regular file, or a link to one. A link that cannot be followed (a loop: ``a -> b``,
    ``b -> a``) counts as a file, so that reading it gives one located error for it alone."""
    try:
        return entry.is_file()
    except OSError:
        return entry.is_symlink()


# The partition listings ``expand`` just made, for a caller that would list the same dir
# again (verify's neighbour checks): each is taken once, so a later listing (after a
# repair) is always fresh.
_listings: dict[str, list[LogFile]] = {}


def take_listing(directory: str) -> list[LogFile] | None:
    """``partition_files(directory)`` as ``expand`` found it moments ago, once; else None."""
    return _listings.pop(directory, None)


def _listed(files: list[LogFile]) -> list[LogFile]:
    if files:
        _listings[os.path.dirname(files[0].path)] = files
    return files


def _scandir(directory: str) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except OSError as e:
        raise InputError(f"cannot list directory: {e.strerror}", file=directory) from None


def _is_partition_dir(entries: list[os.DirEntry], name: str) -> bool:
    """A dir holding segment-style files is a partition; one holding only dirs is a log dir.

    The name alone cannot decide: a log dir called ``kafka-1`` looks like a partition.
    """
    if any(classify(e.name) is not None and filename_offset(e.name) is not None and _is_file(e) for e in entries):
        return True
    if any(e.is_dir(follow_symlinks=False) for e in entries):
        return False
    return parse_partition_dir(name) is not None


MAX_DEPTH = 6


def expand(path: str, _depth: int = 0) -> list[LogFile]:
    """The files one PATH stands for, in the order kdump processes them.

    A log dir lists its own files (meta.properties, checkpoints), then its partition dirs
    sorted by topic then partition number; other subdirectories are searched for more log
    dirs (a data root holding several ``log.dirs``), in name order, not following links.
    """
    if not os.path.exists(path):
        raise InputError("cannot read: no such file or directory", file=path)
    if not os.path.isdir(path):
        f = _log_file(path, *_partition_of(os.path.dirname(os.path.abspath(path))), strict=False)
        if f is None:
            raise UnknownFileKindError(
                "not a file kdump reads (expected a .log, .index, .timeindex, .txnindex, .snapshot, KRaft "
                ".checkpoint, checkpoint or metadata file, by name)", file=path)
        return [f]
    entries = _scandir(path)
    if _is_partition_dir(entries, os.path.basename(os.path.normpath(path))):
        return _listed(partition_files(path, entries))
    out = [f for e in sorted(entries, key=lambda e: e.name)
           for f in [_log_file(os.path.join(path, e.name), None, None)] if f is not None and _is_file(e)]
    partitions, others = [], []
    for e in entries:
        if not e.is_dir(follow_symlinks=False):
            continue
        sub = os.path.join(path, e.name)
        parsed = parse_partition_dir(e.name)
        listing = _scandir(sub) if parsed is not None else None
        if listing is not None and _is_partition_dir(listing, e.name):
            partitions.append(((parsed[0], parsed[1], parsed[2] or ""), sub, listing))
        else:
            others.append(sub)
    for _, directory, listing in sorted(partitions, key=lambda p: p[:2]):
        out.extend(_listed(partition_files(directory, listing)))
    if _depth < MAX_DEPTH:
        for sub in sorted(others):
            out.extend(expand(sub, _depth + 1))
    return out


def resolve(paths: list[str] | tuple[str, ...], kinds: tuple[str, ...] | None = None,
            explicit_kinds: tuple[str, ...] | None = None) -> list[LogFile]:
    """Expand every PATH; keep ``kinds`` from directories and ``explicit_kinds`` from named files.

    A file named explicitly with a kind the command does not take is a usage error, and
    so is a PATH under which nothing of the wanted kinds is found.
    """
    out: list[LogFile] = []
    explicit_kinds = explicit_kinds or kinds
    for path in paths:
        files = expand(path)
        if os.path.isdir(path):
            chosen = [f for f in files if kinds is None or f.kind in kinds]
            if not chosen:
                raise NothingToDoError("no Kafka log files of the kind this command reads were found here", file=path)
        else:
            chosen = files
            if explicit_kinds is not None and files[0].kind not in explicit_kinds:
                raise UnknownFileKindError(f"this command does not read {files[0].kind.replace('_', ' ')} files",
                                           file=path)
        out.extend(chosen)
    return out


def directory_groups(files: list[LogFile]) -> list[tuple[str, list[LogFile]]]:
    """``files`` cut into runs of one directory each: a partition, the unit the whole-log-dir
    commands check and spread over worker processes."""
    groups: list[tuple[str, list[LogFile]]] = []
    for f in files:
        d = os.path.dirname(f.path)
        if groups and groups[-1][0] == d:
            groups[-1][1].append(f)
        else:
            groups.append((d, [f]))
    return groups
