"""Bad input gives a located per-record message, never a traceback; exit 1 only under
verify --schemas. Avro compatibility rules; the live registry read once and cached."""

from __future__ import annotations

import io
import json
import os
import shutil
import tracemalloc

import pytest

from kdump.encode import build_v2_batch
from support.registry import Registry
from support.run import FIXTURES, run_kdump

fastavro = pytest.importorskip("fastavro")

SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"}]}


def avro(value: dict, schema_id: int = 1) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(buf, fastavro.parse_schema(SCHEMA), value)
    return buf.getvalue()


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


@pytest.fixture
def logdir(tmp_path):
    """A topic ``t-0`` of good and bad Avro values, and a schema folder (1.avsc good, 5.avsc broken)."""
    folder = tmp_path / "schemas"
    folder.mkdir()
    (folder / "1.avsc").write_text(json.dumps(SCHEMA))
    (folder / "5-broken.avsc").write_text('{"type": "record", "name": "X", "fields": [{"name": "a", "type": "lng"}]}')
    values = [avro({"a": 1, "s": "ok"}),                        # 0 good
              avro({"a": 1, "s": "ok"}, 99),                    # 1 unknown id
              b"\x00\x00\x01",                                  # 2 truncated frame
              avro({"a": 1, "s": "ok"})[:-1],                   # 3 string cut short
              b"\x00\x00\x00\x00\x01" + zigzag(7) + zigzag(2**31 - 1) + b"abc",   # 4 a 2 GiB string length
              b"\x00\x00\x00\x00\x05\x02",                      # 5 a schema that does not parse
              avro({"a": 1, "s": "ok"}) + b"\x00"]              # 6 a byte left over
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(
        build_v2_batch([{"key": None, "value": v, "timestamp": 0} for v in values]))
    return part, folder


def test_text_json_and_verify(logdir):
    part, folder = logdir
    r = run_kdump("dump", str(part), "--value-decoder", "avro", "--schemas", str(folder), "-q")
    assert r.code == 0 and "Traceback" not in r.err
    payloads = [line.split(" payload: ", 1)[1] for line in r.out.splitlines() if line.startswith("| offset")]
    assert payloads == [
        '{"a":1,"s":"ok"}',
        "<decode failed: schema id 99 is not in the schema store>",
        "<decode failed: truncated frame: 3 bytes, the header alone is 5>",
        "<decode failed: Avro bytes do not match the schema at byte 6 (field s): string of 2 bytes, but only 1 "
        "are left>",
        "<decode failed: Avro bytes do not match the schema at byte 6 (field s): string of 2147483647 bytes, "
        "but only 3 are left>",
        "<decode failed: schema 5 does not parse: UnknownType: lng>",
        "<decode failed: the Avro datum ends at byte 9, 1 bytes before the value does>",
    ]
    r = run_kdump("dump", str(part), "--value-decoder", "avro", "--schemas", str(folder), "--json", "-q")
    recs = json.loads(r.out.splitlines()[0])["records"]
    assert recs[0]["decoded"] == {"value": {"a": 1, "s": "ok"}, "value_schema": {"id": 1, "type": "AVRO"}}
    assert recs[1]["decode_error"] == "value: schema id 99 is not in the schema store"
    assert all("decoded" not in x for x in recs[1:])
    r = run_kdump("verify", str(part), "--schemas=" + str(folder), "--format", "text", "-q")
    assert r.code == 1 and "Traceback" not in r.err
    kinds = [line.split(": ")[1].split(" at ")[0] for line in r.out.splitlines() if "schema_" in line]
    assert kinds == ["schema_unknown_id"] + ["schema_decode"] * 5


def test_two_gib_length_allocates_nothing_like_it(logdir):
    from kdump.schemas.decoder import SchemaDecoder
    from kdump.schemas.sources import load

    _, folder = logdir
    dec = SchemaDecoder("avro", load(str(folder)))
    bad = b"\x00\x00\x00\x00\x01" + zigzag(7) + zigzag(2**31 - 1) + b"abc"
    tracemalloc.start()
    with pytest.raises(Exception, match="2147483647 bytes"):
        dec(bad)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20


