"""The run's one reading of each log dir's checkpoints (recovery point, high watermark, log
start, cleaner's offset), shared by everything verify asks of them.

A checkpoint lists every partition of its log dir, so it is read once a run and log dir, not
once a partition: its table (each partition's offset) serves the partitions' checks
(``check.lost_records``, the log-start check, the load's fates), and whether it parsed at
all serves its own report (``check.side_file_checks``). A walk of a log dir reads them
before ``-j`` forks its workers (``read_ahead``), which then inherit the reading.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kdump.errors import KdumpError
from kdump.format.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from kdump.storage import fs
from kdump.storage.logdir import OFFSET_CHECKPOINT, LogFile, parse_partition_dir

# The log dir's checkpoints, and what an offset in each says the log reached.
LOG_DIR_CHECKPOINTS = ((RECOVERY_POINT_CHECKPOINT, "the recovery point"),
                       (REPLICATION_OFFSET_CHECKPOINT, "the high watermark"),
                       (LOG_START_OFFSET_CHECKPOINT, "the log start offset"),
                       (CLEANER_OFFSET_CHECKPOINT, "the cleaner's offset"))
_NAMES = frozenset(name for name, _ in LOG_DIR_CHECKPOINTS)
_NONE = (None,) * len(LOG_DIR_CHECKPOINTS)
_LAST = "last partition"    # the cache's key of the last partition's answer


class Reading(NamedTuple):
    """One checkpoint file as the run read it."""

    path: str           # as it was read (its error names the file so)
    table: dict[tuple[str, int], int]   # (topic, partition) -> offset, for the partitions of its log dir
    error: KdumpError | None            # why it does not parse (its table is then empty)
    whole: bool         # read to its end or to its error (False: it could not be read at all)
    absent: dict[tuple[str, int], int] = {}     # the first entries of partitions its log dir does not hold


def reading(path: str, cache: dict) -> Reading:
    """The run's reading of the log-dir checkpoint at ``path`` (a file that is not there
    reads as an empty table). A partition listed twice has its last entry, as Kafka's
    OffsetCheckpointFile.read puts each entry into a map in turn."""
    key = ("checkpoint", fs.normpath(path))
    got = cache.get(key)
    if got is None:
        from kdump.check.side_file_views import offset_table

        table: dict[tuple[str, int], int] = {}
        absent: dict[tuple[str, int], int] = {}
        error, whole = None, True
        try:
            if fs.isfile(path):
                here = partitions_in(os.path.dirname(key[1]), cache)     # (a checkpoint may list millions)
                table = offset_table(path, os.path.basename(path), here, absent)
        except KdumpError as e:
            error, absent = e, {}
        except OSError:
            whole, absent = False, {}
        got = cache[key] = Reading(path, table, error, whole, absent)
    return got


def own_reading(f: LogFile, cache: dict | None) -> Reading | None:
    """The run's reading of ``f`` when it is one of its log dir's checkpoints, as that file's
    own report would read it (None: the report reads it itself)."""
    if cache is None or f.kind != OFFSET_CHECKPOINT or f.leftover is not None or f.name not in _NAMES:
        return None
    got = reading(f.path, cache)
    return got if got.whole and (got.error is None or got.path == f.path) else None


def logdir_table(logdir: str, cache: dict) -> dict[tuple[str, int], tuple[int | None, ...]]:
    """(topic, partition) -> its offset in each checkpoint of ``logdir`` (normalized), in
    ``LOG_DIR_CHECKPOINTS``' order."""
    key = ("logdir_offsets", logdir)
    got = cache.get(key)
    if got is None:
        tables = [reading(os.path.join(logdir, name), cache).table for name, _ in LOG_DIR_CHECKPOINTS]
        keys = list(set().union(*tables))
        got = cache[key] = dict(zip(keys, zip(*(map(t.get, keys) for t in tables))))
    return got


def logdir_offsets(directory: str, cache: dict | None) -> tuple[int | None, ...] | None:
    """This partition's offset in each of its log dir's checkpoints (``LOG_DIR_CHECKPOINTS``'
    order), None outside a ``<topic>-<partition>`` dir: one look-up a partition (the last
    answered again at once: verify asks twice of each partition, one after the other)."""
    if cache is None:
        cache = {}
    last = cache.get(_LAST)
    if last is not None and last[0] == directory:
        return last[1]
    norm = fs.normpath(directory)
    parsed = parse_partition_dir(os.path.basename(norm))
    got = None if parsed is None else logdir_table(os.path.dirname(norm), cache).get(parsed[:2], _NONE)
    cache[_LAST] = (directory, got)
    return got


def partitions_in(logdir: str, cache: dict) -> set[tuple[str, int]]:
    """The (topic, partition) of each partition dir in ``logdir`` (normalized), listed once per run."""
    key = ("partitions", logdir)
    if key not in cache:
        found = set()
        try:
            for e in fs.scandir(logdir):
                parsed = parse_partition_dir(e.name)
                if parsed is not None:
                    found.add(parsed[:2])
        except (OSError, KdumpError):
            pass
        cache[key] = found
    return cache[key]


def read_ahead(own: list[LogFile], partitions: list, cache: dict) -> None:
    """Read a walked log dir's checkpoints now (``own``: its files; ``partitions``: the
    partition dirs the walk hands on with them), so that ``-j``'s workers, forked next, share
    this one reading."""
    mine = [f for f in own if f.name in _NAMES and f.leftover is None]
    if not mine or not partitions:
        return
    logdir = os.path.dirname(fs.normpath(mine[0].path))
    if not fs.is_remote(logdir):
        # A local listing is one page: the walk hands every partition dir on at once, those
        # ``partitions_in`` would list again. (A remote listing of many pages hands them on a
        # batch at a time: ``partitions_in`` lists them.)
        cache.setdefault(("partitions", logdir), {(p.topic, p.partition) for p in partitions})
    for f in mine:
        reading(f.path, cache)      # (by the name its own report has)
    logdir_table(logdir, cache)
