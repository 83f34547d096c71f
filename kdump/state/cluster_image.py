"""``kdump metadata``: the KRaft cluster image at a point of ``__cluster_metadata``.

The image is loaded the way a broker's metadata loader builds it: from the newest
snapshot (``<end offset>-<epoch>.checkpoint``) at or before the point, then the log from
the snapshot's end offset on. Records between a BeginTransaction and its EndTransaction
apply together (an AbortTransaction drops them), so a point inside a metadata transaction
shows the image before it. A torn or corrupt batch ends the replay; ``stop`` says where.
SCRAM credentials are shown by user and mechanism only, never their salts or keys.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kdump.decoders import cluster_metadata
from kdump.errors import NothingToDoError
from kdump.model import RecordFinding
from kdump.state.source import (
    CLUSTER_METADATA,
    LogDirs,
    LogReader,
    Stop,
    decode_records_of,
    orphan_segments,
    segments,
    side_files,
)
from kdump.storage.logdir import KRAFT_SNAPSHOT

RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}
NO_LEADER_CHANGE = -2
SNAPSHOT_HEADER = 3


class Point(NamedTuple):
    """Where to stop: after ``offset`` (inclusive), or after the last batch at or before ``time_ms``."""

    offset: int | None = None
    time_ms: int | None = None

    def before(self, last_offset: int, max_ts: int) -> bool:
        if self.offset is not None:
            return last_offset <= self.offset
        if self.time_ms is not None:
            return max_ts <= self.time_ms
        return True


def empty_image() -> dict[str, Any]:
    return {"features": {}, "brokers": {}, "controllers": {}, "topics": {}, "configs": {}, "acls": {},
            "quotas": {}, "producer_ids": None, "scram_users": {}, "delegation_tokens": 0}


class Image:
    """The cluster image and how it was reached."""

    def __init__(self) -> None:
        self.state = empty_image()
        self.topic_names: dict[str, str] = {}           # topic id -> name
        self.snapshot: str | None = None
        self.last_offset: int | None = None
        self.last_timestamp: int | None = None
        self.stop: Stop | None = None
        self.past_point = False         # a batch past the point asked was seen: the point was reached
        self.errors: list[str] = []
        self.findings: list[RecordFinding] = []     # records skipped: no schema for them (record_unknown_schema)
        self.incomplete: list[str] = []                 # records missing between the snapshot and the point
        self._txn: list[tuple[str, dict[str, Any]]] | None = None

    # -- applying records ------------------------------------------------------------------

    def apply(self, rtype: str, v: dict[str, Any]) -> None:
        if rtype == "BEGIN_TRANSACTION_RECORD":
            self._txn = []
        elif rtype == "END_TRANSACTION_RECORD":
            pending, self._txn = self._txn or [], None
            for t, value in pending:
                self._apply(t, value)
        elif rtype == "ABORT_TRANSACTION_RECORD":
            self._txn = None
        elif self._txn is not None:
            self._txn.append((rtype, v))
        else:
            self._apply(rtype, v)

    def _apply(self, rtype: str, v: dict[str, Any]) -> None:
        s = self.state
        handler = _HANDLERS.get(rtype)
        if handler is not None:
            handler(self, s, v)

    def topic_of(self, topic_id: str) -> dict[str, Any] | None:
        name = self.topic_names.get(topic_id)
        return None if name is None else self.state["topics"].get(name)

    def to_dict(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "last_offset": self.last_offset, "last_timestamp": self.last_timestamp,
                "stopped": None if self.stop is None else self.stop.text(), "errors": self.errors,
                "incomplete": self.incomplete}


def _broker(img: Image, s, v) -> None:
    s["brokers"][v["brokerId"]] = {
        "broker_id": v["brokerId"], "broker_epoch": v.get("brokerEpoch"), "incarnation_id": v.get("incarnationId"),
        "endpoints": [f"{e['name']}://{e['host']}:{e['port']}" for e in v.get("endPoints") or ()],
        "rack": v.get("rack"), "fenced": bool(v.get("fenced", True)),
        "in_controlled_shutdown": bool(v.get("inControlledShutdown", False)),
        "log_dirs": v.get("logDirs") or []}


def _unregister(img: Image, s, v) -> None:
    s["brokers"].pop(v["brokerId"], None)


def _fence(fenced: bool):
    def apply(img: Image, s, v) -> None:
        b = s["brokers"].get(v["id"])
        if b is not None:
            b["fenced"] = fenced
    return apply


def _registration_change(img: Image, s, v) -> None:
    b = s["brokers"].get(v["brokerId"])
    if b is None:
        return
    b["broker_epoch"] = v.get("brokerEpoch", b["broker_epoch"])
    fencing = v.get("fenced", 0)                  # 1 fence, -1 unfence, 0 no change
    if fencing:
        b["fenced"] = fencing == 1
    if v.get("inControlledShutdown", 0) == 1:     # 1 entered controlled shutdown, 0 no change
        b["in_controlled_shutdown"] = True
    if v.get("logDirs") is not None:
        b["log_dirs"] = v["logDirs"]


def _controller(img: Image, s, v) -> None:
    s["controllers"][v["controllerId"]] = {
        "controller_id": v["controllerId"], "incarnation_id": v.get("incarnationId"),
        "endpoints": [f"{e['name']}://{e['host']}:{e['port']}" for e in v.get("endPoints") or ()]}


def _unregister_controller(img: Image, s, v) -> None:
    s["controllers"].pop(v["controllerId"], None)


def _topic(img: Image, s, v) -> None:
    img.topic_names[v["topicId"]] = v["name"]
    s["topics"][v["name"]] = {"name": v["name"], "topic_id": v["topicId"], "partitions": {}}


def _remove_topic(img: Image, s, v) -> None:
    name = img.topic_names.pop(v["topicId"], None)
    if name is not None:
        s["topics"].pop(name, None)
        s["configs"].get("topic", {}).pop(name, None)       # a topic's configs go with it


def _partition(img: Image, s, v) -> None:
    t = img.topic_of(v["topicId"])
    if t is None:
        return
    t["partitions"][v["partitionId"]] = {
        "partition": v["partitionId"], "replicas": v["replicas"], "isr": v["isr"], "leader": v["leader"],
        "leader_epoch": v["leaderEpoch"], "partition_epoch": v["partitionEpoch"],
        "removing_replicas": v.get("removingReplicas") or [], "adding_replicas": v.get("addingReplicas") or [],
        "eligible_leader_replicas": v.get("eligibleLeaderReplicas") or [],
        "last_known_elr": v.get("lastKnownElr") or []}


def _partition_change(img: Image, s, v) -> None:
    t = img.topic_of(v["topicId"])
    p = None if t is None else t["partitions"].get(v["partitionId"])
    if p is None:
        return
    for field, key in (("replicas", "replicas"), ("isr", "isr"), ("removingReplicas", "removing_replicas"),
                       ("addingReplicas", "adding_replicas"), ("eligibleLeaderReplicas", "eligible_leader_replicas"),
                       ("lastKnownElr", "last_known_elr")):
        if v.get(field) is not None:
            p[key] = v[field]
    if v.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
        p["leader"] = v["leader"]
        p["leader_epoch"] += 1           # every leader change, even to the same broker, is a new epoch
    p["partition_epoch"] += 1


def _config(img: Image, s, v) -> None:
    kind = RESOURCE_TYPES.get(v["resourceType"], str(v["resourceType"]))
    configs = s["configs"].setdefault(kind, {}).setdefault(v["resourceName"], {})
    if v.get("value") is None:
        configs.pop(v["name"], None)
    else:
        configs[v["name"]] = v["value"]


def _feature(img: Image, s, v) -> None:
    if v["featureLevel"] == 0:
        s["features"].pop(v["name"], None)
    else:
        s["features"][v["name"]] = v["featureLevel"]


def _acl(img: Image, s, v) -> None:
    s["acls"][v["id"]] = {k: val for k, val in v.items() if not k.startswith("_")}


def _remove_acl(img: Image, s, v) -> None:
    s["acls"].pop(v["id"], None)


def _quota(img: Image, s, v) -> None:
    entity = ",".join(f"{e['entityType']}={e['entityName'] if e.get('entityName') is not None else '<default>'}"
                      for e in v.get("entity") or ())
    quotas = s["quotas"].setdefault(entity, {})
    if v.get("remove"):
        quotas.pop(v["key"], None)
        if not quotas:
            s["quotas"].pop(entity, None)
    else:
        quotas[v["key"]] = v["value"]


def _producer_ids(img: Image, s, v) -> None:
    s["producer_ids"] = {"next_producer_id": v["nextProducerId"], "broker_id": v["brokerId"],
                         "broker_epoch": v["brokerEpoch"]}


def _scram(img: Image, s, v) -> None:
    mechs = s["scram_users"].setdefault(v["name"], [])
    mech = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}.get(v["mechanism"], str(v["mechanism"]))
    if mech not in mechs:
        mechs.append(mech)


def _remove_scram(img: Image, s, v) -> None:
    mech = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}.get(v["mechanism"], str(v["mechanism"]))
    mechs = s["scram_users"].get(v["name"], [])
    if mech in mechs:
        mechs.remove(mech)
    if not mechs:
        s["scram_users"].pop(v["name"], None)


def _token(delta: int):
    def apply(img: Image, s, v) -> None:
        s["delegation_tokens"] = max(0, s["delegation_tokens"] + delta)
    return apply


_HANDLERS = {
    "REGISTER_BROKER_RECORD": _broker, "UNREGISTER_BROKER_RECORD": _unregister,
    "FENCE_BROKER_RECORD": _fence(True), "UNFENCE_BROKER_RECORD": _fence(False),
    "BROKER_REGISTRATION_CHANGE_RECORD": _registration_change,
    "REGISTER_CONTROLLER_RECORD": _controller, "UNREGISTER_CONTROLLER_RECORD": _unregister_controller,
    "TOPIC_RECORD": _topic, "REMOVE_TOPIC_RECORD": _remove_topic, "PARTITION_RECORD": _partition,
    "PARTITION_CHANGE_RECORD": _partition_change, "CONFIG_RECORD": _config, "FEATURE_LEVEL_RECORD": _feature,
    "ACCESS_CONTROL_ENTRY_RECORD": _acl, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": _remove_acl,
    "CLIENT_QUOTA_RECORD": _quota, "PRODUCER_IDS_RECORD": _producer_ids,
    "USER_SCRAM_CREDENTIAL_RECORD": _scram, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": _remove_scram,
    "DELEGATION_TOKEN_RECORD": _token(1), "REMOVE_DELEGATION_TOKEN_RECORD": _token(-1),
}


def _replay(img: Image, files, point: Point, start_offset: int = 0, log: bool = False) -> bool:
    """Apply the records of ``files`` from ``start_offset`` up to the point; False if a
    batch past the point was seen (the point was reached). In the ``log`` (never compacted,
    its old segments deleted only below a snapshot) an offset skipped is a record lost."""
    reader = LogReader(files)
    expected = start_offset
    for f, b, records in reader.batches(lambda b: not b.is_control):
        if b.last_offset < start_offset:
            continue
        if log and b.base_offset > expected and (point.offset is None or expected <= point.offset):
            img.incomplete.append(f"{f.path}: offsets {expected}..{b.base_offset - 1} are not here (a segment "
                                  f"missing between the snapshot and the point): the image may be stale")
        expected = b.last_offset + 1
        if not point.before(b.last_offset, b.max_timestamp):
            return False
        for r, d in decode_records_of(f, b, records, cluster_metadata.decode, img.errors, img.findings):
            if r.offset >= start_offset:
                img.apply(d["type"], d["value"])
        img.last_offset = b.last_offset
        img.last_timestamp = b.max_timestamp
    img.stop = reader.stop
    return True


def _snapshot_time(f) -> int | None:
    """lastContainedLogTimestamp from a snapshot's SnapshotHeader record."""
    reader = LogReader([f])
    for _, b, records in reader.batches(lambda b: b.is_control):
        for r in records or ():
            if r.control is not None and r.control.type == SNAPSHOT_HEADER and r.control.data:
                return r.control.data.get("lastContainedLogTimestamp")
        if not b.is_control:
            break
    return None


