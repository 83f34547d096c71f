"""The cluster image as ``kdump metadata`` shows it: NDJSON objects, and the changes from one
image to another (``--diff``). The image itself is replayed in ``kdump.state.cluster_image``."""

from __future__ import annotations

from typing import Any

from kdump.state.cluster_image import Image


def objects(img: Image) -> list[dict[str, Any]]:
    """The image as NDJSON objects: a header, then features, controllers, brokers, topics
    (with partitions), configs, ACLs, quotas, producer ids, SCRAM users."""
    s = img.state
    out: list[dict[str, Any]] = [{"object": "metadata", **img.to_dict()}]
    out += [{"object": "feature", "name": k, "level": v} for k, v in sorted(s["features"].items())]
    out += [{"object": "controller", **v} for _, v in sorted(s["controllers"].items())]
    out += [{"object": "broker", **v} for _, v in sorted(s["brokers"].items())]
    for name, t in sorted(s["topics"].items()):
        out.append({"object": "topic", "name": name, "topic_id": t["topic_id"],
                    "partitions": [p for _, p in sorted(t["partitions"].items())]})
    for kind, resources in sorted(s["configs"].items()):
        out += [{"object": "config", "resource_type": kind, "resource_name": name, "configs": dict(sorted(c.items()))}
                for name, c in sorted(resources.items()) if c]
    out += [{"object": "acl", **v} for _, v in sorted(s["acls"].items())]
    out += [{"object": "quota", "entity": e, "quotas": q} for e, q in sorted(s["quotas"].items())]
    if s["producer_ids"] is not None:
        out.append({"object": "producer_ids", **s["producer_ids"]})
    out += [{"object": "scram_user", "name": n, "mechanisms": sorted(m)} for n, m in sorted(s["scram_users"].items())]
    if s["delegation_tokens"]:
        out.append({"object": "delegation_tokens", "count": s["delegation_tokens"]})
    return out


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{path}/{k}" if path else str(k), out)
    elif path.count("/") >= 1 or not isinstance(value, dict):     # an empty section is no entry
        out[path] = value


# Leaves that Kafka keeps as a map or a set, whose listed order carries no meaning: a broker's
# endpoints (BrokerRegistration's listeners, by name).
_UNORDERED = ("endpoints",)


def _same_set(path: str, a: Any, b: Any) -> bool:
    return (path.rsplit("/", 1)[-1] in _UNORDERED and isinstance(a, list) and isinstance(b, list)
            and sorted(map(str, a)) == sorted(map(str, b)))


def diff(a: Image, b: Image) -> list[dict[str, Any]]:
    """What changed from image ``a`` to image ``b``, one object per leaf path
    (``topics/orders/partitions/0/leader``), in path order."""
    fa: dict[str, Any] = {}
    fb: dict[str, Any] = {}
    _flatten(a.state, "", fa)
    _flatten(b.state, "", fb)
    out = []
    for path in sorted(set(fa) | set(fb)):
        if path not in fb:
            out.append({"object": "change", "change": "removed", "path": path, "before": fa[path]})
        elif path not in fa:
            out.append({"object": "change", "change": "added", "path": path, "after": fb[path]})
        elif fa[path] != fb[path] and not _same_set(path, fa[path], fb[path]):
            out.append({"object": "change", "change": "changed", "path": path, "before": fa[path], "after": fb[path]})
    return out
