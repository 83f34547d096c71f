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
import hashlib
import json
import os
import time
import urllib.parse
from typing import Any

from kdump.schemas import http_get
from kdump.schemas.http_get import RegistryError, get_json
from kdump.schemas.sources import read_ndjson, schema_of_id
from kdump.schemas.store import Schema, SchemaStore

MAX_FETCHED_IDS = 256
MAX_REQUESTS = 25_000           # requests of one --schema-registry read (a subject costs 3 or more)
READ_DEADLINE = 900.0           # seconds for the whole read; and for a run's on-demand id fetches

_NAME_MAX = 200                 # a cache file name longer than this is cut and given a hash

__all__ = ["RegistryError", "default_cache", "fetch", "records", "IdFetcher"]


def default_cache(url: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    name = urllib.parse.quote(url.rstrip("/"), safe="")
    if len(name) > _NAME_MAX:
        name = name[:_NAME_MAX - 17] + "-" + hashlib.sha256(url.encode()).hexdigest()[:16]
    return os.path.join(base, "kdump", "schema-registry", name + ".ndjson")


class _Client:
    """The GETs of one read of the registry, counted against ``MAX_REQUESTS`` and, all
    together, ``READ_DEADLINE`` seconds (each one also has its own deadline)."""

    def __init__(self, url: str, limit: int | None = None, seconds: float | None = None) -> None:
        self.url, self.left = url.rstrip("/"), MAX_REQUESTS if limit is None else limit
        self.until = time.monotonic() + (READ_DEADLINE if seconds is None else seconds)

    def get(self, path: str, want: type | tuple[type, ...]) -> Any:
        """The JSON at ``path`` if it is a ``want`` (None for a 404); RegistryError if not."""
        if self.left <= 0:
            raise RegistryError(f"{self.url}: the registry needs more than {MAX_REQUESTS} requests; kdump stops "
                                "there (read a cache made elsewhere with --schemas FILE)")
        left = self.until - time.monotonic()
        if left <= 0:
            raise self._late()
        self.left -= 1
        try:
            got = get_json(self.url + path, timeout=min(http_get.TIMEOUT, left))
        except RegistryError:
            if time.monotonic() >= self.until:        # cut short by the read's deadline, not its own
                raise self._late() from None
            raise
        if got is not None and not isinstance(got, want):
            raise RegistryError(f"{self.url}{path[:200]}: not a Schema Registry answer (a JSON "
                                f"{_JSON_KINDS.get(type(got), 'value')} where kdump expects a{_names(want)})")
        return got

    def _late(self) -> RegistryError:
        return RegistryError(f"{self.url}: reading the registry took more than {READ_DEADLINE:g} s; kdump stops "
                             "there (read a cache made elsewhere with --schemas FILE)")


_JSON_KINDS = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def _names(want: type | tuple[type, ...]) -> str:
    kinds = want if isinstance(want, tuple) else (want,)
    return "n " + " or ".join(_JSON_KINDS[k] for k in kinds)


def _check(ok: bool, url: str, path: str, what: str) -> None:
    if not ok:
        raise RegistryError(f"{url}{path[:200]}: not a Schema Registry answer ({what})")


def records(url: str) -> list[dict[str, Any]]:
    """Everything the registry holds, as ``_schemas`` records ({"key", "value"})."""
    out: list[dict[str, Any]] = []
    c = _Client(url)
    q = urllib.parse.quote
    top = c.get("/config", dict)
    if top and isinstance(top.get("compatibilityLevel"), str):
        out.append({"key": {"keytype": "CONFIG", "subject": None, "magic": 0},
                    "value": {"compatibilityLevel": top["compatibilityLevel"]}})
    subjects = c.get("/subjects?deleted=true", list) or []
    _check(all(isinstance(s, str) for s in subjects), c.url, "/subjects", "a subject that is not a string")
    for subject in subjects:
        base = f"/subjects/{q(subject, safe='')}"
        live = c.get(f"{base}/versions", list) or []
        versions = c.get(f"{base}/versions?deleted=true", list) or []
        _check(all(type(v) is int for v in live + versions), c.url, f"{base}/versions", "a version not an integer")
        live_set = set(live)
        for version in versions:
            v = c.get(f"{base}/versions/{version}?deleted=true", dict)
            if not v:
                continue
            path = f"{base}/versions/{version}"
            _check(type(v.get("id")) is int and isinstance(v.get("schema"), str), c.url, path,
                   "no integer id or no schema text")
            _check(isinstance(v.get("schemaType"), (str, type(None))), c.url, path, "a schemaType not a string")
            refs = v.get("references") or []
            _check(isinstance(refs, list) and all(isinstance(r, dict) and isinstance(r.get("name"), str) and
                                                  isinstance(r.get("subject"), str) and type(r.get("version")) is int
                                                  for r in refs), c.url, path, "references not a list of "
                                                                               "{name, subject, version}")
            value = {"subject": subject, "version": version, "id": v["id"], "schema": v["schema"],
                     "deleted": version not in live_set}
            if v.get("schemaType") and v["schemaType"] != "AVRO":
                value["schemaType"] = v["schemaType"]
            if refs:
                value["references"] = refs
            out.append({"key": {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1},
                        "value": value})
        cfg = c.get(f"/config/{q(subject, safe='')}", dict)
        if cfg and isinstance(cfg.get("compatibilityLevel"), str) and cfg != top:
            out.append({"key": {"keytype": "CONFIG", "subject": subject, "magic": 0},
                        "value": {"compatibilityLevel": cfg["compatibilityLevel"]}})
    return out


def fetch(url: str, cache: str | None = None) -> tuple[SchemaStore, str]:
    """The registry's store, written to ``cache`` (atomically); (store, cache path)."""
    cache = cache or default_cache(url)
    recs = records(url)
    tmp = f"{cache}.{os.getpid()}.kdump-tmp"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(cache)), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in recs:
                fh.write(json.dumps(r, separators=(",", ":")) + "\n")
        os.replace(tmp, cache)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        where = f"{e.filename}: " if e.filename and e.filename != tmp else ""
        raise RegistryError(f"cannot write the schema cache: {where}{e.strerror or e} (name another with "
                            "--schema-cache FILE)", file=cache) from None
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
        self.client: _Client | None = None          # made at the first ask: the deadline runs from there

    def __call__(self, schema_id: int) -> Schema | None:
        if schema_id in self.asked or self.left <= 0 or self.failed is not None:
            return None
        self.asked.add(schema_id)
        self.left -= 1
        try:
            if self.client is None:
                self.client = _Client(self.url, MAX_FETCHED_IDS)
            answer = self.client.get(f"/schemas/ids/{schema_id}", dict)
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
