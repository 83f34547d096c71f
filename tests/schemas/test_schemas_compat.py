"""Schema Registry's compatibility rules for Protobuf and JSON Schema: each rule with a pair the
registry accepts and one it refuses, in both directions (BACKWARD reads the old data with the
new schema, FORWARD the reverse), and the transitive levels against every earlier version."""

from __future__ import annotations

import json

import pytest

from kdump.schemas import compat
from kdump.schemas.decoder import SchemaDecoder
from kdump.schemas.store import Reference, Schema, SchemaStore

pytest.importorskip("grpc_tools")


def _subject(schema_type: str, *texts: str, store: SchemaStore | None = None) -> tuple[list[Schema], SchemaDecoder]:
    store = store or SchemaStore()
    versions = [Schema(100 + i, schema_type, t, subject="s", version=i + 1) for i, t in enumerate(texts)]
    for s in versions:
        store.add(s)
    return versions, SchemaDecoder("auto", store)


def verdict(schema_type: str, level: str, old: str, new: str) -> str | None:
    (a, b), dec = _subject(schema_type, old, new)
    return compat.check(level, b, [a], dec.parsed)


def proto(body: str, package: str = "shop", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\n' + (f"package {package};\n" if package else "") + body


# (old, new, BACKWARD accepted?, FORWARD accepted?, words of the BACKWARD or FORWARD reason)
PROTO_PAIRS = {
    "field added or removed": (proto("message M { string a = 1; }"),
                               proto("message M { string a = 1; int64 b = 2; }"), True, True, ""),
    "field renamed": (proto("message M { string a = 1; }"), proto("message M { string b = 1; }"), True, True, ""),
    "int32 -> int64 (one wire group)": (proto("message M { int32 a = 1; }"), proto("message M { int64 a = 1; }"),
                                        True, True, ""),
    "int32 -> enum": (proto("message M { int32 a = 1; }"), proto("message M { E a = 1; } enum E { X = 0; }"),
                      True, True, ""),
    "string <-> bytes": (proto("message M { string a = 1; }"), proto("message M { bytes a = 1; }"), True, True, ""),
    "int32 -> sint32": (proto("message M { int32 a = 1; }"), proto("message M { sint32 a = 1; }"), False, False,
                        "message shop.M: field 1 (a): int32 -> sint32 changes its wire encoding"),
    "int64 -> string": (proto("message M { int64 a = 1; }"), proto("message M { string a = 1; }"), False, False,
                        "int64 -> string changes its wire encoding"),
    "scalar -> message": (proto("message M { int64 a = 1; } message N { int64 x = 1; }"),
                          proto("message M { N a = 1; } message N { int64 x = 1; }"), False, False,
                          "field 1 (a): a scalar became a message (int64 -> shop.N)"),
    "message type renamed": (proto("message M { N a = 1; } message N { int64 x = 1; }"),
                             proto("message M { P a = 1; } message P { int64 x = 1; }"), False, False,
                             "its message type changed from N to P"),
    "message type changed inside": (proto("message M { N a = 1; } message N { int64 x = 1; }"),
                                    proto("message M { N a = 1; } message N { double x = 1; }"), False, False,
                                    "field 1 (a): its message type N changed incompatibly"),
    "message removed": (proto("message M { int64 a = 1; } message N { int64 x = 1; }"),
                        proto("message M { int64 a = 1; }"), False, True, "message shop.N was removed"),
    "package changed": (proto("message M { int64 a = 1; }"), proto("message M { int64 a = 1; }", "store"),
                        False, False, "the package changed from 'shop' to 'store'"),
    "numeric label changed": (proto("message M { optional int32 a = 1; }"),
                              proto("message M { repeated int32 a = 1; }"), False, False,
                              "its label changed from optional to repeated"),
    "string label changed": (proto("message M { optional string a = 1; }"),
                             proto("message M { repeated string a = 1; }"), True, True, ""),
    "required field added": (proto("message M { optional int32 a = 1; }", syntax="proto2"),
                             proto("message M { optional int32 a = 1; required int32 b = 2; }", syntax="proto2"),
                             False, False, "required field 2 (b) was added"),
    "field added to a oneof": (proto("message M { oneof o { int32 a = 1; } }"),
                               proto("message M { oneof o { int32 a = 1; string b = 2; } }"), True, False,
                               "field 2 (b) was removed from oneof o"),
    "two fields into one oneof": (proto("message M { int32 a = 1; string b = 2; }"),
                                  proto("message M { oneof o { int32 a = 1; string b = 2; } }"), False, True,
                                  "oneof o makes exclusive what was independent (field 1, field 2)"),
    "one field into a new oneof": (proto("message M { int32 a = 1; string b = 2; }"),
                                   proto("message M { string b = 2; oneof o { int32 a = 1; } }"), True, True, ""),
    "map value type": (proto("message M { map<string, int64> m = 1; }"),
                       proto("message M { map<string, string> m = 1; }"), False, False,
                       "field 1 (m) value: int64 -> string changes its wire encoding"),
    "nested message field": (proto("message M { message In { int32 x = 1; } In a = 1; }"),
                             proto("message M { message In { float x = 1; } In a = 1; }"), False, False,
                             "message shop.M: field 1 (a): its message type M.In changed incompatibly"),
    "message and enum added, reordered": (proto("message M { int32 a = 1; }"),
                                          proto("enum E { X = 0; } message N { int32 z = 1; } message M { "
                                                "int32 a = 1; }"), True, False, "message shop.N was removed"),
}


@pytest.mark.parametrize("name", list(PROTO_PAIRS))
def test_protobuf_rules(name):
    old, new, backward, forward, why = PROTO_PAIRS[name]
    b, f = verdict("PROTOBUF", "BACKWARD", old, new), verdict("PROTOBUF", "FORWARD", old, new)
    assert (b is None, f is None) == (backward, forward), (b, f)
    if why:
        assert why in (b or f)
    full = verdict("PROTOBUF", "FULL", old, new)
    assert (full is None) == (backward and forward)
    assert verdict("PROTOBUF", "NONE", old, new) is None


def test_protobuf_reference_to_the_same_subject_version_is_not_compared_again():
    store = SchemaStore()
    money = Schema(7, "PROTOBUF", proto("message Money { int64 units = 1; }", "common"), subject="money.proto",
                   version=1)
    money2 = Schema(8, "PROTOBUF", proto("message Money { string units = 1; }", "common"), subject="money.proto",
                    version=2)
    store.add(money)
    store.add(money2)
    text = proto('import "money.proto";\nmessage M { common.Money m = 1; }')
    v1 = Schema(10, "PROTOBUF", text, (Reference("money.proto", "money.proto", 1),), "s", 1)
    v2 = Schema(11, "PROTOBUF", text + "\n", (Reference("money.proto", "money.proto", 1),), "s", 2)
    v3 = Schema(12, "PROTOBUF", text, (Reference("money.proto", "money.proto", 2),), "s", 3)
    dec = SchemaDecoder("auto", store)
    assert compat.check("BACKWARD", v2, [v1], dec.parsed) is None
    why = compat.check("BACKWARD", v3, [v2], dec.parsed)
    assert "field 1 (m): its message type Money changed incompatibly" in why
    assert "(and 1 more)" in why          # the referenced message's own field, too


J = {"$schema": "http://json-schema.org/draft-07/schema#"}


def obj(props: dict, **more) -> str:
    return json.dumps({**J, "type": "object", "properties": props, **more})


JSON_PAIRS = {
    "integer -> number": ('{"type": "integer"}', '{"type": "number"}', True, False, "#: number narrowed to integer"),
    "string -> number": ('{"type": "string"}', '{"type": "number"}', False, False,
                         "#: the type changed from string to number"),
    "type -> nullable union": ('{"type": "string"}', '{"type": ["string", "null"]}', True, False,
                               "the type changed from anyOf to string"),
    "anything accepts all": ('{"type": "string"}', "{}", True, False, "the type changed from anything to string"),
    "maxLength lowered": ('{"type": "string", "maxLength": 10}', '{"type": "string", "maxLength": 5}', False, True,
                          "#/maxLength: maxLength went from 10 to 5"),
    "minimum added": ('{"type": "number"}', '{"type": "number", "minimum": 0}', False, True,
                      "#/minimum: minimum 0 was added"),
    "pattern changed": ('{"type": "string", "pattern": "^a"}', '{"type": "string", "pattern": "^b"}', False, False,
                        "#/pattern: the pattern changed"),
    "multipleOf divided": ('{"type": "number", "multipleOf": 10}', '{"type": "number", "multipleOf": 5}', True,
                           False, "#/multipleOf: multipleOf changed from 5 to 10"),
    "enum extended": ('{"enum": ["a", "b"]}', '{"enum": ["a", "b", "c"]}', True, False,
                      "#/enum: the values ['c'] are no longer allowed"),
    "const changed": ('{"const": 1}', '{"const": 2}', False, False, "#/const: the constant changed from 1 to 2"),
    "property added, open model": (obj({"a": {"type": "string"}}),
                                   obj({"a": {"type": "string"}, "b": {"type": "integer"}}), False, True,
                                   "#/properties/b: a property was added to an open content model"),
    "property added, closed model": (obj({"a": {"type": "string"}}, additionalProperties=False),
                                     obj({"a": {"type": "string"}, "b": {"type": "integer"}},
                                         additionalProperties=False), True, False,
                                     "#/properties/b: removed from a closed content model"),
    "property with {} added, open model": (obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}, "b": {}}),
                                           True, True, ""),
    "property covered by additionalProperties": (
        obj({"a": {"type": "string"}}, additionalProperties={"type": "string"}),
        obj({"a": {"type": "string"}, "b": {"type": "string"}}, additionalProperties={"type": "string"}),
        True, True, ""),
    "property not covered by additionalProperties": (
        obj({"a": {"type": "string"}}, additionalProperties={"type": "string"}),
        obj({"a": {"type": "string"}, "b": {"type": "integer"}}, additionalProperties={"type": "string"}),
        False, False, "#/properties/b: the type changed from string to integer"),
    "required added without default": (obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}},
                                                                           required=["a"]), False, True,
                                       "#/required/a: the property became required without a default"),
    "required added with default": (obj({"a": {"type": "string"}}),
                                    obj({"a": {"type": "string", "default": "x"}}, required=["a"]), True, True, ""),
    "additionalProperties closed": (obj({}), obj({}, additionalProperties=False), False, True,
                                    "#/additionalProperties: additional properties are no longer allowed"),
    "property type changed": (obj({"a": {"type": "string"}}), obj({"a": {"type": "boolean"}}), False, False,
                              "#/properties/a: the type changed from string to boolean"),
    "items type changed": ('{"type": "array", "items": {"type": "string"}}',
                           '{"type": "array", "items": {"type": "integer"}}', False, False,
                           "#/items: the type changed from string to integer"),
    "oneOf gained a branch": ('{"oneOf": [{"type": "string"}, {"type": "integer"}]}',
                              '{"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}', True, False,
                              "#: oneOf lost a branch"),
    "allOf to anyOf": ('{"allOf": [{"type": "string"}, {"maxLength": 3}]}',
                       '{"anyOf": [{"type": "string"}, {"maxLength": 3}]}', True, False, "#: anyOf became allOf"),
    "$ref followed": (json.dumps({**J, "$ref": "#/definitions/x", "definitions": {"x": {"type": "string"}}}),
                      json.dumps({**J, "$ref": "#/definitions/x", "definitions": {"x": {"type": "integer"}}}),
                      False, False, "#: the type changed from string to integer"),
    "not narrowed": ('{"not": {"type": "number"}}', '{"not": {"type": "integer"}}', True, False,
                     "#/not: it excludes more than before"),
}


