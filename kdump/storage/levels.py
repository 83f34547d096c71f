"""Walking a PATH a level at a time: a file, a partition dir, or a log dir whose partition
dirs are handed on sorted by topic then partition number (``walk``), listed here or by
``-j`` workers (``expand``, ``resolve``). A remote listing of more than one page is walked
as it comes (``_walk_pages``). What each file is, by name, is ``storage.logdir``'s.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Generator, Iterator
from itertools import chain
from typing import NamedTuple

from kdump.errors import InputError, KdumpError, NothingToDoError, UnknownFileKindError
from kdump.storage import fs, logdir
from kdump.storage.logdir import (
    FIXED_NAMES,
    LogFile,
    dir_prefix,
    is_bootstrap,
    is_file_entry,
    is_partition_dir,
    keep_listing,
    log_file,
    name_info,
    parse_partition_dir,
    partition_files,
    partition_of,
    scan_pages,
)
from kdump.storage.names import LEFTOVER_SUFFIXES

MAX_DEPTH = 6
# Partition dirs from which a log dir is listed by ``jobs`` worker processes: below, listing
# them here takes less than starting the workers.
PARALLEL_LISTING_FROM = 1000


NOTHING_HERE = "no Kafka log files of the kind this command reads were found here"


class Pending(NamedTuple):
    """A dir named like a partition, not listed yet: whoever checks it lists it
    (``list_pending``), so ``verify -j`` lists a log dir's partitions in its workers.

    The fields are in the order a log dir's partitions are walked (topic, partition number,
    then the dirs Kafka renamed), so a list of them sorts as it is: with no key to build,
    sorting 5,000 of them takes a third of the time."""
    topic: str
    partition: int
    state: str          # "", or delete/future/stray for a dir Kafka renamed
    directory: str
    name: str


class Level(NamedTuple):
    """A level of ``levels``: the files already listed (a log dir's own files, such as
    meta.properties and checkpoints; every file when PATH is a partition dir or a file) and
    partition dirs, sorted by topic then partition number, not yet listed. Whoever takes it
    lists them and adds to ``log_dirs`` those that turn out to hold only dirs (log dirs named
    like a partition, such as ``kafka-1``) before asking for the next level."""
    files: list[LogFile]
    partitions: list[Pending]
    log_dirs: list[str]
    partition_dir: str | None = None    # the partition dir ``files`` are all of, when PATH is one


def walk(path: str, visit, kind: str | None = None) -> None:
    """``levels(path)`` handed to ``visit(files, partitions)``, which returns the level's
    ``log_dirs``."""
    for level in levels(path, kind):
        level.log_dirs.extend(visit(level.files, level.partitions))


def levels(path: str, kind: str | None = None, _depth: int = 0) -> Iterator[Level]:
    """The files one PATH stands for, in the order kdump processes them, a level at a time.

    A log dir's level is its own files and its partition dirs. The dirs a level's taker found
    to hold only dirs, and the log dir's other subdirectories, are then walked, in name
    order, as possible log dirs (a data root holding several ``log.dirs``), not following
    links. ``kind``: ``fs.kind(path)``, when the caller has just asked. A remote listing of
    many pages gives its levels as its pages come (``_walk_pages``)."""
    kind = kind or fs.kind(path)
    if kind is None:
        raise InputError("cannot read: no such file or directory", file=path)
    if kind != "dir":
        f = log_file(path, *partition_of(os.path.dirname(fs.abspath(path))), strict=False)
        if f is None:
            raise UnknownFileKindError(
                "not a file kdump reads (expected a .log, .index, .timeindex, .txnindex, .snapshot, KRaft "
                ".checkpoint, checkpoint or metadata file, by name)", file=path)
        yield Level([f], [], [])
        return
    pages = scan_pages(path)
    entries = next(pages, [])
    more = next(pages, None)
    if more is not None:        # a remote listing of more than one page: taken as it comes
        others = yield from _walk_pages(path, chain((entries, more), pages))
    else:
        others = yield from _walk_level(path, entries)
    if _depth < MAX_DEPTH:
        for sub in sorted(others):
            yield from levels(sub, None, _depth + 1)


def _walk_level(path: str, entries: list) -> Generator[Level, None, list[str]]:
    """``levels``' level of one listing; returns the dirs to walk next."""
    if is_partition_dir(entries, os.path.basename(os.path.normpath(path))):
        yield Level(keep_listing(partition_files(path, entries)), [], [], path)
        return []
    own, partitions, others = [], [], []
    prefix = dir_prefix(path)
    for e in entries:
        name = e.name
        if e.is_dir(follow_symlinks=False):
            parsed = parse_partition_dir(name)
            if parsed is not None:
                partitions.append(Pending(parsed[0], parsed[1], parsed[2] or "", prefix + name, name))
            else:
                others.append(prefix + name)
        else:
            f = log_file(prefix + name, None, None)
            if f is not None and is_file_entry(e):
                own.append(f)
    own.sort(key=lambda f: f.name)
    partitions.sort()
    level = Level(own, partitions, [])
    yield level
    return others + level.log_dirs


