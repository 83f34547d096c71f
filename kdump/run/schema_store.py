"""The schema store a run reads (--schemas, --schema-registry, the log dir's own _schemas-0),
with a note on where it came from, and the Schema Registry decoders built on it."""

from __future__ import annotations

from typing import Any

from kdump.errors import UsageError
from kdump.schemas.decoder import SCHEMA_DECODERS


def load_store(paths, schemas_path: str | None, registry: str | None, cache: str | None, out, need: bool):
    """The schema store for these PATHS, and a note on stderr saying where it came from; None
    when there is none and none is needed."""
    from kdump.schemas import sources

    if registry:
        from kdump.schemas.registry import fetch

        store, cache = fetch(registry, cache)
        where = f"{registry} (cached in {cache}; --schemas {cache} reads it offline)"
    else:
        path = schemas_path or sources.find_schemas_dir(paths)
        if path is None:
            if need:
                raise UsageError("no schema store: no _schemas-0 in the log dir of PATHS; name one with "
                                 "--schemas PATH or --schema-registry URL")
            return None
        store = sources.load(path)
        where = path
    out.note(f"kdump: note: schemas from {where}: {len(store)} schema ids, {len(store.versions)} subjects")
    for p in store.problems[:5]:
        at = f" (offset {p.offset})" if p.offset is not None else ""
        out.note(f"kdump: note: schema store{at}: {p.message}")
    if len(store.problems) > 5:
        out.note(f"kdump: note: schema store: {len(store.problems) - 5} more records skipped")
    return store


def schema_decoders(paths, key_decoder: str | None, value_decoder: str | None, schemas_path: str | None,
                    registry: str | None, cache: str | None, out, validate: bool = False) -> dict[str, Any]:
    """{"key": SchemaDecoder, "value": SchemaDecoder} for the sides that name a schema decoder."""
    from kdump.schemas.decoder import SchemaDecoder
    from kdump.schemas.store import SchemaStore

    sides = {side: name for side, name in (("key", key_decoder), ("value", value_decoder))
             if name in SCHEMA_DECODERS}
    if not sides and not (schemas_path or registry):
        return {}
    need = any(name in ("avro", "protobuf", "jsonschema") for name in sides.values())
    store = load_store(paths, schemas_path, registry, cache, out, need)
    if store is None:                    # (an empty store is falsy, and keeps its on-demand id fetch)
        store = SchemaStore()
    return {side: SchemaDecoder(name, store, validate) for side, name in sides.items()}


def info_store(paths, schemas_path: str | None, out):
    """``info --schemas[=STORE]``: the store, or None without the option."""
    return None if schemas_path is None else load_store(paths, schemas_path or None, None, None, out, need=True)


def usage_of(files, store) -> tuple[dict[str, Any], str]:
    """``info --schemas``' additions to a partition: (JSON members, text line)."""
    if store is None:
        return {}, ""
    from kdump.schemas import usage

    used = usage.partition_usage(files, store)
    return {"schemas": used}, f"  schemas: {usage.text(used)}\n"