@pytest.mark.parametrize("name", list(JSON_PAIRS))
def test_json_schema_rules(name):
    old, new, backward, forward, why = JSON_PAIRS[name]
    b, f = verdict("JSON", "BACKWARD", old, new), verdict("JSON", "FORWARD", old, new)
    assert (b is None, f is None) == (backward, forward), (b, f)
    if why:
        assert why in (b or f), (b, f)
    assert (verdict("JSON", "FULL", old, new) is None) == (backward and forward)


def test_json_schema_reference_to_another_subject():
    store = SchemaStore()
    addr1 = Schema(1, "JSON", json.dumps({"type": "object", "properties": {"zip": {"type": "string"}}}),
                   subject="addr", version=1)
    addr2 = Schema(2, "JSON", json.dumps({"type": "object", "properties": {"zip": {"type": "integer"}}}),
                   subject="addr", version=2)
    store.add(addr1)
    store.add(addr2)
    text = obj({"home": {"$ref": "addr.json"}})
    v1 = Schema(3, "JSON", text, (Reference("addr.json", "addr", 1),), "s", 1)
    v2 = Schema(4, "JSON", text, (Reference("addr.json", "addr", 2),), "s", 2)
    why = compat.check("BACKWARD", v2, [v1], SchemaDecoder("auto", store).parsed)
    assert "version 2 cannot read version 1's data (BACKWARD): #/properties/home/properties/zip: the type changed " \
           "from string to integer" in why


