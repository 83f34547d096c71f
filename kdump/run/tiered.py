"""``--remote-storage``: a tiered partition's whole log for ``dump``, ``verify`` and ``info``.

The metadata comes from the log dirs' ``__remote_log_metadata`` partitions (or the PATH of
``--remote-metadata``); the checks are ``kdump.check.tiered``'s; nothing is written to the
remote store.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kdump.check.tiered import TieredPartition, check_partition
from kdump.errors import ExitStatus
from kdump.render.tiered import report, timeline
from kdump.storage.logdir import LOG, LogFile, parse_partition_dir, partition_files
from kdump.storage.remote_store import open_store


class Remote(NamedTuple):
    storage: str
    layout: str = "kafka-local"
    metadata: str | None = None
    keyring: str | None = None      # Aiven's: the RSA private keys that unwrap encrypted segments' keys


def tiered_partitions(paths, remote: Remote, out, read: bool = False) -> list[TieredPartition]:
    """Each tiered partition's whole log and findings; ``read``: the remote segments read
    through and their side files checked (verify), else only listed."""
    from kdump.state.remote_log import replay
    from kdump.state.source import LogDirs

    store = open_store(remote.storage, remote.layout, remote.keyring)
    meta = replay([remote.metadata] if remote.metadata else _metadata_dirs(paths))
    for note in meta.notes:
        out.note(f"kdump: note: {note}")
    local = LogDirs(paths)
    result = []
    for (topic, partition), metas in sorted(meta.segments.items()):
        p = local.get(topic, partition)
        files = partition_files(p.path) if p is not None else []
        incomplete = [f"the metadata read stopped early: {w}" for w in meta.stopped]
        incomplete += meta.orphan_updates.get((topic, partition), [])
        result.append(check_partition(store, metas, files, topic, partition, p.path if p is not None else None,
                                      incomplete=incomplete, read=read))
    for topic, partition, topic_id in store.partitions():
        if (topic, partition) not in meta.segments:     # a partition folder no metadata knows: all orphans
            result.append(check_partition(store, {}, [], topic, partition, topic_ids=[topic_id]))
    return result


def _metadata_dirs(paths) -> list[str]:
    """The PATHS, a partition dir's log dir in its place (its metadata is beside it)."""
    out = []
    for path in paths:
        name = os.path.basename(os.path.normpath(path))
        if parse_partition_dir(name) and not os.path.exists(os.path.join(path, "meta.properties")):
            path = os.path.dirname(os.path.normpath(path)) or "."
        if path not in out:
            out.append(path)
    return out


def splice(files: list[tuple[LogFile, bool]], parts: list[TieredPartition]) -> list[tuple[LogFile, bool]]:
    """The dump's files with each tiered partition's segments replaced by its whole log as a
    fetch reads it (``TieredPartition.reads``): the remote segments below the local log
    start offset, then the local segments; ``cuts`` says where a remote one is left."""
    by_dir = {t.local_dir: t for t in parts if t.local_dir is not None}
    done: set[tuple[str, int]] = set()
    spliced: list[tuple[LogFile, bool]] = []
    for f, explicit in files:
        t = by_dir.get(os.path.dirname(f.path))
        if t is None or f.kind != LOG:
            spliced.append((f, explicit))
            continue
        if (t.topic, t.partition) not in done:
            done.add((t.topic, t.partition))
            spliced.extend((r, False) for r, _ in t.reads())
    for t in parts:                 # partitions only the remote store holds now
        if (t.topic, t.partition) not in done and t.local_dir is None:
            spliced.extend((r, False) for r, _ in t.reads())
    return spliced


def cuts(parts: list[TieredPartition]) -> dict[str, int]:
    """path -> the last offset read from a remote segment whose later offsets another serves."""
    return {path: last for t in parts for path, last in t.cuts().items()}


class WholeLog(NamedTuple):
    """What ``export`` reads with ``--remote-storage`` (``kdump.export.slices.plan_files``)."""

    files: list[LogFile]        # the PATHS' segments, each tiered partition's replaced by its whole log
    upper: dict[str, int]       # the last offset of each remote segment (its metadata's: no neighbour says it)
    unlisted: list              # the partition dirs that could not be listed (the rest is read)
    cuts: dict[str, int]        # the remote segments read only up to an offset (``cuts``)


def whole_log(paths, remote: Remote, out) -> WholeLog:
    """What ``export`` reads with ``--remote-storage``. The tiered damage is noted: it becomes
    error rows or missing offsets, and ``verify --remote-storage`` names it."""
    from kdump.findings import DAMAGE
    from kdump.storage.levels import resolve
    from kdump.storage.logdir import BATCH_KINDS

    unlisted: list = []
    files = resolve(list(paths), kinds=BATCH_KINDS, errors=unlisted, left_out=[])
    parts = tiered_partitions(paths, remote, out)
    for t in parts:
        n = sum(1 for loc in t.findings if loc.finding.cls == DAMAGE)
        if n:
            out.note(f"kdump: note: {t.topic}-{t.partition}: {n} tiered problem{'s' if n != 1 else ''} "
                     f"(kdump verify --remote-storage names them)")
    upper = {r.path: end for t in parts for r, end in t.remote}
    return WholeLog([f for f, _ in splice([(f, False) for f in files], parts)], upper, unlisted, cuts(parts))


def run_tiered_verify(paths, remote: Remote, out, strict: bool = False) -> int:
    return int(report(tiered_partitions(paths, remote, out, read=True), out, strict))


def run_tiered_info(paths, remote: Remote, out) -> int:
    timeline(tiered_partitions(paths, remote, out), out)
    return int(ExitStatus.OK)