def _zookeeper_era(roots) -> str:
    """Why there is no metadata log, when a root's meta.properties says: a version 0 file is a
    ZooKeeper-mode broker's (MetaProperties), whose cluster metadata lives in ZooKeeper."""
    import os

    from kdump.errors import KdumpError
    from kdump.format.logdir_files import META_PROPERTIES_FILE, parse_meta_properties
    from kdump.storage.mapped import read_small

    for root in roots:
        for d in (root, os.path.dirname(os.path.abspath(root))):
            path = os.path.join(d, META_PROPERTIES_FILE)
            try:
                meta = parse_meta_properties(read_small(path), path)
            except (KdumpError, OSError):
                continue
            if meta["version"] == 0:
                broker = "" if meta.get("broker_id") is None else f", broker.id {meta['broker_id']}"
                return (f": {path} is a ZooKeeper-mode broker's (version 0{broker}); its cluster metadata "
                        "lives in ZooKeeper, not in the log dir")
            return ""
    return ""


def load(dirs: LogDirs, point: Point = Point()) -> Image:
    p = dirs.get(CLUSTER_METADATA, 0)
    if p is None:
        raise NothingToDoError("no __cluster_metadata-0 partition here" + _zookeeper_era(dirs.roots),
                               file=" ".join(dirs.roots))
    img = Image()
    start = 0
    snaps = sorted((f for f in side_files(p, KRAFT_SNAPSHOT) if f.base_offset is not None),
                   key=lambda f: f.base_offset)
    for f in reversed(snaps):
        end = f.base_offset          # the snapshot holds every record below this offset
        if point.offset is not None and end > point.offset + 1:
            continue
        if point.time_ms is not None:
            ts = _snapshot_time(f)
            if ts is None or ts > point.time_ms:
                continue
        _replay(img, [f], Point())
        if img.stop is not None:      # a damaged snapshot: the broker would not load it either
            img.errors.append(f"{f.path}: snapshot not used: {img.stop.text()}")
            img = Image()
            continue
        img.snapshot, start = f.path, end
        img.last_offset = end - 1
        break
    logs = segments(p)
    if not logs:
        # (a point the snapshot itself reaches needs nothing after it)
        if point.offset is None or img.last_offset is None or point.offset > img.last_offset:
            img.incomplete.append(f"{p.path}: no .log segment: the records after the snapshot are gone")
    elif _replay(img, logs, point, start, log=True):
        # the point is past what is here: a segment named only by its indexes held more
        after = start if img.last_offset is None else max(start, img.last_offset + 1)
        lost = [b for b in orphan_segments(p) if b >= after and (point.offset is None or b <= point.offset)]
        if lost:
            img.incomplete.append(f"{p.path}: " + ", ".join(f"{b:020d}.log" for b in lost) + " missing (its "
                                  "indexes are here) between the snapshot and the point: the image may be stale")
    else:
        img.past_point = True
    return img


def short_of(img: Image, point: Point) -> str | None:
    """What the image lacks of the point asked (None when it reached it): nothing at or
    before the point, or data that ends before an offset."""
    if point.offset is None and point.time_ms is None:
        return None
    asked = f"offset {point.offset}" if point.offset is not None else f"time {point.time_ms} (epoch ms)"
    if img.last_offset is None:
        return f"nothing here reaches {asked}: no snapshot at or before it, and no log from offset 0"
    if not img.past_point and img.stop is None and point.offset is not None and img.last_offset < point.offset:
        return f"the data here ends at offset {img.last_offset}, before {asked}"
    return None


def partition_count(dirs: LogDirs, topic: str) -> int | None:
    """How many partitions the metadata gives ``topic`` (None without __cluster_metadata)."""
    if dirs.get(CLUSTER_METADATA, 0) is None:
        return None
    t = load(dirs).state["topics"].get(topic)
    return None if t is None else len(t["partitions"])
