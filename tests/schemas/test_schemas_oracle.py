"""kdump's decoding of the broker-written fixture equals confluent-kafka's own deserializers.

fixtures/schemas/registry/ was written by confluent-kafka's Avro, Protobuf and JSON Schema
serializers through a registry whose every change went to the broker's ``_schemas`` topic
(fixtures/schemas/generate.py). Here a registry started from those ``_schemas`` records serves
confluent-kafka's deserializers over HTTP; kdump reads the same ``_schemas`` offline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.registry import Registry
from support.run import FIXTURES, run_kdump

pytest.importorskip("confluent_kafka.schema_registry")
pytest.importorskip("fastavro")

LOGDIR = FIXTURES / "schemas" / "registry"
SCHEMAS = LOGDIR / "_schemas-0"


def records(partition: Path) -> list:
    from kdump.storage.levels import expand
    from kdump.storage.record_reader import SegmentReader

    out = []
    for f in sorted((f for f in expand(str(partition)) if f.kind == "log"), key=lambda f: f.base_offset):
        for item in SegmentReader(f, records=True):
            out += [r for r in item.records if r.control is None]
    return out


@pytest.fixture(scope="module")
def registry_url():
    reg = Registry.from_records([(r.key, r.value) for r in records(SCHEMAS)])
    server, url = reg.serve()
    yield url
    server.shutdown()


@pytest.fixture(scope="module")
def store():
    from kdump.schemas.sources import load

    return load(str(SCHEMAS))


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    out = tmp_path_factory.mktemp("pb")
    protos = FIXTURES / "schemas" / "protos"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{protos}", f"--python_out={out}",
                    "events.proto", "common/money.proto"], check=True)
    sys.path.insert(0, str(out))
    try:
        import events_pb2
    finally:
        sys.path.remove(str(out))
    return events_pb2


def ctx(topic: str):
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE)


def kdump_decoder(store, kind="auto"):
    from kdump.schemas.decoder import SchemaDecoder

    return SchemaDecoder(kind, store)


@pytest.mark.parametrize("topic", ["orders-avro", "payments-avro", "legacy-avro"])
def test_avro_equals_confluent_deserializer(topic, registry_url, store):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    from kdump.schemas.avro import to_json

    oracle = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    mine = kdump_decoder(store, "avro")
    recs = records(LOGDIR / f"{topic}-0")
    assert len(recs) >= 3
    for r in recs:
        assert mine(r.value) == to_json(oracle(r.value, ctx(topic))), r.offset
        if r.key is not None:
            assert mine(r.key) == oracle(r.key, ctx(topic))


def test_avro_versions_and_logical_types_exactly(store):
    """Three versions of one subject; logical types as a person reads them, exact."""
    dec = kdump_decoder(store, "avro")
    recs = records(LOGDIR / "orders-avro-0")
    seen = [dec.decode(r.value)[1] for r in recs]
    assert sorted({(s["subject"], s["version"]) for s in seen}) == [("orders-avro-value", 1),
                                                                     ("orders-avro-value", 2),
                                                                     ("orders-avro-value", 3)]
    first = dec(recs[0].value)
    assert first == {"id": 10, "amount": "370.10", "placed": "2024-02-29T12:40:45.123000Z", "day": "2024-01-11",
                     "ref": "00000000-0000-0000-0000-000000013556", "status": "NEW", "items": ["sku-0"]}
    v2 = dec(recs[6].value)
    assert v2["note"] is None and v2["shipped"] == "2024-02-29T12:30:45.144021Z"
    assert dec(recs[10].value)["id"] == "o-30"


def test_protobuf_equals_confluent_deserializer(registry_url, store, pb):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from google.protobuf.json_format import MessageToDict

    from kdump.schemas import frame

    classes = [pb.Envelope, pb.Order, pb.Order.Line.Discount]
    oracles = [ProtobufDeserializer(c, {"use.deprecated.format": False}) for c in classes]
    mine = kdump_decoder(store, "protobuf")
    recs = records(LOGDIR / "events-proto-0")
    assert len(recs) == 9
    for i, r in enumerate(recs):
        # the writer's message indexes: Envelope [0], Order [1], Order.Line.Discount [1, 1, 0] (Order's
        # nested type 0 is the map entry protoc makes for its map field ``tags``, declared before Line)
        assert frame.message_indexes(r.value)[0] == [[0], [1], [1, 1, 0]][i % 3]
        expect = MessageToDict(oracles[i % 3](r.value, ctx("events-proto")), preserving_proto_field_name=True)
        assert mine(r.value) == expect, r.offset


def test_json_schema_equals_confluent_deserializer(registry_url, store):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    oracle = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": registry_url}))
    mine = kdump_decoder(store, "jsonschema")
    recs = records(LOGDIR / "users-json-0")
    assert len(recs) == 6
    for r in recs:
        assert mine(r.value) == oracle(r.value, ctx("users-json"))


def test_store_replays_deletes(store):
    assert store.versions["legacy-avro-value"][1].deleted          # soft: the id still decodes
    assert "scratch-json-value" not in store.versions or not store.versions["scratch-json-value"]
    assert 12 not in store.by_id and 12 in store.hard_deleted
    assert [r.name for r in store.version("payments-avro-value", 1).references] == ["shop.Money"]
    assert [r.name for r in store.version("events-proto-value", 1).references] == ["common/money.proto"]
    assert store.compatibility("orders-avro-value") == "BACKWARD"
    assert not store.problems


def test_dump_text_json_and_table(tmp_path):
    part = str(LOGDIR / "orders-avro-0")
    r = run_kdump("dump", part, "--value-decoder", "avro", "--key-decoder", "avro", "--end-offset", "0", "-q")
    assert r.code == 0, r.err
    line = [x for x in r.out.splitlines() if x.startswith("| offset: 0")][0]
    assert line.endswith('key: order-10 payload: {"id":10,"amount":"370.10","placed":"2024-02-29T12:40:45.123000Z",'
                         '"day":"2024-01-11","ref":"00000000-0000-0000-0000-000000013556","status":"NEW",'
                         '"items":["sku-0"]}')
    r = run_kdump("dump", part, "--value-decoder", "auto", "--end-offset", "0", "--json", "--encoding", "base64")
    rec = json.loads(r.out.splitlines()[0])["records"][0]
    assert rec["decoded"]["value"]["amount"] == "370.10"
    assert rec["decoded"]["value_schema"] == {"id": 1, "type": "AVRO", "subject": "orders-avro-value", "version": 1}
    assert rec["value"].startswith("AAAAAAE")                  # the raw bytes stay beside it
    r = run_kdump("dump", part, "--value-decoder", "avro", "--end-offset", "0", "--format", "table", "-q")
    assert '{"id":10,"amount":"370.10"' in r.out.replace("\n", "")


def test_real_connect_envelope():
    part = FIXTURES / "real" / "mscaldas2012__kafka-connect-spooldir" / "kafka-data" / "teamMembers7-0"
    r = run_kdump("dump", str(part), "--value-decoder", "auto", "--key-decoder", "connect", "--json", "-q")
    assert r.code == 0, r.err
    rec = json.loads(r.out.splitlines()[0])["records"][0]
    assert rec["decoded"]["key"] == {"email": "mcq1@cdc.gov"}
    assert rec["decoded"]["value"]["_processTime"] == 1558997576000
    assert rec["decoded"]["value_schema"] == {"type": "CONNECT_JSON", "name": "gov.cdc.ncezid.eip.ds.model.TeamMember"}


def test_real_schemas_topic_of_noops():
    """The real _schemas beside it holds only NOOP markers: an empty store, no problem."""
    from kdump.schemas.sources import find_schemas_dir, load

    part = FIXTURES / "real" / "mscaldas2012__kafka-connect-spooldir" / "kafka-data" / "test10-0"
    found = find_schemas_dir([str(part)])
    assert found is not None and found.endswith("_schemas-0")
    store = load(found)
    assert len(store) == 0 and not store.problems


def test_unknown_and_deleted_ids():
    part = str(LOGDIR / "scratch-json-0")
    r = run_kdump("dump", part, "--value-decoder", "jsonschema", "-q")
    assert r.code == 0
    assert "payload: <decode failed: schema id 12 is not in the schema store (permanently deleted: it was " \
           "scratch-json-value version 1, offset " in r.out
    r = run_kdump("dump", part, "--value-decoder", "auto", "-q")
    assert 'payload: \\x00\\x00\\x00\\x00\\x0c{"n":0}' in r.out      # auto: not a frame it knows, shown raw


def test_info_lists_subjects_and_types():
    r = run_kdump("info", str(LOGDIR / "orders-avro-0"), str(LOGDIR / "scratch-json-0"), "--schemas", "--json", "-q")
    assert r.code == 0, r.err
    orders, scratch = [json.loads(line) for line in r.out.splitlines()]
    assert orders["schemas"] == [
        {"side": "key", "id": 2, "type": "AVRO", "subject": "orders-avro-key", "version": 1, "records": 15},
        {"side": "value", "id": 1, "type": "AVRO", "subject": "orders-avro-value", "version": 1, "records": 5},
        {"side": "value", "id": 3, "type": "AVRO", "subject": "orders-avro-value", "version": 2, "records": 5},
        {"side": "value", "id": 4, "type": "AVRO", "subject": "orders-avro-value", "version": 3, "records": 5}]
    assert scratch["schemas"] == [{"side": "value", "id": 12, "type": None, "records": 2}]
    r = run_kdump("info", str(LOGDIR / "events-proto-0"), "--schemas", "--format", "text", "-q")
    assert "  schemas: value events-proto-value v1 PROTOBUF (id 8) 9\n" in r.out


def test_fixture_bytes_are_the_brokers():
    import hashlib

    for line in (FIXTURES / "schemas" / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((LOGDIR / name).read_bytes()).hexdigest() == digest, name