@pytest.mark.parametrize("schema_type,texts,why", [
    # a field removed, then one of the same number added with another type
    ("PROTOBUF", [proto("message M { int32 a = 1; }"), proto("message M { int64 b = 2; }"),
                  proto("message M { string a = 1; int64 b = 2; }")],
     "version 3 cannot read version 1's data (BACKWARD_TRANSITIVE): message shop.M: field 1 (a): int32 -> string "
     "changes its wire encoding"),
    # required with a default, then the default dropped
    ("JSON", [obj({"a": {"type": "string"}}), obj({"a": {"type": "string", "default": "x"}}, required=["a"]),
              obj({"a": {"type": "string"}}, required=["a"])],
     "version 3 cannot read version 1's data (BACKWARD_TRANSITIVE): #/required/a: the property became required "
     "without a default"),
])
def test_transitive_levels_check_every_earlier_version(schema_type, texts, why):
    (v1, v2, v3), dec = _subject(schema_type, *texts)
    assert compat.check("BACKWARD", v2, [v1], dec.parsed) is None
    assert compat.check("BACKWARD", v3, [v1, v2], dec.parsed) is None          # only the previous version
    assert compat.check("BACKWARD_TRANSITIVE", v2, [v1], dec.parsed) is None
    assert compat.check("BACKWARD_TRANSITIVE", v3, [v1, v2], dec.parsed) == why
    assert compat.check("FULL_TRANSITIVE", v3, [v1, v2], dec.parsed) is not None
    # the same chain read the other way round: FORWARD_TRANSITIVE compares the new data with every old reader
    (w1, w2, w3), dec = _subject(schema_type, *reversed(texts))
    assert compat.check("FORWARD", w3, [w1, w2], dec.parsed) is None
    assert "version 1 cannot read version 3's data (FORWARD_TRANSITIVE)" in \
        compat.check("FORWARD_TRANSITIVE", w3, [w1, w2], dec.parsed)


