"""``verify --schemas`` on a broker-written log dir whose ``_schemas`` holds a Protobuf and a
JSON Schema subject that broke their declared compatibility (fixtures/schemas/evolution,
written by ``fixtures/schemas/generate.py evolution``), and its records decoded as
confluent-kafka's deserializers decode them."""

from __future__ import annotations

import hashlib
import json

import pytest
from test_schemas_oracle import ctx, records

from support.registry import Registry
from support.run import FIXTURES, run_kdump

pytest.importorskip("confluent_kafka.schema_registry")
pytest.importorskip("grpc_tools")

LOGDIR = FIXTURES / "schemas" / "evolution"
SCHEMAS = LOGDIR / "_schemas-0"
PROTO_BREAK = ("schema_incompatible at offset 3: subject evolve-proto-value: version 3 cannot read version 2's "
               "data (BACKWARD): message lab.Reading: field 2 (celsius): int32 -> double changes its wire encoding")
JSON_BREAK = ("schema_incompatible at offset 7: subject evolve-json-value: version 3 cannot read version 2's data "
              "(BACKWARD_TRANSITIVE): #/required/name: the property became required without a default")


def test_verify_reports_the_subjects_that_broke_their_level():
    r = run_kdump("verify", str(LOGDIR), "--schemas", "--format", "text", "-q")
    assert r.code == 0, r.err                      # an anomaly: the records still decode
    found = [line.split(": ", 1)[1] for line in r.out.splitlines() if "schema_" in line]
    assert found == [PROTO_BREAK, JSON_BREAK]       # v2 of each (a compatible step) is not reported
    assert run_kdump("verify", str(LOGDIR), "--schemas", "--strict", "-q").code == 1
    r = run_kdump("verify", str(LOGDIR), "--schemas", "--json", "-q")
    report = [json.loads(line) for line in r.out.splitlines() if '"kind": "schemas"' in line]
    assert [f["kind"] for f in report[0]["findings"]] == ["schema_incompatible", "schema_incompatible"]
    assert report[0]["file"].endswith("_schemas-0")


def test_store_holds_the_levels_and_versions():
    from kdump.schemas.sources import load

    store = load(str(SCHEMAS))
    assert store.compatibility("evolve-proto-value") == "BACKWARD"          # the global default
    assert store.compatibility("evolve-json-value") == "BACKWARD_TRANSITIVE"
    assert sorted(store.versions["evolve-proto-value"]) == [1, 2, 3]
    assert sorted(store.versions["evolve-json-value"]) == [1, 2, 3]


@pytest.fixture(scope="module")
def registry_url():
    reg = Registry.from_records([(r.key, r.value) for r in records(SCHEMAS)])
    server, url = reg.serve()
    yield url
    server.shutdown()


def test_records_decode_as_confluent_deserializers_read_them(registry_url):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from google.protobuf.json_format import MessageToDict

    from kdump.schemas import frame
    from kdump.schemas.decoder import SchemaDecoder
    from kdump.schemas.sources import load

    store = load(str(SCHEMAS))
    mine = SchemaDecoder("auto", store)
    json_oracle = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": registry_url}))
    recs = records(LOGDIR / "evolve-json-0")
    assert len(recs) == 6
    for r in recs:
        assert mine(r.value) == json_oracle(r.value, ctx("evolve-json"))
    recs = records(LOGDIR / "evolve-proto-0")
    assert len(recs) == 6
    versions = set()
    for r in recs:
        s = store.get(frame.schema_id(r.value))
        versions.add(s.version)
        cls = mine.parsed(s).message_class([0])        # the writer's own version of lab.Reading
        oracle = ProtobufDeserializer(cls, {"use.deprecated.format": False})
        expect = MessageToDict(oracle(r.value, ctx("evolve-proto")), preserving_proto_field_name=True)
        assert mine(r.value) == expect, r.offset
    assert versions == {1, 2, 3}
    assert mine(recs[-1].value)["celsius"] == 21.5


def test_fixture_bytes_are_the_brokers():
    for line in (FIXTURES / "schemas" / "SHA256SUMS-evolution").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((LOGDIR / name).read_bytes()).hexdigest() == digest, name
