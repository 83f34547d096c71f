"""A live Schema Registry (Confluent's REST API, which Karapace and Apicurio also serve), read
once and cached as the registry's own records, so a later run decodes offline
(``--schemas CACHE``).

Every subject and version is fetched, soft-deleted ones included (``?deleted=true``), and the
global and per-subject compatibility; the cache holds them as ``_schemas`` records, replayed
by the same code as the topic.

A record may carry an id that no subject lists: its subject was permanently deleted while the
registry still serves the id, or it was registered under a context. Such an id is asked for
on demand (``GET /schemas/ids/{id}``, at most ``MAX_FETCHED_IDS`` a run, each once) and the
answer appended to the cache as one ``{"id", "schema", "schemaType", "references"}`` line.
"""

from __future__ import annotations

import fcntl
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from kdump.errors import KdumpError
from kdump.schemas.sources import read_ndjson, schema_of_id
from kdump.schemas.store import Schema, SchemaStore

TIMEOUT = 30
MAX_FETCHED_IDS = 256
ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"


class RegistryError(KdumpError):
    """The registry could not be read (exit 3)."""


def default_cache(url: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    name = urllib.parse.quote(url.rstrip("/"), safe="") + ".ndjson"
    return os.path.join(base, "kdump", "schema-registry", name)


def _get(url: str, path: str) -> Any:
    req = urllib.request.Request(url.rstrip("/") + path, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise RegistryError(f"{url}{path}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise RegistryError(f"{url}: cannot read the registry: {getattr(e, 'reason', e)}") from None


def records(url: str) -> list[dict[str, Any]]:
    """Everything the registry holds, as ``_schemas`` records ({"key", "value"})."""
    out: list[dict[str, Any]] = []
    q = urllib.parse.quote
    top = _get(url, "/config")
    if top and top.get("compatibilityLevel"):
        out.append({"key": {"keytype": "CONFIG", "subject": None, "magic": 0},
                    "value": {"compatibilityLevel": top["compatibilityLevel"]}})
    for subject in _get(url, "/subjects?deleted=true") or []:
        live = set(_get(url, f"/subjects/{q(subject, safe='')}/versions") or [])
        for version in _get(url, f"/subjects/{q(subject, safe='')}/versions?deleted=true") or []:
            v = _get(url, f"/subjects/{q(subject, safe='')}/versions/{version}?deleted=true")
            if not v:
                continue
            value = {"subject": subject, "version": version, "id": v["id"], "schema": v["schema"],
                     "deleted": version not in live}
            if v.get("schemaType") and v["schemaType"] != "AVRO":
                value["schemaType"] = v["schemaType"]
            if v.get("references"):
                value["references"] = v["references"]
            out.append({"key": {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1},
                        "value": value})
        cfg = _get(url, f"/config/{q(subject, safe='')}")
        if cfg and cfg.get("compatibilityLevel") and cfg != top:
            out.append({"key": {"keytype": "CONFIG", "subject": subject, "magic": 0},
                        "value": {"compatibilityLevel": cfg["compatibilityLevel"]}})
    return out


def fetch(url: str, cache: str | None = None) -> tuple[SchemaStore, str]:
    """The registry's store, written to ``cache`` (atomically); (store, cache path)."""
    cache = cache or default_cache(url)
    recs = records(url)
    os.makedirs(os.path.dirname(os.path.abspath(cache)), exist_ok=True)
    tmp = f"{cache}.{os.getpid()}.kdump-tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in recs:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    os.replace(tmp, cache)
    store = SchemaStore()
    read_ndjson(cache, store)
    store.fetch = IdFetcher(url, cache)
    return store, cache


class IdFetcher:
    """Asks the registry for ids its subjects do not list, each once, up to ``limit`` a run;
    after the registry fails once it is not asked again (those records stay unknown)."""

    def __init__(self, url: str, cache: str | None, limit: int = MAX_FETCHED_IDS) -> None:
        self.url, self.cache, self.left = url, cache, limit
        self.asked: set[int] = set()
        self.failed: str | None = None

    def __call__(self, schema_id: int) -> Schema | None:
        if schema_id in self.asked or self.left <= 0 or self.failed is not None:
            return None
        self.asked.add(schema_id)
        self.left -= 1
        try:
            answer = _get(self.url, f"/schemas/ids/{schema_id}")
        except RegistryError as e:
            self.failed = e.message
            return None
        try:
            s = schema_of_id(schema_id, answer if isinstance(answer, dict) else {})
        except (ValueError, KeyError, TypeError):
            return None                  # 404, or not a schema: the id stays unknown
        if self.cache is not None:
            line = {"id": schema_id, "schema": s.text, "schemaType": s.schema_type}
            if answer.get("references"):
                line["references"] = answer["references"]
            _append(self.cache, json.dumps(line, separators=(",", ":")) + "\n")
        return s


def _append(path: str, line: str) -> None:
    """One whole line at the end of the cache, under a lock (forked workers may append too)."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(line)
            fh.flush()
    except OSError:
        pass                             # the cache is a convenience: this run has the schema anyway
