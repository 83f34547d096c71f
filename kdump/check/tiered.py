"""A tiered partition's whole log: the live remote segments plus the local ones, and its findings.

Live means COPY_SEGMENT_FINISHED as the latest state of the segment id. RemoteLogManager
offloads whole rolled segments, and local retention removes them later: until then their
offsets are in both tiers. A fetch takes each offset once (``reads``): from the local log when
it is at or above the local log start offset (ReplicaManager fetches from the remote tier only
for ``logStartOffset <= offset < localLogStartOffset``), else from the remote segment that
holds it. ``verify`` checks both copies. ``*.log.deleted`` files are never part of the log.
"""

from __future__ import annotations

from typing import NamedTuple

from kdump import findings as F
from kdump.check.tiered_lineage import choose
from kdump.check.tiered_side_files import side_file_findings
from kdump.errors import KdumpError
from kdump.format.walk import Walker
from kdump.model import Finding
from kdump.storage import remote_store as RS
from kdump.storage.logdir import LOG, LogFile
from kdump.storage.mapped import MappedFile, read_small

TOPIC = "__remote_log_metadata"


class Located(NamedTuple):
    path: str
    finding: Finding


class TieredPartition(NamedTuple):
    topic: str
    partition: int
    remote: list[tuple[LogFile, int]]    # every live remote segment's .log, with its end offset (all checked)
    local: list[LogFile]                 # the live local segments (no leftovers), in offset order
    findings: list[Located]
    local_dir: str | None                # the partition dir, None when only the remote store holds it

    def reads(self) -> list[tuple[LogFile, int | None]]:
        """What a consumer fetching from offset 0 reads, in offset order: each file with the
        last offset taken from it (None: to its end). A remote segment serves its offsets up
        to where the next live remote segment starts (RemoteLogMetadataCache finds a fetch
        offset's segment as the one starting at or below it), and none from the local log
        start offset (the first local segment's base) on: the local log serves those."""
        llso = self.local[0].base_offset if self.local else None
        out: list[tuple[LogFile, int | None]] = []
        for i, (f, end) in enumerate(self.remote):
            starts = [s for s in (self.remote[i + 1][0].base_offset if i + 1 < len(self.remote) else None, llso)
                      if s is not None]
            last = min([end] + [s - 1 for s in starts])
            if f.base_offset is not None and last >= f.base_offset:
                out.append((f, last))
        return out + [(f, None) for f in self.local]

    def cuts(self) -> dict[str, int]:
        """The remote segments read only in part (a later segment or the local log serves
        the rest): path -> the last offset read from it."""
        ends = {f.path: end for f, end in self.remote}
        return {f.path: last for f, last in self.reads() if last is not None and last < ends.get(f.path, last + 1)}

    def both_tiers(self) -> tuple[int, int] | None:
        """The offsets both a live remote segment and the local log hold (the local log
        serves them), or None."""
        if not self.remote or not self.local or self.local[0].base_offset is None:
            return None
        llso, end = self.local[0].base_offset, max(e for _, e in self.remote)
        return (llso, end) if llso <= end else None


def _range(start: int, end: int) -> str:
    return f"offsets {start}..{end}"


