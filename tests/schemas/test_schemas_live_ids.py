"""--schema-registry: an id that no subject lists (here: the permanently deleted
scratch-json-value, whose id 12 the registry still serves) is asked for on demand with
GET /schemas/ids/{id}, once, and kept in the cache for offline runs."""

from __future__ import annotations

import json

from test_schemas_oracle import SCHEMAS, records

from support.registry import Registry
from support.run import FIXTURES, run_kdump

PART = str(FIXTURES / "schemas" / "registry" / "scratch-json-0")


def test_an_id_no_subject_lists_is_fetched_and_cached(tmp_path):
    reg = Registry.from_records([(r.key, r.value) for r in records(SCHEMAS)])
    assert not reg.subjects.get("scratch-json-value") and 12 in reg.schemas      # served, listed nowhere
    server, url = reg.serve()
    cache = tmp_path / "cache.ndjson"
    try:
        live = run_kdump("dump", PART, "--value-decoder", "jsonschema", "--schema-registry", url,
                         "--schema-cache", str(cache), "-q")
        checked = run_kdump("verify", PART, "--schema-registry", url, "--schema-cache", str(cache),
                            "--format", "text", "-q")
    finally:
        server.shutdown()
    assert live.code == 0, live.err
    assert live.out.count("payload: {\"n\":") == 2 and "decode failed" not in live.out
    assert checked.code == 0 and "schema_unknown_id" not in checked.out
    answers = [json.loads(x) for x in cache.read_text().splitlines() if '"key"' not in x]
    assert answers == [{"id": 12, "schema": reg.schemas[12]["schema"], "schemaType": "JSON"}]   # once a run
    offline = run_kdump("dump", PART, "--value-decoder", "jsonschema", "--schemas", str(cache), "-q")
    assert offline.code == 0 and offline.out == live.out
    # without the registry the _schemas topic alone does not know the id
    r = run_kdump("verify", PART, "--schemas=" + str(SCHEMAS), "--format", "text", "-q")
    assert r.code == 1 and "schema_unknown_id at byte 0 offset 0" in r.out


def test_fetching_is_bounded_and_stops_when_the_registry_fails(tmp_path):
    from kdump.schemas.registry import IdFetcher

    reg = Registry.from_records([(r.key, r.value) for r in records(SCHEMAS)])
    server, url = reg.serve()
    try:
        fetch = IdFetcher(url, str(tmp_path / "c.ndjson"), limit=2)
        assert fetch(999) is None                     # a 404: unknown
        assert fetch(12).schema_type == "JSON"
        assert fetch(1) is None                       # the limit is reached
        assert fetch(12) is None                      # and each id is asked once
    finally:
        server.shutdown()
        server.server_close()
    assert len((tmp_path / "c.ndjson").read_text().splitlines()) == 1
    down = IdFetcher(url, None)
    assert down(12) is None and down.failed is not None and down(3) is None
