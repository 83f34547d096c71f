"""``info --schemas``: which subjects, versions and schema types a partition's records use,
read from each key's and value's frame (the 5-byte header only)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from kdump.errors import KdumpError
from kdump.model import CONTROL_FLAG, Record
from kdump.schemas import frame
from kdump.schemas.store import SchemaStore
from kdump.storage.logdir import LogFile
from kdump.storage.record_reader import SegmentReader


def record_sides(f: LogFile) -> Iterator[tuple[int, Record, str, bytes | None]]:
    """(batch position, record, "key" or "value", its bytes) of every data record of the
    segment ``f``, control batches left out: what a Schema Registry frame may stand in.
    Damage ends it with the reader's KdumpError."""
    for item in SegmentReader(f, records=True):
        if item.records is None or item.batch.attributes & CONTROL_FLAG:
            continue
        position = item.batch.position
        for r in item.records:
            yield position, r, "key", r.key
            yield position, r, "value", r.value


def partition_usage(files: list[LogFile], store: SchemaStore) -> list[dict[str, Any]]:
    """[{side, id, type, subject, version, records}], known ids first, then unknown ones
    (``type`` null) of sides that use the store."""
    counts: Counter = Counter()
    for f in files:
        if f.kind != "log" or f.leftover is not None:
            continue
        try:
            for _, _, side, data in record_sides(f):
                if frame.is_framed(data):
                    counts[side, frame.schema_id(data)] += 1
        except KdumpError:
            continue             # damage is info's own report
    used = {side for (side, sid) in counts if store.get(sid) is not None}
    topic = next((f.topic for f in files if f.topic), None)
    used |= {side for side in ("key", "value") if topic and store.had_subject(f"{topic}-{side}")}
    out = []
    for (side, sid), n in sorted(counts.items()):
        s = store.get(sid)
        if s is None and side not in used:
            continue             # a 0 byte starting a plain key or value, not a frame
        desc = s.describe() if s is not None else {"id": sid, "type": None}
        out.append({"side": side, **desc, "records": n})
    return out


def text(usage: list[dict[str, Any]]) -> str:
    """``value orders-value v1,v2 AVRO 120, key ... ; unknown id 7 (value) 3``"""
    parts = []
    for u in usage:
        if u["type"] is None:
            parts.append(f"{u['side']} unknown id {u['id']} {u['records']}")
        elif "subject" in u:
            parts.append(f"{u['side']} {u['subject']} v{u['version']} {u['type']} (id {u['id']}) {u['records']}")
        else:
            parts.append(f"{u['side']} id {u['id']} {u['type']} {u['records']}")
    return "; ".join(parts) or "-"
