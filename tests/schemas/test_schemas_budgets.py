"""The schema decoders' budgets: a hostile schema or value is one located message (a
``schema_budget`` finding under verify), the other records decode, nothing recurses, loops
or allocates past the budget."""

from __future__ import annotations

import json

import pytest

from kdump.encode import build_v2_batch
from kdump.schemas import budget
from kdump.schemas.decoder import SchemaDecoder
from kdump.schemas.store import Schema, SchemaStore
from support.run import run_kdump

pytest.importorskip("fastavro")

NULLS = {"type": "array", "items": "null"}
EMPTY_RECORDS = {"type": "array", "items": {"type": "record", "name": "E", "fields": []}}
NULL_MAP = {"type": "map", "values": "null"}
LIST = {"type": "record", "name": "L", "fields": [{"name": "n", "type": ["null", "L"]}]}
GOOD = {"type": "record", "name": "G", "fields": [{"name": "a", "type": "long"}]}


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def decoder(*schemas: dict) -> SchemaDecoder:
    store = SchemaStore()
    for i, s in enumerate(schemas, 1):
        store.add(Schema(i, "AVRO", json.dumps(s)))
    return SchemaDecoder("avro", store)


BOMBS = {
    "block of 2^62 nulls": (NULLS, zigzag(1 << 62) + b"\x00", "past the items budget: at byte 5"),
    "negative count form": (NULLS, zigzag(-(1 << 62)) + zigzag(0) + b"\x00", "past the items budget: at byte 5"),
    "2^62 empty records": (EMPTY_RECORDS, zigzag(1 << 62) + b"\x00", "past the items budget: at byte 5"),
    "map of 2^62 nulls": (NULL_MAP, zigzag(1 << 62) + b"\x00", "past the items budget: at byte 5"),
    "a million nulls, 40 times (126 bytes)": (NULLS, zigzag(1_000_000) * 40 + b"\x00", "past the output budget"),
    "nested 5,000 deep": (LIST, b"\x02" * 5000 + b"\x00", "past the depth budget: at byte"),
    "nested 1,000 deep": (LIST, b"\x02" * 1000 + b"\x00", "past the depth budget: at byte"),
}


@pytest.mark.parametrize("name", BOMBS)
@pytest.mark.parametrize("as_text", [True, False])
def test_value_bombs_are_one_located_error(name, as_text):
    schema, body, message = BOMBS[name]
    dec = decoder(schema)
    with pytest.raises(budget.BudgetError, match=message):
        dec.decode(framed(1, body), as_text)


def test_the_output_limit_is_the_users(monkeypatch):
    body = zigzag(1000) + b"\x00"                   # 1,000 nulls: 5,001 bytes of JSON
    dec = decoder(NULLS)
    monkeypatch.setattr(budget.Limits, "output_bytes", 4000)
    for as_text in (True, False):
        with pytest.raises(budget.BudgetError, match="more than 4000 bytes of JSON"):
            dec.decode(framed(1, body), as_text)
    monkeypatch.setattr(budget.Limits, "output_bytes", 5001)
    assert dec.decode(framed(1, body), True)[0] == "[" + ",".join(["null"] * 1000) + "]"
    assert dec.decode(framed(1, body), False)[0] == [None] * 1000


def test_a_schema_of_20000_named_types_is_refused():
    fields = [{"name": f"f{i}", "type": {"type": "enum", "name": f"E{i}", "symbols": ["A"]}} for i in range(20000)]
    dec = decoder({"type": "record", "name": "R", "fields": fields})
    with pytest.raises(budget.BudgetError, match="past the named types budget: schema 1 and its references define "
                                                 "more than 1000 named types"):
        dec.decode(framed(1, b"\x00" * 20000))


def deep_schema(levels: int) -> dict:
    s: dict = {"type": "record", "name": "R0", "fields": []}
    for i in range(1, levels):
        s = {"type": "record", "name": f"R{i}", "fields": [{"name": "x", "type": s}]}
    return s


def test_a_schema_nested_deeper_than_json_can_parse_is_refused():
    dec = SchemaDecoder("avro", SchemaStore())
    dec.store.add(Schema(1, "AVRO", '{"type":' * 5000 + '"null"' + "}" * 5000))
    with pytest.raises(budget.BudgetError, match="past the depth budget: schema 1 nests more than 256 deep"):
        dec.decode(framed(1, b""))
    dec.store.add(Schema(2, "AVRO", json.dumps(deep_schema(150))))
    with pytest.raises(budget.BudgetError, match="past the depth budget: schema 2 nests more than 256 deep"):
        dec.decode(framed(2, b""))