def check_partition(store: RS.RemoteStore, metas: dict, local: list[LogFile], topic: str,
                    partition: int, local_dir: str | None = None,
                    topic_ids: list[str] | None = None, incomplete: list[str] | None = None,
                    read: bool = False) -> TieredPartition:
    """``metas``: segment id -> RemoteSegmentMeta (kdump.state.remote_log) of this partition;
    ``local``: the partition dir's files (leftovers included); ``topic_ids``: where to look
    when no metadata names the partition (every file there is then an orphan);
    ``incomplete``: why the metadata read is not whole (remote_metadata_incomplete);
    ``read``: each live segment read through (its batches' CRCs) and its side files checked
    as a local segment's are (verify); else only listed (what dump, export and info need)."""
    out: list[Located] = [Located(TOPIC, Finding(F.REMOTE_METADATA_INCOMPLETE, None, None,
                                                 f"{why}: these findings may be stale"))
                          for why in incomplete or ()]
    topic_ids = sorted({m.topic_id for m in metas.values()} | set(topic_ids or ()))
    present: dict[str, RS.RemoteFiles] = {}
    place = ""
    for tid in topic_ids:
        present.update(store.segments(topic, tid, partition))
        place = store.partition_dir(topic, tid, partition)
        for path in store.stray_objects(topic, tid, partition):
            out.append(Located(path, Finding(F.REMOTE_ORPHAN, None, None, "not a remote segment file of this layout")))
    live, duplicates, outside = choose(sorted((m for m in metas.values() if m.live),
                                              key=lambda m: (m.start_offset, m.end_offset)),
                                       _lineage(local_dir), None)
    out.extend(_lineage_findings(store, topic, partition, duplicates, outside, live))
    remote: list[tuple[LogFile, int]] = []
    for m in sorted(metas.values(), key=lambda m: m.start_offset):
        where = f"{place}/{m.start_offset:020d}-{m.segment_id}"
        rng = _range(m.start_offset, m.end_offset)
        if m.state == 0:
            out.append(Located(where, Finding(F.REMOTE_COPY_UNFINISHED, None, m.start_offset,
                                              f"segment {m.segment_id} ({rng}): COPY_SEGMENT_STARTED at metadata "
                                              f"offset {m.metadata_offset}, never finished")))
        elif m.state == 2:
            out.append(Located(where, Finding(F.REMOTE_DELETE_UNFINISHED, None, m.start_offset,
                                              f"segment {m.segment_id} ({rng}): DELETE_SEGMENT_STARTED at metadata "
                                              f"offset {m.metadata_offset}, never finished")))
    for m in live:
        files = present.get(m.segment_id)
        moved = store.moved(m) if m.custom else None
        if moved is not None:       # its custom metadata names its place
            files = present[m.segment_id] = moved
        where = f"{place}/{m.start_offset:020d}-{m.segment_id}"
        missing = [s for s in store.required(m.txn_index_empty) if files is None or s not in files.objects]
        rng = _range(m.start_offset, m.end_offset)
        if missing:
            lost = "its records are gone" if RS.SEGMENT in missing else "its records are there"
            out.append(Located(where + (missing[0] if len(missing) == 1 else ".*"),
                               Finding(F.REMOTE_SEGMENT_MISSING, None, m.start_offset,
                                       f"live remote segment {m.segment_id} ({rng}) has no "
                                       f"{', '.join(missing)}: {lost}")))
        try:
            log = store.segment_log(files) if files is not None else None
        except KdumpError as e:
            out.append(Located(e.file or where, Finding(F.REMOTE_SEGMENT_CORRUPT, e.position, m.start_offset,
                                                        f"{rng}: {e.message}")))
            continue
        if log is None:
            continue
        remote.append((LogFile(log.path, LOG, topic, partition, m.start_offset, None), m.end_offset))
        found = _check_log(log, m, rng, read)
        out.extend(Located(log.path, f) for f in found)
        if read and not found and files is not None:
            out.extend(Located(p, f) for p, f in side_file_findings(store.side_files(files), log.path, where,
                                                                      m.start_offset))
    out.extend(_orphans(present, metas))
    kept, overlaps = _local_part(live, [f for f in local if f.kind == LOG])
    out.extend(overlaps)
    out.extend(_gaps(live, kept))
    for f in local:
        if f.kind == LOG and f.leftover == ".deleted":
            out.append(Located(f.path, Finding(F.LOCAL_DELETED_SEGMENT, None, f.base_offset,
                                               "scheduled for deletion by the broker: not part of the log")))
    return TieredPartition(topic, partition, remote, kept, out, local_dir)


def _check_log(log: RS.RemoteObject, m, rng: str, read: bool) -> list[Finding]:
    if log.size < m.size:
        return [Finding(F.REMOTE_SEGMENT_SHORT, log.size, m.start_offset,
                        f"{rng}: {log.size} bytes of the {m.size} the metadata lists")]
    if not read:
        return []
    try:
        mapped = MappedFile(log.path, stream=True)      # (a chunked object: detransformed as walked)
        mapped.reading_to(None)
    except KdumpError as e:     # a chunked object that cannot be read back
        return [Finding(F.REMOTE_SEGMENT_CORRUPT, e.position, m.start_offset, f"{rng}: {e.message}")]
    try:
        walker = Walker(mapped.buf)
        last = None
        for b in walker:
            if not b.crc_valid:
                return [Finding(F.REMOTE_SEGMENT_CORRUPT, b.position, b.base_offset,
                                f"{rng}: the batch at offset {b.base_offset} fails its CRC check")]
            last = b.last_offset
        if walker.stop is not None:
            s = walker.stop
            return [Finding(F.REMOTE_SEGMENT_CORRUPT, s.position, s.offset, f"{rng}: {s.kind}: {s.message}")]
    finally:
        mapped.close()
    if last is None or last < m.end_offset:
        return [Finding(F.REMOTE_SEGMENT_SHORT, log.size, last, f"{rng}: the batches end at offset {last}")]
    return []


