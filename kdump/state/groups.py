"""``kdump groups``: consumer groups rebuilt from ``__consumer_offsets``, as the group
coordinator loads them.

Records apply in log order, the latest per key winning; a tombstone (null value) deletes
the member or group it names. Offset commits follow ``kdump.state.offsets`` (Kafka's
OffsetMetadataManager): those written in a transaction (a transactional producer's
``sendOffsetsToTransaction``) stay pending until that producer's COMMIT marker, which
applies them unless a later plain commit was written; an ABORT drops them. A deleted group
whose offsets have no tombstones is shown as ``Dead``: the coordinator keeps the offsets
but serves none until the group id is used again. An offset is marked ``expired`` when the
coordinator's expiry rule would have removed it by ``now`` (OffsetExpirationCondition):
from the commit time, or for an empty classic group from the time it became empty, and
never for a topic that a live member is assigned or subscribed to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump.decoders import consumer_offsets
from kdump.format.control import ABORT, COMMIT
from kdump.model import RecordFinding
from kdump.state.cluster_image import load as load_metadata
from kdump.state.offsets import OffsetStore
from kdump.state.source import (
    CLUSTER_METADATA,
    CONSUMER_OFFSETS,
    LogDirs,
    LogReader,
    decode_records_of,
    log_end_offset,
    missing_logs,
    reference_time,
    segments,
)
from kdump.words import utc_text

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
    deleted: bool = False                # removed by a group tombstone (its offsets may remain)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Dead" if self.deleted else "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.get("subscribed_topics") or ()} | \
            {tp.rsplit("-", 1)[0] for m in self.members.values() for tp in m.get("assignment") or ()}


class Groups:
    def __init__(self, topic_names: dict[str, str] | None = None, at_ms: int | None = None) -> None:
        self.groups: dict[str, Group] = {}
        self.topic_names = topic_names or {}
        self.at_ms = at_ms
        self.errors: list[str] = []
        self.findings: list[RecordFinding] = []     # records skipped: no schema for them (record_unknown_schema)
        self.stops: list[str] = []
        self.stores: dict[int, OffsetStore] = {}      # one per coordinator partition, as Kafka's shards
        self.newest_ms = -1                           # the newest batch timestamp replayed

    def group(self, gid: str, partition: int) -> Group:
        """The group, created (or brought back after a delete) as a record for it replays."""
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = Group(gid, partition)
        elif g.deleted:
            g.deleted = False
        return g

    def load_partition(self, p) -> None:
        store = self.stores.setdefault(p.partition, OffsetStore())
        reader = LogReader(segments(p))
        for f, b, records in reader.batches(True):
            if self.at_ms is not None and b.max_timestamp > self.at_ms:
                break
            self.newest_ms = max(self.newest_ms, b.max_timestamp)
            if b.is_control:
                for r in records or ():
                    if r.control is not None and r.control.type in (COMMIT, ABORT):
                        store.end_transaction(b.producer_id, r.control.type == COMMIT)
                continue
            for r, d in decode_records_of(f, b, records, consumer_offsets.decode, self.errors, self.findings):
                if d["type"] in ("OFFSET_COMMIT", "LEGACY_OFFSET_COMMIT"):
                    key, v = d["key"], d["value"]
                    if v is not None:
                        self.group(key["group"], p.partition)    # a simple group, if it is new
                    store.replay(r.offset, b.producer_id, b.producer_epoch,
                                 (key["group"], key["topic"], key["partition"]), v)
                else:
                    self.apply(p.partition, d)
        if reader.stop is not None:
            self.stops.append(reader.stop.text())

    def _forget(self, gid: str) -> None:
        """A group tombstone removes the group, not its offsets (those have tombstones of
        their own); the group stays listed, Dead, while it has any."""
        g = self.groups.get(gid)
        if g is not None:
            _forget_metadata(g)
            g.deleted = True

    def offsets(self) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """group -> (committed, pending) offsets over every coordinator partition read."""
        out: dict[str, tuple[list, list]] = {}
        for _, store in sorted(self.stores.items()):
            for gid, (committed, pending) in store.by_group().items():
                c, pe = out.setdefault(gid, ([], []))
                c += committed
                pe += pending
        return out

    def apply(self, partition: int, d: dict[str, Any]) -> None:
        rtype, key, v = d["type"], d["key"], d["value"]
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
        g = self.groups.get(gid) if v is None else self.group(gid, partition)
        if g is None:
            return
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


def group_objects(paths, *, group_id: str | None = None, partitions: int | None = None,
                  at_ms: int | None = None, now_ms: int | None, retention_ms: int = DEFAULT_RETENTION_MS):
    """(header object, notes, group objects, the records skipped without a schema: RecordFindings)
    for the PATHs. ``now_ms``: the time expiry is judged at; None: the newest record replayed (a
    copy is judged as it stood when it was taken)."""
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
    incomplete = {}
    for p in wanted:
        why = missing_logs(p)
        if why is not None:
            incomplete[p.partition] = why
            notes.append(f"incomplete: {why}; the groups it holds may be stale")
    header["incomplete"] = [{"partition": n, "reason": why} for n, why in sorted(incomplete.items())]
    gs = Groups(topic_names, at_ms)
    for p in wanted:
        gs.load_partition(p)
    notes += gs.errors
    header["stopped"] = gs.stops
    now_ms, header["now"], header["now_from"] = reference_time(now_ms, gs.newest_ms,
                                                               f"the newest {CONSUMER_OFFSETS} record")
    leos: dict[tuple[str, int], int | None] = {}

    def leo(topic: str, partition: int) -> int | None:
        key = (topic, partition)
        if key not in leos:
            p = dirs.get(topic, partition)
            leos[key] = None if p is None else log_end_offset(p)
        return leos[key]

    def with_lag(o: dict[str, Any]) -> dict[str, Any]:
        end = leo(o["topic"], o["partition"])
        return {**o, "log_end_offset": end, "lag": None if end is None else end - o["offset"]}

    offsets = gs.offsets()
    out = []
    for gid in sorted(gs.groups):
        if group_id is not None and gid != group_id:
            continue
        g = gs.groups[gid]
        committed, pending = offsets.get(gid, ([], []))
        if g.deleted and not committed and not pending:
            continue
        out.append({"object": "group", "group_id": gid, "coordinator_partition": g.partition,
                    "protocol": g.protocol, "protocol_type": g.protocol_type, "state": g.state,
                    "generation": g.generation, "assignor": g.assignor, "leader": g.leader,
                    "members": list(g.members.values()),
                    "offsets": [{**with_lag(o), "expired": is_expired(g, o, now_ms, retention_ms)} for o in committed],
                    "pending_offsets": [with_lag(o) for o in pending],
                    "possibly_stale": g.partition in incomplete})
    expired = sum(o["expired"] for g in out for o in g["offsets"])
    if expired and header["now_from"] != "--now":
        notes.append(f"{expired} committed offsets expired by {utc_text(now_ms)}, {header['now_from']} "
                     "(--now TIME judges at another time)")
    if group_id is not None and "coordinator_partition" in header:
        header["possibly_stale"] = header["coordinator_partition"] in incomplete
    return header, notes, out, gs.findings
