"""``kdump groups``: consumer groups rebuilt from ``__consumer_offsets``, as the group
coordinator loads them.

Records apply in log order, the latest per key winning; a tombstone (null value) deletes
the offset, member or group it names. Offset commits written inside a transaction (a
transactional producer's ``sendOffsetsToTransaction``) stay pending until that producer's
COMMIT marker, and an ABORT drops them. An offset is marked ``expired`` when the
coordinator's expiry rule would have removed it by ``now`` (OffsetExpirationCondition):
from the commit time, or for an empty classic group from the time it became empty, and
never for a topic that a live member is assigned or subscribed to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump.decoders import consumer_offsets
from kdump.format.control import COMMIT
from kdump.state.metadata import load as load_metadata
from kdump.state.source import (CLUSTER_METADATA, CONSUMER_OFFSETS, LogDirs, LogReader, decode_records_of, log_end_offset,
                     segments)

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000      # offsets.retention.minutes = 10080
_PROTOCOL_OF = {"CONSUMER_GROUP": "consumer", "SHARE_GROUP": "share", "STREAMS_GROUP": "streams"}


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """``GroupCoordinatorService.partitionFor``: Utils.abs(hashCode) mod the partition count
    (Utils.abs maps Integer.MIN_VALUE to 0, where Math.abs would stay negative)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass
class Group:
    group_id: str
    partition: int
    protocol: str = "classic"            # classic | consumer (KIP-848) | share | streams
    protocol_type: str | None = None     # classic groups: "consumer", "connect", "" (offsets only)
    generation: int | None = None        # classic generation, or the KIP-848 group epoch
    assignor: str | None = None
    leader: str | None = None
    state_timestamp: int | None = None
    has_metadata: bool = False
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    offsets: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.get("subscribed_topics") or ()} | \
            {tp.rsplit("-", 1)[0] for m in self.members.values() for tp in m.get("assignment") or ()}


class Groups:
    def __init__(self, topic_names: dict[str, str] | None = None, at_ms: int | None = None) -> None:
        self.groups: dict[str, Group] = {}
        self.topic_names = topic_names or {}
        self.at_ms = at_ms
        self.errors: list[str] = []
        self.stops: list[str] = []
        self._pending: dict[int, list[tuple[int, dict[str, Any]]]] = {}

    def group(self, gid: str, partition: int) -> Group:
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = Group(gid, partition)
        return g

    def load_partition(self, p) -> None:
        reader = LogReader(segments(p))
        for f, b, records in reader.batches(True):
            if self.at_ms is not None and b.max_timestamp > self.at_ms:
                break
            if b.is_control:
                ctl = records[0].control if records else None
                pending = self._pending.pop(b.producer_id, [])
                if ctl is not None and ctl.type == COMMIT:
                    for part, d in pending:
                        self.apply(part, d)
                continue
            for _, d in decode_records_of(f, records, consumer_offsets.decode, self.errors):
                if b.is_transactional:
                    self._pending.setdefault(b.producer_id, []).append((p.partition, d))
                else:
                    self.apply(p.partition, d)
        if reader.stop is not None:
            self.stops.append(reader.stop.text())

    def _forget(self, gid: str) -> None:
        """A group tombstone removes the group's metadata; offsets it still has keep it
        listed as an offsets-only group (each offset has its own tombstone)."""
        g = self.groups.get(gid)
        if g is None:
            return
        if g.offsets:
            _forget_metadata(g)
        else:
            del self.groups[gid]

    def apply(self, partition: int, d: dict[str, Any]) -> None:
        rtype, key, v = d["type"], d["key"], d["value"]
        if rtype in ("OFFSET_COMMIT", "LEGACY_OFFSET_COMMIT"):
            g = self.group(key["group"], partition)
            tp = (key["topic"], key["partition"])
            if v is None:
                g.offsets.pop(tp, None)
            else:
                g.offsets[tp] = {"topic": key["topic"], "partition": key["partition"], "offset": v["offset"],
                                 "leader_epoch": v.get("leaderEpoch", -1), "metadata": v.get("metadata"),
                                 "commit_timestamp": v.get("commitTimestamp"),
                                 "expire_timestamp": v.get("expireTimestamp", -1)}
            return
        if rtype == "GROUP_METADATA":
            if v is None:
                self._forget(key["group"])
                return
            g = self.group(key["group"], partition)
            g.has_metadata, g.protocol = True, "classic"
            g.protocol_type, g.generation, g.assignor = v.get("protocolType"), v.get("generation"), v.get("protocol")
            g.leader, g.state_timestamp = v.get("leader"), v.get("currentStateTimestamp")
            g.members = {m["memberId"]: _classic_member(m) for m in v.get("members") or ()}
            return
        gid = key.get("groupId") if isinstance(key, dict) else None
        if gid is None:
            return
        family = next((name for prefix, name in _PROTOCOL_OF.items() if rtype.startswith(prefix + "_")), None)
        if family is None:
            return
        if rtype.endswith("_GROUP_METADATA") and rtype.count("_") == 2:
            if v is None:
                self._forget(gid)
                return
            g = self.group(gid, partition)
            g.has_metadata, g.protocol, g.generation = True, family, v.get("epoch")
            return
        g = self.group(gid, partition)
        g.protocol = family
        if rtype.endswith("_MEMBER_METADATA"):
            if v is None:
                g.members.pop(key["memberId"], None)
            else:
                m = g.members.setdefault(key["memberId"], {"member_id": key["memberId"]})
                m.update(client_id=v.get("clientId"), client_host=v.get("clientHost"),
                         group_instance_id=v.get("instanceId"),
                         subscribed_topics=v.get("subscribedTopicNames") or [])
        elif rtype.endswith("_CURRENT_MEMBER_ASSIGNMENT"):
            if v is None:
                g.members.pop(key["memberId"], None)
            else:
                m = g.members.setdefault(key["memberId"], {"member_id": key["memberId"]})
                m["member_epoch"] = v.get("memberEpoch")
                m["assignment"] = [f"{self.topic_names.get(t['topicId'], t['topicId'])}-{n}"
                                   for t in v.get("assignedPartitions") or () for n in t["partitions"]]