def _orphans(present: dict[str, RS.RemoteFiles], metas: dict) -> list[Located]:
    out = []
    for sid, files in sorted(present.items(), key=lambda kv: kv[1].start_offset):
        m = metas.get(sid)
        if m is None or m.state == 3:
            why = "no metadata lists segment" if m is None else "the metadata finished deleting segment"
            for obj in files.objects.values():
                out.append(Located(obj.path, Finding(F.REMOTE_ORPHAN, None, files.start_offset, f"{why} {sid}")))
    return out


def _local_part(live, logs: list[LogFile]) -> tuple[list[LogFile], list[Located]]:
    """The live local segments (no leftovers), in offset order, and each that starts inside a
    live remote segment but runs past its end (not a copy of it: their rolls differ)."""
    segs = sorted((f for f in logs if f.leftover is None and f.base_offset is not None),
                  key=lambda f: f.base_offset or 0)
    out = []
    for i, f in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
        holder = next((m for m in live if m.start_offset <= f.base_offset <= m.end_offset), None)
        if holder is not None and (nxt is None or nxt > holder.end_offset + 1):
            span = _range(holder.start_offset, holder.end_offset)
            out.append(Located(f.path, Finding(F.REMOTE_OVERLAP, None, f.base_offset,
                                               f"local segment from offset {f.base_offset} runs past remote segment "
                                               f"{holder.segment_id} ({span}): their rolls differ; the local log "
                                               f"serves the offsets both hold")))
    return segs, out


def _gaps(live, kept: list[LogFile]) -> list[Located]:
    out = []
    for a, b in zip(live, live[1:]):
        if b.start_offset > a.end_offset + 1:
            out.append(Located(b.segment_id, Finding(F.REMOTE_GAP, None, a.end_offset + 1,
                                                     f"no live remote segment holds "
                                                     f"{_range(a.end_offset + 1, b.start_offset - 1)}")))
        elif b.start_offset <= a.end_offset:
            out.append(Located(b.segment_id, Finding(F.REMOTE_OVERLAP, None, b.start_offset,
                                                     f"remote segments {a.segment_id} and {b.segment_id} both hold "
                                                     f"{_range(b.start_offset, min(a.end_offset, b.end_offset))}")))
    if live and kept and kept[0].base_offset is not None and kept[0].base_offset > live[-1].end_offset + 1:
        end = live[-1].end_offset
        out.append(Located(kept[0].path, Finding(F.REMOTE_GAP, None, end + 1,
                                                 f"between the remote segments and the local log: "
                                                 f"{_range(end + 1, kept[0].base_offset - 1)} are held by neither")))
    return out


def _lineage(local_dir: str | None) -> list[tuple[int, int]]:
    """The local leader-epoch-checkpoint's (epoch, start offset), or [] (none, or unreadable:
    verify's own checks say why)."""
    import os

    from kdump.format.checkpoint import LEADER_EPOCH, parse_checkpoint

    if local_dir is None:
        return []
    path = os.path.join(local_dir, LEADER_EPOCH)
    try:
        return sorted((e.epoch, e.start_offset) for e in parse_checkpoint(read_small(path), LEADER_EPOCH, path))
    except (KdumpError, OSError):
        return []


def _lineage_findings(store, topic: str, partition: int, duplicates, outside, chosen) -> list[Located]:
    out = []
    for m in duplicates:
        keep = next(c for c in chosen if (c.start_offset, c.end_offset) == (m.start_offset, m.end_offset))
        out.append(Located(f"{store.partition_dir(topic, m.topic_id, partition)}/{m.start_offset:020d}-{m.segment_id}",
                           Finding(F.REMOTE_DUPLICATE, None, m.start_offset,
                                   f"segment {m.segment_id} ({_range(m.start_offset, m.end_offset)}) is uploaded "
                                   f"again as {keep.segment_id}, which RemoteLogManager reads")))
    for m in outside:
        kept = " (kept: no other segment holds its offsets)" if m in chosen else ""
        out.append(Located(f"{store.partition_dir(topic, m.topic_id, partition)}/{m.start_offset:020d}-{m.segment_id}",
                           Finding(F.REMOTE_LINEAGE_MISMATCH, None, m.start_offset,
                                   f"segment {m.segment_id} ({_range(m.start_offset, m.end_offset)}) has leader "
                                   f"epochs {', '.join(f'{e}@{o}' for e, o in m.epochs)}, not the local "
                                   f"leader-epoch-checkpoint's{kept}")))
    return out