def test_garbage_schemas_records():
    from kdump.schemas.store import SchemaStore

    store = SchemaStore()
    store.replay(b"\xff\xfe", b"x", 0)
    store.replay(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', b'{"subject":"s"}', 1)
    store.replay(b'{"keytype":"WHAT"}', None, 2)
    store.replay(b'[1]', None, 3)
    store.replay(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}',
                 b'{"subject":"s","version":1,"id":4,"schema":"\\"long\\"","schemaType":"XML"}', 4)
    assert [p.offset for p in store.problems] == [0, 1, 2, 3, 4]
    assert "no 'id' field" in store.problems[1].message
    assert len(store) == 0


def test_garbage_in_a_schemas_topic_is_a_finding(tmp_path):
    src = FIXTURES / "schemas" / "registry"
    logs = tmp_path / "logs"
    shutil.copytree(src / "_schemas-0", logs / "_schemas-0")
    shutil.copytree(src / "orders-avro-0", logs / "orders-avro-0")
    seg = logs / "_schemas-0" / "00000000000000000000.log"
    data = seg.read_bytes() + build_v2_batch([{"key": b"not json", "value": b"\x00"}], base_offset=100)
    seg.write_bytes(data)
    for p in (logs / "_schemas-0").glob("*index"):
        os.remove(p)
    r = run_kdump("verify", str(logs), "--schemas", "--format", "text", "-q")
    assert "schema_store_record at offset 100: not a Schema Registry record: the key is not JSON" in r.out
    assert "schema_incompatible at offset 5: subject orders-avro-value: version 3 cannot read version 2's data " \
           "(BACKWARD): id: a long cannot be read as string" in r.out
    r = run_kdump("dump", str(logs / "orders-avro-0"), "--value-decoder", "avro", "--end-offset", "0")
    assert r.code == 0 and '"amount":"370.10"' in r.out and "not a Schema Registry record" in r.err


def _avro(fields, name="R"):
    return {"type": "record", "name": name, "fields": fields}


@pytest.mark.parametrize("level,old,new,ok", [
    ("BACKWARD", [{"name": "a", "type": "int"}], [{"name": "a", "type": "long"}], True),          # promotion
    ("BACKWARD", [{"name": "a", "type": "long"}], [{"name": "a", "type": "int"}], False),
    ("BACKWARD", [{"name": "a", "type": "int"}], [{"name": "a", "type": "int"}, {"name": "b", "type": "int"}],
     False),                                                                                       # no default
    ("BACKWARD", [{"name": "a", "type": "int"}],
     [{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}], True),
    ("FORWARD", [{"name": "a", "type": "int"}, {"name": "b", "type": "int"}], [{"name": "a", "type": "int"}],
     False),                                                                                       # old needs b
    ("FORWARD", [{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 1}],
     [{"name": "a", "type": "int"}], True),
    ("FULL", [{"name": "a", "type": "int"}], [{"name": "a", "type": "long"}], False),              # long -> int
    ("FULL", [{"name": "a", "type": "int"}], [{"name": "a", "type": "int"},
                                              {"name": "b", "type": ["null", "string"], "default": None}], True),
    ("BACKWARD", [{"name": "a", "type": "string"}], [{"name": "a", "type": ["null", "string"]}], True),
    ("BACKWARD", [{"name": "a", "type": ["null", "string"]}], [{"name": "a", "type": "string"}], False),
    ("NONE", [{"name": "a", "type": "string"}], [{"name": "a", "type": "int"}], True),
])
def test_avro_compatibility(level, old, new, ok):
    from kdump.schemas import avro, compat
    from kdump.schemas.store import Schema, SchemaStore

    store = SchemaStore()
    a = Schema(1, "AVRO", json.dumps(_avro(old)), subject="s", version=1)
    b = Schema(2, "AVRO", json.dumps(_avro(new)), subject="s", version=2)
    assert (compat.check(level, b, [a], lambda s: avro.parse(s, store)) is None) == ok


