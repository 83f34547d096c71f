"""``__remote_log_metadata`` replayed: the remote segments of each partition and their latest state.

The topic-based RemoteLogMetadataManager keeps, per segment id, the RemoteLogSegmentMetadata
of COPY_SEGMENT_STARTED and then its updates; the latest state wins, as its
RemoteLogMetadataCache applies them in offset order. A partition delete (apiKey 2) is noted.
"""

from __future__ import annotations

from typing import NamedTuple

from kdump.decoders import remote_log_metadata as rlm
from kdump.errors import KdumpError
from kdump.format.aiven_manifest import custom_metadata
from kdump.state.source import LogDirs, LogReader, segments

TOPIC = "__remote_log_metadata"
COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = 0, 1, 2, 3


class RemoteSegmentMeta(NamedTuple):
    segment_id: str
    topic: str
    topic_id: str
    partition: int
    start_offset: int
    end_offset: int
    size: int                   # segmentSizeInBytes
    txn_index_empty: bool
    state: int                  # the latest RemoteLogSegmentState
    metadata_offset: int        # offset of the record that set it, in __remote_log_metadata
    custom: dict = {}           # the RSM's custom metadata, tag -> value (Aiven's: its prefix and key)
    epochs: tuple = ()          # segmentLeaderEpochs: (leader epoch, its first offset in the segment)

    @property
    def state_name(self) -> str:
        return rlm.state_name("remoteLogSegmentState", self.state)

    @property
    def live(self) -> bool:
        return self.state == COPY_FINISHED


class RemoteLog(NamedTuple):
    segments: dict[tuple[str, int], dict[str, RemoteSegmentMeta]]   # (topic, partition) -> id -> meta
    notes: list[str]
    stopped: list[str]          # where a metadata partition could not be read to its end
    orphan_updates: dict = {}   # (topic, partition) -> updates whose COPY_SEGMENT_STARTED is not there


def replay(paths) -> RemoteLog:
    """The metadata in the ``__remote_log_metadata`` partitions under ``paths``."""
    dirs = LogDirs(paths)
    found: dict[tuple[str, int], dict[str, RemoteSegmentMeta]] = {}
    notes: list[str] = list(dirs.notes)
    stopped: list[str] = []
    orphans: dict[tuple[str, int], list[str]] = {}
    parts = dirs.topic(TOPIC)
    if not parts:
        notes.append(f"no {TOPIC} partition under {', '.join(map(str, paths))}")
    for p in parts:
        reader = LogReader(segments(p))
        for _, batch, records in reader.batches(True):
            if batch.is_control:
                continue
            for r in records or ():
                try:
                    d = rlm.decode(r.key, r.value)
                except KdumpError as e:
                    notes.append(f"{p.path}: offset {r.offset}: {e.message}")
                    continue
                _apply(found, d, r.offset, notes, p.path, orphans)
        if reader.stop is not None:
            stopped.append(reader.stop.text())
    return RemoteLog(found, notes, stopped, orphans)


def _apply(found, d: dict, offset: int, notes: list[str], where: str, orphans: dict) -> None:
    v = d["value"]
    if d["type_id"] == 2:
        tip = v.get("topicIdPartition", {})
        notes.append(f"{where}: offset {offset}: partition {tip.get('name')}-{tip.get('partition')} "
                     f"{v.get('remotePartitionDeleteStateName')}")
        return
    if d["type_id"] not in (0, 1):
        return                  # snapshots are the manager's own cache files, not in the topic
    sid = v["remoteLogSegmentId"]
    tip = sid["topicIdPartition"]
    key = (tip["name"], tip["partition"])
    by_id = found.setdefault(key, {})
    if d["type_id"] == 0:
        by_id[sid["id"]] = RemoteSegmentMeta(sid["id"], tip["name"], tip["id"], tip["partition"], v["startOffset"],
                                             v["endOffset"], v["segmentSizeInBytes"], bool(v.get("txnIndexEmpty")),
                                             v["remoteLogSegmentState"], offset, _custom(v, notes, where, offset),
                                             tuple((e["leaderEpoch"], e["offset"])
                                                   for e in v.get("segmentLeaderEpochs") or ()))
    elif sid["id"] in by_id:
        fields = _custom(v, notes, where, offset)
        by_id[sid["id"]] = by_id[sid["id"]]._replace(state=v["remoteLogSegmentState"], metadata_offset=offset,
                                                     **({"custom": fields} if fields else {}))
    else:
        orphans.setdefault(key, []).append(f"{where}: offset {offset}: an update for segment {sid['id']} whose "
                                           f"copy record is not there (the metadata before it is gone)")


def _custom(v: dict, notes: list[str], where: str, offset: int) -> dict:
    raw = v.get("customMetadata")
    if not raw:
        return {}
    if isinstance(raw, str):        # the decoder gives bytes as base64 text
        import base64

        raw = base64.b64decode(raw)
    try:
        return custom_metadata(bytes(raw))
    except KdumpError as e:
        notes.append(f"{where}: offset {offset}: custom metadata: {e.message}")
        return {}
