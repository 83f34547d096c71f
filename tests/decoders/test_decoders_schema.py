"""The generic schema reader: encodings, bounds checks, tagged fields, JSON rendering."""

from __future__ import annotations

import base64
import time

import pytest
from kafka_wire import blob, count, i8, i16, i32, string, tags, uvarint

from kdump.decoders import INTERNAL_DECODERS, for_topic
from kdump.decoders.kafka_text import java_double, snake_name, strip_private, to_json
from kdump.errors import DecodeError
from kdump.format.message_reader import SchemaError, parse_versions, uuid_text
from kdump.format.message_spec import Message, load


def message(fields, versions="0-1", flexible="1+", structs=None):
    return Message("Test", {"versions": versions, "flexible": flexible, "fields": fields, "structs": structs or {}})


def test_version_ranges():
    assert parse_versions("0+") == (0, 0x7FFF)
    assert parse_versions("3") == (3, 3)
    assert parse_versions("1-2") == (1, 2)
    assert parse_versions("none") is None and parse_versions(None) is None


def test_uuid_text_is_kafka_uuid_to_string():
    assert uuid_text(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_text(bytes.fromhex("ff" * 16)) == "_____________________w"


def test_snake_names():
    assert snake_name("RegisterBrokerRecord") == "REGISTER_BROKER_RECORD"
    assert snake_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert snake_name("OffsetCommit") == "OFFSET_COMMIT"


def test_nullable_and_non_nullable_in_both_encodings():
    m = message([{"name": "a", "type": "string", "null": "0+"}, {"name": "b", "type": "bytes", "null": "0+"},
                 {"name": "c", "type": "[]int32", "null": "0+"}])
    assert m.decode(string(None) + blob(None) + count(None), 0) == {"a": None, "b": None, "c": None}
    assert m.decode(string(None, True) + blob(None, True) + count(None, True) + tags(), 1) == {
        "a": None, "b": None, "c": None}
    strict = message([{"name": "c", "type": "[]int32"}])
    with pytest.raises(SchemaError, match="non-nullable field c was serialized as null"):
        strict.decode(count(None), 0)
    with pytest.raises(SchemaError, match="array field c had invalid length -5"):
        strict.decode(i32(-5), 0)


def test_field_versions_and_defaults():
    m = message([{"name": "a", "type": "int32"}, {"name": "b", "type": "int8", "v": "1+"},
                 {"name": "c", "type": "int16", "v": "1+", "tag": 3, "default": 7}])
    assert m.decode(i32(1), 0) == {"a": 1}
    assert m.decode(i32(1) + i8(2) + tags(), 1) == {"a": 1, "b": 2}
    assert m.decode(i32(1) + i8(2) + tags({3: i16(7)}), 1) == {"a": 1, "b": 2}         # default: left out
    assert m.decode(i32(1) + i8(2) + tags({3: i16(8)}), 1) == {"a": 1, "b": 2, "c": 8}
    with pytest.raises(SchemaError, match="Can't read version 2 of Test"):
        m.decode(i32(1), 2)


def test_unknown_tags_are_kept():
    m = message([{"name": "a", "type": "int8"}])
    out = m.decode(i8(1) + tags({5: b"\x09", 40: b""}), 1)
    assert out == {"a": 1, "_unknown_tags": {"5": "CQ==", "40": ""}}
    assert strip_private(out) == {"a": 1}


def test_nested_structs_have_their_own_tag_sections_and_null_markers():
    m = message([{"name": "s", "type": "[]Item"},
                 {"name": "opt", "type": "Item", "null": "0+", "default": None}],
                structs={"Item": [{"name": "x", "type": "int8"}]})
    data = count(2, True) + i8(1) + tags() + i8(2) + tags({9: b"\x00"}) + i8(1) + i8(3) + tags() + tags()
    assert m.decode(data, 1) == {"s": [{"x": 1}, {"x": 2, "_unknown_tags": {"9": "AA=="}}], "opt": {"x": 3}}
    assert m.decode(count(0, True) + i8(-1) + tags(), 1) == {"s": [], "opt": None}


@pytest.mark.parametrize("data", [
    i32(0x7FFFFFFF) + bytes(6),            # non-flexible array of 2^31-1 on a 10-byte buffer
    i32(0x40000000) + bytes(6),
])
def test_huge_counts_fail_fast(data):
    m = message([{"name": "a", "type": "[]int64"}], versions="0", flexible="none")
    started = time.perf_counter()
    with pytest.raises(SchemaError, match="Tried to allocate a collection of size"):
        m.decode(data, 0)
    assert time.perf_counter() - started < 0.1


def test_huge_compact_lengths_fail_fast():
    m = message([{"name": "a", "type": "[]string"}, {"name": "b", "type": "bytes"}])
    with pytest.raises(SchemaError, match="Tried to allocate a collection of size 4294967294"):
        m.decode(b"\xff\xff\xff\xff\x0f" + bytes(5), 1)
    m2 = message([{"name": "b", "type": "bytes"}])
    with pytest.raises(SchemaError, match=r"Error reading byte array of 536870910 byte\(s\): only 2 byte\(s\)"):
        m2.decode(uvarint(536870911) + b"ab", 1)


def test_varints_are_bounded():
    m = message([{"name": "b", "type": "bytes"}])
    with pytest.raises(SchemaError, match="longer than 5 bytes"):
        m.decode(b"\xff" * 6, 1)
    with pytest.raises(SchemaError, match="runs past the end"):
        m.decode(b"\x80", 1)


def test_schema_errors_are_decode_errors_with_a_position():
    m = message([{"name": "a", "type": "int32"}, {"name": "b", "type": "int64"}], versions="0", flexible="none")
    with pytest.raises(DecodeError) as err:
        m.decode(i32(1) + b"\x00\x00", 0)
    assert err.value.payload_position == 4 and err.value.detail.startswith("Error reading int64")


def test_strings_decode_like_java():
    m = message([{"name": "a", "type": "string"}], versions="0", flexible="none")
    assert m.decode(i16(2) + b"\xff\xfe", 0) == {"a": "\ufffd\ufffd"}
    assert m.decode(string("naïve ☃"), 0) == {"a": "naïve ☃"}


def test_json_text():
    assert to_json({"a": [1, None, True, "é\n"], "b": 1.5, "c": {}}) == '{"a":[1,null,true,"é\\n"],"b":1.5,"c":{}}'
    assert [java_double(v) for v in (0.0, 100.0, 1e7, 1.5e-4, 0.001, -2.5e20, float("nan"))] == [
        "0.0", "100.0", "1.0E7", "1.5E-4", "0.001", "-2.5E20", "NaN"]


def test_bytes_render_as_standard_base64():
    m = message([{"name": "b", "type": "bytes"}], versions="0", flexible="none")
    raw = bytes(range(250, 256))
    assert m.decode(blob(raw), 0) == {"b": base64.b64encode(raw).decode()}


def test_schema_files_load_and_are_cached():
    for name in ("consumer_offsets.json", "transaction_state.json", "cluster_metadata.json", "kraft_control.json",
                 "share_group_state.json", "remote_log_metadata.json"):
        assert load(name) is load(name) and load(name).messages


def test_registry():
    assert INTERNAL_DECODERS == {"offsets": "kdump.decoders.consumer_offsets",
                                 "transaction-log": "kdump.decoders.transaction_state",
                                 "cluster-metadata": "kdump.decoders.cluster_metadata",
                                 "remote-log-metadata": "kdump.decoders.remote_log_metadata",
                                 "share-group-state": "kdump.decoders.share_group_state"}
    assert for_topic("__consumer_offsets") == "offsets"
    assert for_topic("__transaction_state") == "transaction-log"
    assert for_topic("__cluster_metadata") == "cluster-metadata"
    assert for_topic("__share_group_state") == "share-group-state"
    assert for_topic("__remote_log_metadata") == "remote-log-metadata"
    assert for_topic("orders") is None
    import importlib
    for module in INTERNAL_DECODERS.values():
        mod = importlib.import_module(module)
        assert callable(mod.decode) and callable(mod.text) and callable(mod.error_text)


def test_dls22_style_null_array_message():
    # DumpLogSegmentsTest #22 (share-group state) reports "non-nullable field stateBatches was serialized as null".
    m = message([{"name": "stateBatches", "type": "[]StateBatch", "fields": [{"name": "firstOffset", "type": "int64"}]}],  # noqa: E501
                versions="0", flexible="0+")
    with pytest.raises(SchemaError) as err:
        m.decode(count(None, True) + tags(), 0)
    assert err.value.detail == "non-nullable field stateBatches was serialized as null"