# The last name a log dir's own file can have (a fixed name and a leftover suffix); its
# KRaft snapshots, like a partition's segments, are named by digits.
_OWN_LAST = max(name + suffix for name in FIXED_NAMES for suffix in ("",) + LEFTOVER_SUFFIXES)


def _walk_pages(path: str, pages: Iterator[list]) -> Generator[Level, None, list[str]]:
    """``_walk_level`` of a listing that comes a page at a time, in name order (S3's): each
    partition dir is handed on as soon as no name still to come can sort before it, so the
    first are checked while later pages are fetched, and only those held for their order (a
    topic's partitions until the listing leaves the topic: "t-10" is listed before "t-9") and
    a page are in memory. The log dir's own files, in the first level, are asked for by name
    where the listing has not reached them yet."""
    prefix = dir_prefix(path)
    kept: list | None = []      # every entry, until the names of segments are behind (not a partition dir)
    held: list[Pending] = []    # a heap
    own: list[LogFile] | None = None        # None: not visited yet
    others: list[str] = []
    last, ordered = "", True

    def hand(batch: list[Pending]) -> Iterator[Level]:
        nonlocal own
        if own is None:
            own = _own_files(path, prefix, seen, last)
            yield Level(own, batch, others)     # (what its taker finds to be log dirs: others)
        elif batch:
            yield Level([], batch, others)

    seen: list = []             # the log dir's own files the listing gave
    for page in pages:
        for e in page:
            name = e.name
            is_dir = e.is_dir(follow_symlinks=False)
            key = name + "/" if is_dir else name    # what S3 orders: a dir's name sorts with its "/"
            ordered = ordered and key > last
            last = max(last, key)
            if kept is not None:
                kept.append(e)
            if is_dir:
                parsed = parse_partition_dir(name)
                if parsed is not None:
                    heapq.heappush(held, Pending(parsed[0], parsed[1], parsed[2] or "", prefix + name, name))
                else:
                    others.append(prefix + name)
            elif own is None:
                seen.append(e)
        if kept is not None:
            if any(name_info(e.name)[1] and is_file_entry(e) for e in seen if name_info(e.name)[0] is not None):
                kept.extend(e for page in pages for e in page)      # a partition dir: listed whole
                return (yield from _walk_level(path, kept))
            if last[:1] <= "9" or not held and not others:
                continue        # (a dir of files alone, named like a partition, may still be one)
            kept = None
        if ordered:
            least = _least_topic_after(last)
            batch = []
            while held and held[0].topic < least:
                batch.append(heapq.heappop(held))
            yield from hand(batch)
    if kept is not None:
        return (yield from _walk_level(path, kept))
    yield from hand([heapq.heappop(held) for _ in range(len(held))])
    return others


def _own_files(path: str, prefix: str, seen: list, last: str) -> list[LogFile]:
    """The log dir's own files: those the listing gave up to ``last``, and those of the fixed
    names it has not reached, asked for by name."""
    entries = {e.name: e for e in seen}
    if last < _OWN_LAST:
        for name in sorted(FIXED_NAMES):
            if max(name + s for s in ("",) + LEFTOVER_SUFFIXES) > last:
                entries.update((e.name, e) for e in fs.named(path, name) if not e.is_dir())
    own = []
    for name, e in entries.items():
        f = log_file(prefix + name, None, None)
        if f is not None and is_file_entry(e):
            own.append(f)
    return sorted(own, key=lambda f: f.name)


def _least_topic_after(name: str) -> str:
    """A topic that no partition dir listed after the key ``name`` sorts before: the shortest
    start of ``name`` that a "-" and a number could follow and still sort after it. (A partition
    number in digits other than ASCII's, which no broker writes, is not foreseen.)"""
    for t, c in enumerate(name):
        if c < "-" or c == "-" and (t + 1 == len(name) or name[t + 1] <= "9"):
            return name[:t]
    return name


