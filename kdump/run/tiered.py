"""``--remote-storage``: a tiered partition's whole log for ``dump``, ``verify`` and ``info``.

The metadata comes from the log dirs' ``__remote_log_metadata`` partitions (or the PATH of
``--remote-metadata``); the checks are ``kdump.check.tiered``'s; nothing is written to the
remote store.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from kdump.check.tiered import TieredPartition, check_partition
from kdump.errors import ExitStatus
from kdump.findings import ANOMALY, DAMAGE
from kdump.storage.logdir import LOG, LogFile, parse_partition_dir, partition_files
from kdump.storage.remote_store import open_store


class Remote(NamedTuple):
    storage: str
    layout: str = "kafka-local"
    metadata: str | None = None


def tiered_partitions(paths, remote: Remote, out) -> list[TieredPartition]:
    from kdump.state.remote_log import replay
    from kdump.state.source import LogDirs

    store = open_store(remote.storage, remote.layout)
    meta = replay([remote.metadata] if remote.metadata else _metadata_dirs(paths))
    for note in meta.notes:
        out.note(f"kdump: note: {note}")
    for where in meta.stopped:
        out.note(f"kdump: note: remote log metadata read stopped early: {where}")
    local = LogDirs(paths)
    result = []
    for (topic, partition), metas in sorted(meta.segments.items()):
        p = local.get(topic, partition)
        files = partition_files(p.path) if p is not None else []
        result.append(check_partition(store, metas, files, topic, partition, p.path if p is not None else None))
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
    """The dump's files with each tiered partition's segments replaced by its whole log:
    the live remote segments, then the local segments that are not their copies."""
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
            spliced.extend((r, False) for r, _ in t.remote)
            spliced.extend((k, False) for k in t.local)
    for t in parts:                 # partitions only the remote store holds now
        if (t.topic, t.partition) not in done and t.local_dir is None:
            spliced.extend((r, False) for r, _ in t.remote)
    return spliced


def report(parts: list[TieredPartition], out, strict: bool = False) -> ExitStatus:
    """verify's lines for the tiered findings; the exit status they call for."""
    status = ExitStatus.OK
    for t in parts:
        for loc in t.findings:
            f = loc.finding
            if f.cls == DAMAGE or (strict and f.cls == ANOMALY):
                status = max(status, ExitStatus.DAMAGE)
            if out.format == "json":
                out.write(json.dumps({"file": loc.path, "topic": t.topic, "partition": t.partition, **f.to_dict()})
                          + "\n")
            else:
                out.write(f"{loc.path}: {f.kind} ({f.cls}): {f.message}\n")
        if out.format != "json" and not out.quiet:
            n = sum(1 for loc in t.findings if loc.finding.cls in (DAMAGE, ANOMALY))
            out.note(f"kdump: {t.topic}-{t.partition}: {len(t.remote)} live remote segments, "
                     f"{len(t.local)} local; {n} tiered problem{'s' if n != 1 else ''}")
    return status


def timeline(parts: list[TieredPartition], out) -> None:
    """info's lines: which segments are remote and which local, in offset order."""
    for t in parts:
        rows = [("remote", r.base_offset, end, r.path) for r, end in t.remote]
        rows += [("local", f.base_offset, None, f.path) for f in t.local]
        for where, start, end, path in rows:
            if out.format == "json":
                out.write(json.dumps({"topic": t.topic, "partition": t.partition, "tier": where,
                                      "base_offset": start, "end_offset": end, "file": path}) + "\n")
            else:
                span = f"{start}..{end}" if end is not None else f"{start}.."
                out.write(f"{t.topic}-{t.partition}  {where:<6}  {span:<24}  {path}\n")