def test_dump_and_verify_go_on_after_a_bomb(tmp_path):
    folder = tmp_path / "schemas"
    folder.mkdir()
    (folder / "1.avsc").write_text(json.dumps(GOOD))
    (folder / "2.avsc").write_text(json.dumps(NULLS))
    (folder / "3.avsc").write_text(json.dumps(LIST))
    (folder / "4-deep.avsc").write_text('{"type":' * 1500 + '"null"' + "}" * 1500)
    values = [framed(1, zigzag(7)), framed(2, zigzag(200_000) * 2 + b"\x00"), framed(3, b"\x02" * 5000 + b"\x00"),
              framed(1, zigzag(8))]
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(
        build_v2_batch([{"key": None, "value": v, "timestamp": 0} for v in values]))
    r = run_kdump("dump", str(part), "--value-decoder", "avro", "--schemas", str(folder), "-q", "--decode-limit", "1M")
    assert r.code == 0 and r.err == ""
    payloads = [line.split(" payload: ", 1)[1] for line in r.out.splitlines() if line.startswith("| offset")]
    assert payloads == [
        '{"a":7}',
        "<decode failed: past the output budget: at byte 8 (field the top level): the value decodes to more than "
        "1048576 bytes of JSON (raise the limit with --decode-limit)>",
        "<decode failed: past the depth budget: at byte 72 (field n.n.n.n.n.n.n.n...): the value nests more than "
        "200 deep>",
        '{"a":8}',
    ]
    r = run_kdump("dump", str(part), "--value-decoder", "avro", "--schemas", str(folder), "-q", "--json",
                  "--decode-limit", "4M")
    recs = json.loads(r.out.splitlines()[0])["records"]
    assert recs[1]["decoded"]["value"] == [None] * 400_000
    r = run_kdump("verify", str(part), "--schemas=" + str(folder), "--format", "text", "-q", "--decode-limit", "1M")
    assert "Traceback" not in r.err
    lines = [x for x in r.out.splitlines() if "schema_" in x]
    kinds = [x.split(": ")[1].split(" at ")[0] for x in lines]
    assert kinds == ["schema_store_record", "schema_budget", "schema_budget"]
    assert "4-deep.avsc: past the depth budget: the schema nests more than 256 deep" in lines[0]


def json_decoder(schema: dict) -> SchemaDecoder:
    store = SchemaStore()
    store.add(Schema(1, "JSON", json.dumps(schema)))
    return SchemaDecoder("jsonschema", store, validate=True)


JSON_BOMBS = {
    "$ref to itself": ({"$ref": "#"}, 1, "past the depth budget: the JSON schema's \\$ref chain"),
    "$ref loop": ({"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
                   "$ref": "#/definitions/a"}, 1, "past the depth budget: the JSON schema's \\$ref chain"),
    "http $ref": ({"$ref": "http://127.0.0.1:9/x.json"}, 1,
                  "past the \\$ref budget: the \\$ref 'http://127.0.0.1:9/x.json' is not in the schema store"),
    "file $ref": ({"$ref": "file:///etc/passwd"}, 1, "past the \\$ref budget: the \\$ref 'file:///etc/passwd'"),
    "a relative $ref under an http $id": ({"$id": "http://127.0.0.1:9/a.json", "$ref": "b.json"}, 1,
                                          "the \\$ref 'b.json' is not in the schema store"),
    "ReDoS pattern": ({"type": "string", "pattern": "^(a|a)*$"}, "a" * 40 + "!",
                      "past the regex time budget: the pattern '\\^\\(a\\|a\\)\\*\\$' took more than 1.0 s"),
    "ReDoS property pattern": ({"type": "object", "patternProperties": {"^(a|a)*$": {}},
                                "additionalProperties": False}, {"a" * 40 + "!": 1}, "past the regex time budget"),
}


@pytest.mark.parametrize("name", JSON_BOMBS)
def test_json_schema_bombs_are_one_located_error(name):
    pytest.importorskip("jsonschema")
    schema, value, message = JSON_BOMBS[name]
    with pytest.raises(budget.BudgetError, match=message):
        json_decoder(schema).decode(framed(1, json.dumps(value).encode()))