def test_a_subject_changing_schema_type_is_refused():
    store = SchemaStore()
    a = Schema(1, "AVRO", '"string"', subject="s", version=1)
    b = Schema(2, "JSON", '{"type": "string"}', subject="s", version=2)
    dec = SchemaDecoder("auto", store)
    assert compat.check("BACKWARD", b, [a], dec.parsed) == \
        "version 2 is JSON, version 1 was AVRO (BACKWARD): the schema type cannot change"
    assert compat.check("NONE", b, [a], dec.parsed) is None


def test_store_level_per_subject_and_global_default():
    """CONFIG records set the level: a subject's own, else the global one, else BACKWARD."""
    store = SchemaStore()
    key = b'{"keytype":"SCHEMA","subject":"%s","version":%d,"magic":1}'
    for subject in ("p", "q", "r"):
        for v, text in ((1, obj({"a": {"type": "string"}})), (2, obj({"a": {"type": "integer"}}))):
            value = {"subject": subject, "version": v, "id": 10 * v + ord(subject), "schema": text,
                     "schemaType": "JSON"}
            store.replay(key % (subject.encode(), v), json.dumps(value).encode(), v)
    store.replay(b'{"keytype":"CONFIG","subject":"q","magic":0}', b'{"compatibilityLevel":"NONE"}', 9)
    found = compat.subject_breaks(store, SchemaDecoder("auto", store).parsed)
    assert sorted((s.subject, level) for s, level, _ in found) == [("p", "BACKWARD"), ("r", "BACKWARD")]
    store.replay(b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"FORWARD"}', 10)
    found = compat.subject_breaks(store, SchemaDecoder("auto", store).parsed)
    assert sorted((s.subject, level) for s, level, _ in found) == [("p", "FORWARD"), ("r", "FORWARD")]
    assert "version 1 cannot read version 2's data (FORWARD)" in found[0][2]


@pytest.mark.parametrize("old,new", [
    ('{"type": "object", "required": true, "properties": {"a": {}}}', '{"type": "object", "required": 5}'),
    ('{"patternProperties": "x", "additionalProperties": false}', '{"properties": {"b": {"type": "string"}}}'),
    ('{"dependencies": {"a": 5}}', '{"dependencies": {"a": ["b"]}}'),
    ('{"items": [1, 2]}', '{"items": [{"type": "string"}]}'),
    ('{"$ref": "#/nowhere"}', '{"type": "string"}'),
    ('[1, 2]', '{"type": "string"}'),
])
def test_odd_json_schemas_are_judged_or_skipped_never_a_traceback(old, new):
    (a, b), dec = _subject("JSON", old, new)
    store = dec.store
    found = compat.subject_breaks(store, dec.parsed)         # a schema that does not parse is skipped
    assert all(s.subject == "s" and s.version == 2 for s, _, _ in found)


def test_the_registry_fixture_breaks_where_schema_registry_would_have_refused():
    """orders-avro-value v3 changed a field's type under NONE (the subject is BACKWARD now);
    users-json-value v2 added a property to an open content model, which the registry's
    default (strict) JSON Schema policy refuses under BACKWARD."""
    from kdump.schemas.sources import load
    from support.run import FIXTURES

    store = load(str(FIXTURES / "schemas" / "registry" / "_schemas-0"))
    found = compat.subject_breaks(store, SchemaDecoder("auto", store).parsed)
    assert [(s.subject, s.version, level) for s, level, _ in found] == [("orders-avro-value", 3, "BACKWARD"),
                                                                         ("users-json-value", 2, "BACKWARD")]
    assert found[1][2] == ("version 2 cannot read version 1's data (BACKWARD): #/properties/email: a property was "
                           "added to an open content model (a writer of the old schema may have put anything there)")