def list_pending(p: Pending) -> list[LogFile] | None:
    """``partition_files`` of a pending partition dir, or None if it holds only dirs; kept
    for the ``take_listing`` of the check that follows."""
    files = _listing(p)
    return None if files is None else keep_listing(files)


def list_level(partitions: list[Pending]) -> tuple[list[LogFile], list[str], list[KdumpError]]:
    """The files of a level's pending partition dirs, listed now; the dirs that hold only dirs
    (log dirs named like partitions); why those that cannot be listed cannot (the rest are)."""
    files: list[LogFile] = []
    log_dirs: list[str] = []
    errors: list[KdumpError] = []
    for p in partitions:
        try:
            listing = list_pending(p)
        except KdumpError as e:
            errors.append(e)
            continue
        if listing is None:
            log_dirs.append(p.directory)
        else:
            files += listing
    return files, log_dirs, errors


def expand(path: str, jobs: int = 1, errors: list[KdumpError] | None = None) -> list[LogFile]:
    """Every file of ``walk(path)``, listed now; thousands of partition dirs are listed by
    ``jobs`` worker processes. ``errors``: where a partition dir that cannot be listed goes
    (it is skipped and the rest covered, as ``verify`` does); without it, it is raised."""
    out: list[LogFile] = []

    def visit(files: list[LogFile], partitions: list[Pending]) -> list[str]:
        out.extend(files)
        log_dirs = []
        for p, listing in zip(partitions, _list_partitions(partitions, jobs)):
            if isinstance(listing, KdumpError):
                if errors is None:
                    raise listing
                errors.append(listing)
            elif listing is None:
                log_dirs.append(p.directory)
            else:
                out.extend(keep_listing(listing))
        return log_dirs

    walk(path, visit)
    return out


def _list_partitions(partitions: list[Pending], jobs: int) -> list[list[LogFile] | None | KdumpError]:
    if jobs > 1 and len(partitions) >= PARALLEL_LISTING_FROM:
        from kdump.jobs.fanout import ordered_map

        return list(ordered_map(_partition_listing, partitions, jobs))
    return [_partition_listing(p) for p in partitions]


def _partition_listing(p: Pending) -> list[LogFile] | None | KdumpError:
    """``_listing``, with a dir that cannot be listed given back as its error."""
    try:
        return _listing(p)
    except InputError as e:
        return e


def _listing(p: Pending) -> list[LogFile] | None:
    listing = logdir.list_directory(p.directory)   # (looked up here: a test may stand in for it)
    return partition_files(p.directory, listing, p[:2]) if is_partition_dir(listing, p.name) else None


def resolve(paths: list[str] | tuple[str, ...], kinds: tuple[str, ...] | None = None,
            explicit_kinds: tuple[str, ...] | None = None, jobs: int = 1,
            errors: list[KdumpError] | None = None, left_out: list[LogFile] | None = None) -> list[LogFile]:
    """Expand every PATH; keep ``kinds`` from directories and ``explicit_kinds`` from named files.

    A file named explicitly with a kind the command does not take is a usage error, and
    so is a PATH under which nothing of the wanted kinds is found. ``errors``: as ``expand``.
    ``left_out``: where a directory's files that belong to no partition go (the log dir's
    bootstrap.checkpoint), for commands whose unit is a partition; without it they are kept.
    """
    out: list[LogFile] = []
    explicit_kinds = explicit_kinds or kinds
    for path in paths:
        before = len(errors) if errors is not None else 0
        files = expand(path, jobs=jobs, errors=errors)
        if fs.isdir(path):
            chosen = [f for f in files if kinds is None or f.kind in kinds]
            if left_out is not None:
                left_out.extend(f for f in chosen if is_bootstrap(f))
                chosen = [f for f in chosen if not is_bootstrap(f)]
            if not chosen and errors is not None and len(errors) > before:
                continue            # what could be listed holds nothing: the errors say why
            if not chosen:
                raise NothingToDoError(NOTHING_HERE, file=path)
        else:
            chosen = files
            if explicit_kinds is not None and files[0].kind not in explicit_kinds:
                raise UnknownFileKindError(f"this command does not read {files[0].kind.replace('_', ' ')} files",
                                           file=path)
        out.extend(chosen)
    return out


