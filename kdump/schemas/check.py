"""``verify --schemas``: every framed record decoded under its schema, and the store itself
(records that are not Schema Registry's, subjects whose versions break their compatibility).

A partition's records are read with the dump's reader; a key or value is checked when it is
a Schema Registry frame (magic 0 and at least 5 bytes) or, for a JSON Schema, validated
against its schema. Findings name the segment, the batch's byte position and the offset.
"""

from __future__ import annotations

from kdump import findings
from kdump.errors import DecodeError, KdumpError
from kdump.model import Finding
from kdump.schemas import compat, frame
from kdump.schemas.budget import BudgetError
from kdump.schemas.decoder import SchemaDecoder, UnknownSchemaId
from kdump.schemas.sources import SCHEMAS_TOPIC
from kdump.schemas.store import SchemaStore
from kdump.schemas.usage import record_sides
from kdump.storage.logdir import LogFile


def store_findings(store: SchemaStore, decoder: SchemaDecoder) -> list[Finding]:
    out = [Finding(findings.SCHEMA_STORE_RECORD, None, p.offset, p.message) for p in store.problems]
    for s, level, why in compat.subject_breaks(store, decoder.parsed):
        out.append(Finding(findings.SCHEMA_INCOMPATIBLE, None, s.offset,
                           f"subject {s.subject}: {why}"))
    return out


def segment_findings(f: LogFile, decoder: SchemaDecoder) -> list[Finding]:
    """The findings of one segment's records (nothing for the _schemas topic itself).

    A key or value that merely starts with a 0 byte is not taken for a frame unless its side
    of the topic uses the store: some record there has a known id, or the store has (or had)
    the subject ``<topic>-key``/``<topic>-value`` (the serializers' default naming).
    """
    if f.topic == SCHEMAS_TOPIC or (f.topic or "").startswith("__"):
        return []
    store = decoder.store
    uses = {side: store.had_subject(f"{f.topic}-{side}") for side in ("key", "value")}
    unknown: dict[str, list[Finding]] = {"key": [], "value": []}
    out: list[Finding] = []
    try:
        for position, r, side, data in record_sides(f):
            if not frame.is_framed(data):
                if data and data[0] == frame.MAGIC:         # a frame cut short, if the side uses frames
                    unknown[side].append(Finding(findings.SCHEMA_DECODE, position, r.offset,
                                                 f"the {side}: truncated frame: {len(data)} bytes, the "
                                                 f"header alone is {frame.HEADER_SIZE}"))
                continue
            if store.get(frame.schema_id(data)) is None:
                e = UnknownSchemaId(frame.schema_id(data), store.hard_deleted.get(frame.schema_id(data)))
                unknown[side].append(Finding(findings.SCHEMA_UNKNOWN_ID, position, r.offset,
                                             f"the {side}: {e.message}"))
                continue
            uses[side] = True
            try:
                decoder.decode(data)
            except BudgetError as e:
                out.append(Finding(findings.SCHEMA_BUDGET, position, r.offset, f"the {side}: {e.message}"))
            except DecodeError as e:
                out.append(Finding(findings.SCHEMA_DECODE, position, r.offset, f"the {side}: {e.message}"))
    except KdumpError:
        pass            # damage to the segment itself is verify's own report
    for side in ("key", "value"):
        if uses[side]:
            out += unknown[side]
    return sorted(out, key=lambda x: (x.offset if x.offset is not None else -1))