def test_transitive_checks_every_earlier_version():
    from kdump.schemas import avro, compat
    from kdump.schemas.store import Schema, SchemaStore

    store = SchemaStore()
    v1 = Schema(1, "AVRO", json.dumps(_avro([{"name": "a", "type": "int"}])), subject="s", version=1)
    v2 = Schema(2, "AVRO", json.dumps(_avro([{"name": "a", "type": "int", "default": 0},
                                              {"name": "b", "type": "int"}])), subject="s", version=2)
    v3 = Schema(3, "AVRO", json.dumps(_avro([{"name": "b", "type": "int"}])), subject="s", version=3)
    parsed = lambda s: avro.parse(s, store)  # noqa: E731
    assert compat.check("FORWARD", v3, [v1, v2], parsed) is None             # v2 reads v3 (a has a default)
    assert "version 1 cannot read version 3" in compat.check("FORWARD_TRANSITIVE", v3, [v1, v2], parsed)


def test_live_registry_then_offline(tmp_path):
    from test_schemas_oracle import SCHEMAS, records

    reg = Registry.from_records([(r.key, r.value) for r in records(SCHEMAS)])
    server, url = reg.serve()
    cache = tmp_path / "cache.ndjson"
    part = str(FIXTURES / "schemas" / "registry" / "events-proto-0")
    try:
        live = run_kdump("dump", part, "--value-decoder", "protobuf", "--schema-registry", url,
                         "--schema-cache", str(cache))
    finally:
        server.shutdown()
    assert live.code == 0, live.err
    assert f"schemas from {url} (cached in {cache}" in live.err
    offline = run_kdump("dump", part, "--value-decoder", "protobuf", "--schemas", str(cache), "-q")
    assert offline.code == 0 and offline.out == live.out
    assert '"discount":{"code":"X","pct":0.5}' in offline.out


def _fixture_store():
    from kdump.schemas.sources import load

    return load(str(FIXTURES / "schemas" / "registry" / "_schemas-0"))


def test_protobuf_damage_says_which_byte_and_field():
    from test_schemas_oracle import records

    from kdump.schemas.decoder import SchemaDecoder

    dec = SchemaDecoder("protobuf", _fixture_store())
    order = records(FIXTURES / "schemas" / "registry" / "events-proto-0")[1].value     # an Order, indexes [1]
    assert order[5] == 2                                     # count 1 (zigzag 2), then index 1 (zigzag 2)
    cut = order[:-3]
    with pytest.raises(Exception) as e:
        dec(cut)
    assert "Protobuf bytes do not parse at byte" in str(e.value) and "(field " in str(e.value)
    with pytest.raises(Exception, match=r"message index 7 \(position 0 of \[7\]\): the file has 2 message types"):
        dec(order[:5] + b"\x02\x0e" + order[7:])
    with pytest.raises(Exception, match="truncated message-index count"):
        dec(order[:5])


def test_json_schema_validated_under_verify(tmp_path):
    store_dir = FIXTURES / "schemas" / "registry" / "_schemas-0"
    logs = tmp_path / "logs"
    shutil.copytree(store_dir, logs / "_schemas-0")
    (logs / "users-json-0").mkdir()
    bad = b"\x00\x00\x00\x00\x09" + json.dumps({"age": "old"}).encode()       # no name, age not an integer
    good = b"\x00\x00\x00\x00\x09" + json.dumps({"name": "x"}).encode()
    (logs / "users-json-0" / "00000000000000000000.log").write_bytes(
        build_v2_batch([{"key": None, "value": v, "timestamp": 0} for v in (good, bad)]))
    r = run_kdump("dump", str(logs / "users-json-0"), "--value-decoder", "jsonschema", "-q")
    assert r.code == 0 and 'payload: {"age":"old"}' in r.out       # dump shows it; verify judges it
    r = run_kdump("verify", str(logs), "--schemas", "--format", "text", "-q")
    assert r.code == 1
    assert "schema_decode at byte 0 offset 1: the value: does not match its JSON schema at the top level: 'name' " \
           "is a required property" in r.out


