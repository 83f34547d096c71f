"""Where a schema store comes from: a ``_schemas`` partition found beside the data (or named),
a folder of schema files, a registry cache file, or a live registry (``registry``).

A folder holds ``.avsc`` (Avro), ``.proto`` (Protobuf) and ``.json`` (JSON Schema) files; a
name that starts with digits (``7.avsc``, ``7-orders.avsc``) gives the schema that id, and
every file can be referenced by its file name. ``.ndjson`` files hold Schema Registry records,
one ``{"key": ..., "value": ...}`` object a line, as ``--schema-registry`` caches them.
"""

from __future__ import annotations

import json
import os
import re

from kdump.errors import DecodeError, KdumpError, UsageError
from kdump.schemas import budget
from kdump.schemas.budget import BudgetError
from kdump.schemas.store import AVRO, JSON, PROTOBUF, Problem, Reference, Schema, SchemaStore
from kdump.storage.levels import expand
from kdump.storage.logdir import LOG, LogFile, classify
from kdump.storage.record_reader import SegmentReader

SCHEMAS_TOPIC = "_schemas"
SCHEMAS_DIR = SCHEMAS_TOPIC + "-0"
_SUFFIX_TYPES = {".avsc": AVRO, ".proto": PROTOBUF, ".json": JSON}
_ID_NAME = re.compile(r"^(\d+)(?:[-_.]|$)")


def find_schemas_dir(paths) -> str | None:
    """The ``_schemas-0`` of the log dir a PATH is in (or is), if there is one."""
    for path in paths:
        p = os.path.abspath(path)
        candidates = [p] if os.path.isdir(p) else []
        candidates += [os.path.dirname(p), os.path.dirname(os.path.dirname(p))]
        for c in candidates:
            if os.path.basename(c) == SCHEMAS_DIR:
                return c if os.path.isabs(path) else os.path.relpath(c)
            here = os.path.join(c, SCHEMAS_DIR)
            if os.path.isdir(here):
                return here if os.path.isabs(path) else os.path.relpath(here)
    return None


def load(path: str) -> SchemaStore:
    """A store from PATH: a ``_schemas`` partition dir (or one of its segments), a folder of
    schema files, or an ``.ndjson`` cache."""
    if os.path.isfile(path) and path.endswith(".ndjson"):
        store = SchemaStore()
        read_ndjson(path, store)
        return store
    if not os.path.exists(path):
        raise UsageError("no such file or directory (--schemas)", file=path)
    if os.path.isdir(path) and not _holds_segments(path):
        return load_folder(path)      # whatever its name: a folder called sch-7 is no partition
    return replay_partition(path)


def _holds_segments(path: str) -> bool:
    """A ``_schemas`` partition is told by what it holds (``.log`` segments), not by its name."""
    try:
        with os.scandir(path) as it:
            return any(classify(e.name) is not None and classify(e.name)[0] == LOG for e in it)
    except OSError:
        return False


def replay_partition(path: str) -> SchemaStore:
    """Replay the segments of a ``_schemas`` partition in offset order, as the registry does."""
    store = SchemaStore()
    files = [f for f in expand(path) if f.kind == "log" and f.leftover is None]
    files.sort(key=lambda f: f.base_offset or 0)
    for f in files:
        _replay_segment(f, store)
    return store


def _replay_segment(f: LogFile, store: SchemaStore) -> None:
    reader = SegmentReader(f, records=True)
    try:
        for item in reader:
            if item.error is not None:
                store.problems.append(Problem(item.batch.base_offset, f"{f.path}: {item.error.message}"))
                continue
            if item.batch.attributes & 0x20:               # control batch (transaction markers)
                continue
            for r in item.records:
                store.replay(r.key, r.value, r.offset)
    except KdumpError as e:
        store.problems.append(Problem(None, f"{f.path}: {e.message}"))
    if reader.stop is not None:
        store.problems.append(Problem(None, f"{f.path}:{reader.stop.position}: {reader.stop.message}"))


def read_ndjson(path: str, store: SchemaStore) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    if "key" not in rec and "id" in rec:         # an answer of GET /schemas/ids/{id}
                        store.add(schema_of_id(rec["id"], rec))
                        continue
                    key = json.dumps(rec["key"]).encode()
                    value = None if rec.get("value") is None else json.dumps(rec["value"]).encode()
                except (ValueError, KeyError, TypeError) as e:
                    store.problems.append(Problem(None, f"{path}: line {n}: not a registry record ({e})"))
                    continue
                except RecursionError:
                    store.problems.append(Problem(None, f"{path}: line {n}: not a registry record (past the "
                                                        "depth budget: the JSON nests too deeply)"))
                    continue
                store.replay(key, value, None)
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read the schema cache: {e}", file=path) from None


def schema_of_id(schema_id: int, answer: dict) -> Schema:
    """The schema of a registry's answer for one id ({schema, schemaType, references}): no
    subject or version, as no subject lists it."""
    if type(schema_id) is not int or not isinstance(answer.get("schema"), str):
        raise ValueError(f"not a schema answer for id {schema_id!r}")
    stype = answer.get("schemaType") or AVRO
    if stype not in (AVRO, PROTOBUF, JSON):
        raise ValueError(f"unknown schemaType {stype!r}")
    refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                 for r in answer.get("references") or ())
    return Schema(schema_id, stype, answer["schema"], refs)


def load_folder(path: str) -> SchemaStore:
    store = SchemaStore()
    for root, _, names in sorted(os.walk(path)):
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, path)
            if name.endswith(".ndjson"):
                read_ndjson(full, store)
                continue
            stype = _SUFFIX_TYPES.get(os.path.splitext(name)[1])
            if stype is None:
                continue
            try:
                with open(full, encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError) as e:
                store.problems.append(Problem(None, f"{full}: {e}"))
                continue
            m = _ID_NAME.match(name)
            s = Schema(int(m.group(1)) if m else -1, stype, text, subject=None)
            store.by_name[rel] = s
            store.by_name.setdefault(name, s)
            if stype == AVRO:
                _name_avro(store, s, full)
            if m:
                store.add(s)
    return store


def _name_avro(store: SchemaStore, s: Schema, path: str) -> None:
    """An Avro file is referenced by the full name of the type it defines (a file past the
    schema budgets is one problem of the store; using it says the same)."""
    try:
        doc = budget.load_schema_json(s.text, "the schema")
    except BudgetError as e:
        store.problems.append(Problem(None, f"{path}: {e.message}"))
        return
    except DecodeError:
        return
    if isinstance(doc, dict) and isinstance(doc.get("name"), str):
        name = doc["name"]
        if "." not in name and isinstance(doc.get("namespace"), str) and doc["namespace"]:
            name = doc["namespace"] + "." + name
        store.by_name.setdefault(name, s)
