"""Finding what is in a log dir: partitions, segments and side files, in offset order.

A PATH may be a file, a partition dir (``<topic>-<partition>``, also with Kafka's
``.<uuid>-delete|-future|-stray`` suffixes) or a log dir (its partition dirs, sorted by
topic then partition number). The kind of a file is chosen by its name, as in Kafka;
``.deleted``, ``.cleaned`` and ``.swap`` leftovers keep the kind of the name they extend.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import NamedTuple

from kdump.errors import InputError
from kdump.format import checkpoint, logdir_files
from kdump.storage import fs
from kdump.storage.names import (
    BOOTSTRAP_CHECKPOINT,
    INDEX_SUFFIX,
    LEFTOVER_SUFFIXES,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIMEINDEX_SUFFIX,
    TXNINDEX_SUFFIX,
    filename_offset,
    snapshot_id,
    strip_leftover,
)

# File kinds.
LOG, INDEX, TIMEINDEX, TXNINDEX, PRODUCER_SNAPSHOT = "log", "index", "timeindex", "txnindex", "producer_snapshot"
KRAFT_SNAPSHOT, LEADER_EPOCH, OFFSET_CHECKPOINT = "kraft_snapshot", "leader_epoch_checkpoint", "offset_checkpoint"
PARTITION_METADATA, META_PROPERTIES, QUORUM_STATE, CLEAN_SHUTDOWN = (
    "partition_metadata", "meta_properties", "quorum_state", "clean_shutdown")

SEGMENT_EXTENSIONS = {LOG_SUFFIX: LOG, INDEX_SUFFIX: INDEX, TIMEINDEX_SUFFIX: TIMEINDEX, TXNINDEX_SUFFIX: TXNINDEX,
                      SNAPSHOT_SUFFIX: PRODUCER_SNAPSHOT}
FIXED_NAMES = {checkpoint.LEADER_EPOCH: LEADER_EPOCH, logdir_files.PARTITION_METADATA_FILE: PARTITION_METADATA,
               logdir_files.META_PROPERTIES_FILE: META_PROPERTIES, logdir_files.QUORUM_STATE_FILE: QUORUM_STATE,
               logdir_files.CLEAN_SHUTDOWN_FILE: CLEAN_SHUTDOWN, BOOTSTRAP_CHECKPOINT: KRAFT_SNAPSHOT,
               **{name: OFFSET_CHECKPOINT for name in checkpoint.OFFSET_KINDS}}
BATCH_KINDS = (LOG, KRAFT_SNAPSHOT)           # files made of record batches
_KIND_ORDER = {LOG: 0, INDEX: 1, TIMEINDEX: 2, TXNINDEX: 3, PRODUCER_SNAPSHOT: 4, KRAFT_SNAPSHOT: 5}

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)"
                            r"(?:\.(?P<uid>[0-9a-fA-F]{32})-(?P<state>delete|future|stray))?$")


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
    topic, dash, number = name.rpartition("-")
    if topic and number.isdecimal() and "\n" not in topic:     # the usual name, without the regex
        return topic, int(number), None
    m = _PARTITION_DIR.match(name)
    if not m:
        return None
    return m.group("topic"), int(m.group("partition")), m.group("state")


def classify(path: str, strict: bool = True) -> tuple[str, int | None, str | None] | None:
    """(kind, base offset, leftover suffix) from a file name, or None when kdump does not read it.

    ``strict=False`` (a file the user named) also takes a segment-style extension on a
    name that is not an offset, such as a copy called ``broken.log``; its base offset is None.
    """
    name = os.path.basename(path)
    return _classify_name(name) if strict else _classify(name, False)


# A log dir repeats a handful of names thousands of times (00000000000000000000.log in
# every partition): each is classified once.
_names: dict[str, tuple[tuple[str, int | None, str | None] | None, bool]] = {}
_NAMES_KEPT = 1 << 16


def name_info(name: str) -> tuple[tuple[str, int | None, str | None] | None, bool]:
    """(``classify(name)``, whether the name starts with a base offset) for a strict name."""
    info = _names.get(name)
    if info is None:
        if len(_names) >= _NAMES_KEPT:
            _names.clear()
        info = _names[name] = (_classify(name, True), filename_offset(name) is not None)
    return info


def _classify_name(name: str) -> tuple[str, int | None, str | None] | None:
    return name_info(name)[0]


def _classify(basename: str, strict: bool) -> tuple[str, int | None, str | None] | None:
    name, leftover = strip_leftover(basename)
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


def log_file(path: str, topic: str | None, partition: int | None, strict: bool = True) -> LogFile | None:
    c = classify(path, strict)
    if c is None:
        return None
    kind, base, leftover = c
    return LogFile(path, kind, topic, partition, base, leftover)


def partition_of(directory: str) -> tuple[str | None, int | None]:
    parsed = parse_partition_dir(os.path.basename(os.path.normpath(directory)))
    return (parsed[0], parsed[1]) if parsed else (None, None)


def _order(base: int | None, kind: str, leftover: str | None, name: str):
    leftover_rank = 0 if leftover is None else 1 + LEFTOVER_SUFFIXES.index(leftover)
    return (base is None, -1 if base is None else base, _KIND_ORDER.get(kind, 9), leftover_rank, name)


def partition_files(directory: str, entries: list[os.DirEntry] | None = None,
                    parsed: tuple[str, int] | None = None) -> list[LogFile]:
    """Every file kdump knows in one partition dir, segments in base-offset order
    (``entries``: its listing, when the caller has just made one; ``parsed``: the topic and
    partition its name gives)."""
    topic, partition = parsed[:2] if parsed is not None else partition_of(directory)
    prefix = dir_prefix(directory)
    keyed = []
    for entry in list_directory(directory) if entries is None else entries:
        name = entry.name
        c = name_info(name)[0]
        if c is not None and is_file_entry(entry):
            keyed.append((_order(c[1], c[0], c[2], name), LogFile(prefix + name, c[0], topic, partition, c[1], c[2])))
    if len(keyed) > 1:
        keyed.sort(key=lambda k: k[0])
    return [f for _, f in keyed]


def dir_prefix(directory: str) -> str:
    """What ``os.path.join(directory, name)`` puts before ``name``."""
    return directory if not directory or directory.endswith("/") else directory + "/"


def is_file_entry(entry: os.DirEntry) -> bool:
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


def keep_listing(files: list[LogFile]) -> list[LogFile]:
    if files:
        _listings[os.path.dirname(files[0].path)] = files
    return files


def list_directory(directory: str) -> list[os.DirEntry]:
    try:
        return fs.scandir(directory)
    except OSError as e:
        raise InputError(f"cannot list directory: {e.strerror}", file=directory) from None


def scan_pages(directory: str) -> Iterator[list[os.DirEntry]]:
    try:
        yield from fs.scan_pages(directory)
    except OSError as e:
        raise InputError(f"cannot list directory: {e.strerror}", file=directory) from None


def is_partition_dir(entries: list[os.DirEntry], name: str) -> bool:
    """A dir holding segment-style files is a partition; one holding only dirs is a log dir.

    The name alone cannot decide: a log dir called ``kafka-1`` looks like a partition.
    """
    has_dirs = False
    for e in entries:
        if e.is_dir(follow_symlinks=False):     # (no system call) a log dir's thousands of entries
            has_dirs = True                     # are dirs: their names need no classifying
            continue
        c, offset_named = name_info(e.name)
        if c is not None and offset_named and is_file_entry(e):
            return True
    return not has_dirs and parse_partition_dir(name) is not None


def is_bootstrap(f: LogFile) -> bool:
    """The log dir's bootstrap.checkpoint: the KRaft bootstrap records that `kafka-storage format`
    wrote (metadata.version, SCRAM users), not a partition's data."""
    return f.topic is None and f.kind == KRAFT_SNAPSHOT and f.name == BOOTSTRAP_CHECKPOINT


def directory_groups(files: list[LogFile]) -> list[tuple[str, list[LogFile]]]:
    """``files`` cut into runs of one directory each: a partition, the unit the whole-log-dir
    commands check and spread over worker processes."""
    groups: list[tuple[str, list[LogFile]]] = []
    prefix = None       # the last group's directory and separator: a file starting with it, with no
    for f in files:     # separator after it, is in that directory (no dirname call per file)
        p = f.path
        if prefix is not None and p.startswith(prefix) and p.find("/", len(prefix)) < 0:
            groups[-1][1].append(f)
            continue
        d = os.path.dirname(p)
        if groups and groups[-1][0] == d:
            groups[-1][1].append(f)
        else:
            groups.append((d, [f]))
        prefix = p[:len(d) + 1] if d and p[len(d):len(d) + 1] == "/" and "//" not in p else None
    return groups