def test_connect_logical_types():
    from kdump.schemas import connect

    doc = {"schema": {"type": "struct", "fields": [
        {"field": "price", "type": "bytes", "name": connect.DECIMAL, "parameters": {"scale": "2"}},
        {"field": "at", "type": "int64", "name": connect.TIMESTAMP},
        {"field": "day", "type": "int32", "name": connect.DATE},
        {"field": "tags", "type": "array", "items": {"type": "string"}, "optional": True}]},
        "payload": {"price": "AIs=", "at": 1558997576123, "day": 18000, "tags": None}}
    value, name = connect.decode(json.dumps(doc).encode())
    assert value == {"price": "1.39", "at": "2019-05-27T22:52:56.123Z", "day": "2019-04-14", "tags": None}
    doc["payload"]["at"] = None
    with pytest.raises(Exception, match="field at: null, but the schema says it is not optional"):
        connect.decode(json.dumps(doc).encode())


def test_no_store_is_a_usage_error(tmp_path):
    part = FIXTURES / "generated" / "headers-0"
    r = run_kdump("dump", str(part), "--value-decoder", "avro")
    assert r.code == 2 and "no schema store: no _schemas-0 in the log dir of PATHS" in r.err
    r = run_kdump("dump", str(part), "--value-decoder", "avro", "--schemas", str(tmp_path / "nothing"))
    assert r.code == 2 and "no such file or directory (--schemas)" in r.err
    r = run_kdump("dump", str(part), "--value-decoder", "auto", "-q")     # auto needs no store
    assert r.code == 0 and "Traceback" not in r.err


_STORE = None


def _store_once():
    global _STORE
    if _STORE is None:
        _STORE = _fixture_store()
    return _STORE


@pytest.mark.parametrize("kind", ["avro", "protobuf", "jsonschema", "auto", "connect"])
def test_any_bytes_decode_or_fail_cleanly(kind):
    """Random and mutated frames of every schema in the fixture: a value or a DecodeError,
    never another exception."""
    import random

    from test_schemas_oracle import records

    from kdump.errors import DecodeError
    from kdump.schemas.decoder import SchemaDecoder

    dec = SchemaDecoder(kind, _store_once(), validate=True)
    seeds = [r.value for t in ("orders-avro", "events-proto", "users-json", "payments-avro")
             for r in records(FIXTURES / "schemas" / "registry" / f"{t}-0")]
    rnd = random.Random(30)
    for i in range(1500):
        data = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 4)):
            op = rnd.randrange(3)
            if op == 0 and len(data) > 1:
                del data[rnd.randrange(1, len(data)):]
            elif op == 1:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
            else:
                data[rnd.randrange(len(data)):rnd.randrange(len(data))] = rnd.randbytes(rnd.randint(0, 8))
        for as_text in (False, True):
            try:
                dec.decode(bytes(data), as_text)
            except DecodeError:
                pass


def test_schemas_that_do_not_parse(tmp_path):
    from kdump.schemas.decoder import SchemaDecoder
    from kdump.schemas.sources import load

    (tmp_path / "3-broken.proto").write_text('syntax = "proto3";\nmessage M {\n  strin x = 1;\n}\n')
    (tmp_path / "4.json").write_text('{"type": ')
    (tmp_path / "5.proto").write_text('syntax = "proto3";\nimport "missing.proto";\nmessage M { int32 x = 1; }\n')
    dec = SchemaDecoder("auto", load(str(tmp_path)))
    with pytest.raises(Exception, match=r"schema 3 does not parse: .*line 3:3: \"strin\" is not defined"):
        dec(b"\x00\x00\x00\x00\x03\x00\x08\x01")
    with pytest.raises(Exception, match="schema 4 does not parse"):
        dec(b"\x00\x00\x00\x00\x04{}")
    with pytest.raises(Exception, match=r"schema 5 does not parse: .*missing.proto"):
        dec(b"\x00\x00\x00\x00\x05\x00\x08\x01")


def test_a_schema_folder_named_like_a_partition_is_a_folder(logdir):
    """Exits: ``--schemas sch-7`` was replayed as a ``_schemas`` partition (0 ids)."""
    part, folder = logdir
    named = folder.parent / "sch-7"
    folder.rename(named)
    r = run_kdump("dump", str(part), "--value-decoder", "avro", "--schemas", str(named), "--json", "-q")
    assert r.code == 0, r.err
    recs = json.loads(r.out.splitlines()[0])["records"]
    assert recs[0]["decoded"] == {"value": {"a": 1, "s": "ok"}, "value_schema": {"id": 1, "type": "AVRO"}}