def test_json_schema_patterns_still_check():
    pytest.importorskip("jsonschema")
    dec = json_decoder({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}},
                        "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False})
    assert dec.decode(framed(1, b'{"s": "aa", "x1": 2}'))[0] == {"s": "aa", "x1": 2}
    for value, message in (('{"s": "b"}', "at s: 'b' does not match '\\^a\\+\\$'"),
                           ('{"x1": "no"}', "at x1: 'no' is not of type 'integer'"),
                           ('{"y": 1}', "at the top level: 'y' does not match any of the regexes: '\\^x'")):
        with pytest.raises(Exception, match=message):
            dec.decode(framed(1, value.encode()))


def test_an_inline_fixed_is_base64_on_the_reference_path_too():
    """Found by fuzz/fuzz_schemas.py: fastavro's value kept a fixed's bytes (not JSON)."""
    dec = decoder({"type": "record", "name": "R",
                   "fields": [{"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}}]})
    assert dec.decode(framed(1, b"ab"), False)[0] == {"f": "YWI="}
    assert dec.decode(framed(1, b"ab"), True)[0] == '{"f":"YWI="}'


def test_compatibility_checks_search_patterns_under_the_budget(monkeypatch):
    from kdump.schemas import compat_json, json_schema

    monkeypatch.setattr(budget, "REGEX_TIMEOUT", 0.05)
    assert compat_json.search("^x", "xy") and not compat_json.search("^x", "yx")
    with pytest.raises(budget.BudgetError, match="past the regex time budget: the pattern"):
        json_schema.search("^(a|a)*$", "a" * 40 + "!")


def test_items_that_outgrow_their_bytes_are_walked_first(monkeypatch):
    """One byte an item, 502 bytes of JSON each: the walk stops it before fastavro builds it."""
    dec = decoder({"type": "array", "items": {"type": "enum", "name": "E", "symbols": ["A" * 500]}})
    monkeypatch.setattr(budget.Limits, "output_bytes", 100_000)
    for as_text in (True, False):
        with pytest.raises(budget.BudgetError, match="past the output budget: at byte 5"):
            dec.decode(framed(1, zigzag(1000) + b"\x00" * 1001), as_text)
    assert dec.decode(framed(1, zigzag(100) + b"\x00" * 101), False)[0] == ["A" * 500] * 100


def test_a_protobuf_message_past_the_output_limit_is_one_error(monkeypatch):
    pytest.importorskip("grpc_tools")
    name = "n" * 300
    store = SchemaStore()
    store.add(Schema(1, "PROTOBUF", f'syntax = "proto3";\nmessage M {{ repeated N kids = 1; }}\n'
                                    f'message N {{ int32 {name} = 1; }}\n'))
    dec = SchemaDecoder("protobuf", store)
    kid = b"\x0a\x02\x08\x01"                    # 4 bytes: {"nnn...n": 1}, 306 bytes of JSON
    monkeypatch.setattr(budget.Limits, "output_bytes", 10_000)
    assert dec.decode(framed(1, b"\x00" + kid * 30))[0] == {"kids": [{name: 1}] * 30}
    with pytest.raises(budget.BudgetError, match="past the output budget: the value at byte 6 decodes to 30710 "
                                                 "bytes of JSON, more than the 10000"):
        dec.decode(framed(1, b"\x00" + kid * 100))


def test_a_pattern_that_ran_out_of_time_is_not_run_again(monkeypatch):
    """A topic of a million such values costs one timeout, not a million."""
    from kdump.schemas import json_schema

    monkeypatch.setattr(budget, "REGEX_TIMEOUT", 0.05)
    with pytest.raises(budget.BudgetError, match="took more than 0.05 s on a string of 41 characters"):
        json_schema.search("^(b|b)*$", "b" * 40 + "!")
    with pytest.raises(budget.BudgetError, match="took more than 0.05 s on an earlier value; kdump does not run it"):
        json_schema.search("^(b|b)*$", "b")


def test_a_cache_line_nested_too_deeply_is_one_problem(tmp_path):
    from kdump.schemas.sources import load

    cache = tmp_path / "c.ndjson"
    good = {"key": {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1},
            "value": {"subject": "s", "version": 1, "id": 3, "schema": '"int"'}}
    cache.write_text("[" * 100_000 + "\n" + json.dumps(good) + "\n")
    store = load(str(cache))
    assert [p.message for p in store.problems] == [f"{cache}: line 1: not a registry record (past the depth budget: "
                                                   "the JSON nests too deeply)"]
    assert store.get(3) is not None