def _forget_metadata(g: Group) -> None:
    g.has_metadata, g.protocol, g.protocol_type, g.generation = False, "classic", None, None
    g.assignor = g.leader = g.state_timestamp = None
    g.members = {}


def _classic_member(m: dict[str, Any]) -> dict[str, Any]:
    assignment = m.get("assignment")
    parts = []
    if isinstance(assignment, dict):
        parts = [f"{t['topic']}-{n}" for t in assignment.get("assignedPartitions") or () for n in t["partitions"]]
    return {"member_id": m["memberId"], "client_id": m.get("clientId"), "client_host": m.get("clientHost"),
            "group_instance_id": m.get("groupInstanceId"), "assignment": parts}


def is_expired(g: Group, o: dict[str, Any], now_ms: int, retention_ms: int) -> bool:
    if o["topic"] in g.subscribed_topics():
        return False
    if o.get("expire_timestamp", -1) not in (-1, None):
        return now_ms >= o["expire_timestamp"]
    if g.protocol == "classic" and g.protocol_type:
        if g.members:
            return False             # a classic group with members keeps its offsets
        base = g.state_timestamp if g.state_timestamp not in (None, -1) else o["commit_timestamp"]
    else:
        base = o["commit_timestamp"]
    return base is not None and now_ms - base >= retention_ms


def run(paths, *, group_id: str | None = None, partitions: int | None = None, at_ms: int | None = None,
        now_ms: int, retention_ms: int = DEFAULT_RETENTION_MS):
    """(header object, notes, group objects) for the PATHs."""
    dirs = LogDirs(paths)
    notes = list(dirs.notes)
    topic_names: dict[str, str] = {}
    count_from = "--partitions" if partitions is not None else None
    if dirs.get(CLUSTER_METADATA, 0) is not None:
        image = load_metadata(dirs)
        topic_names = {t["topic_id"]: name for name, t in image.state["topics"].items()}
        t = image.state["topics"].get(CONSUMER_OFFSETS)
        if partitions is None and t is not None:
            partitions, count_from = len(t["partitions"]), CLUSTER_METADATA
    present = dirs.topic(CONSUMER_OFFSETS)
    header: dict[str, Any] = {"object": "offsets_topic", "partitions": partitions, "partitions_from": count_from,
                              "present": [p.partition for p in present]}
    wanted = present
    if group_id is not None:
        if partitions is None:
            from kdump.errors import UsageError
            raise UsageError("the __consumer_offsets partition count is not in __cluster_metadata here; "
                             "give it with --partitions")
        header["group_id"] = group_id
        header["coordinator_partition"] = partition_for(group_id, partitions)
        wanted = [p for p in present if p.partition == header["coordinator_partition"]]
        if not wanted:
            notes.append(f"{CONSUMER_OFFSETS}-{header['coordinator_partition']} (which holds {group_id}) is not here")
    if not present:
        notes.append(f"no {CONSUMER_OFFSETS} partition here")
    gs = Groups(topic_names, at_ms)
    for p in wanted:
        gs.load_partition(p)
    notes += gs.errors
    header["stopped"] = gs.stops
    leos: dict[tuple[str, int], int | None] = {}

    def leo(topic: str, partition: int) -> int | None:
        key = (topic, partition)
        if key not in leos:
            p = dirs.get(topic, partition)
            leos[key] = None if p is None else log_end_offset(p)
        return leos[key]

    out = []
    for gid in sorted(gs.groups):
        if group_id is not None and gid != group_id:
            continue
        g = gs.groups[gid]
        offsets = []
        for (topic, part), o in sorted(g.offsets.items()):
            end = leo(topic, part)
            offsets.append({**o, "log_end_offset": end, "lag": None if end is None else end - o["offset"],
                            "expired": is_expired(g, o, now_ms, retention_ms)})
        out.append({"object": "group", "group_id": gid, "coordinator_partition": g.partition,
                    "protocol": g.protocol, "protocol_type": g.protocol_type, "state": g.state,
                    "generation": g.generation, "assignor": g.assignor, "leader": g.leader,
                    "members": list(g.members.values()), "offsets": offsets})
    return header, notes, out
