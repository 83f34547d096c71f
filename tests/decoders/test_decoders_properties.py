"""Property tests: schema round trips, and random bytes can only ever raise DecodeError."""

from __future__ import annotations

import base64

import kafka_wire
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.decoders import cluster_metadata, consumer_offsets, remote_log_metadata, share_group_state, transaction_state
from kdump.errors import DecodeError
from kdump.format.kraft_control import decode_control_value
from kdump.format.message_spec import load

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- generated values for a schema ----------------------------------------------------------

_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _within(rng, v):
    return rng is not None and rng[0] <= v <= rng[1]


def _scalar(kind, flexible):
    if kind in _INT_RANGES:
        bits = _INT_RANGES[kind]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if kind == "uint16":
        return st.integers(0, 0xFFFF)
    if kind == "uint32":
        return st.integers(0, 0xFFFFFFFF)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode())
    if kind == "string":
        return st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
    return st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())       # bytes, records


def _field_value(f, version, flexible):
    element = _struct_value(f.struct, version, flexible) if f.kind == "struct" else _scalar(f.kind, flexible)
    value = st.lists(element, max_size=3) if f.array else element
    if _within(f.nullable, version) and (f.array or f.kind in ("string", "bytes", "records", "struct")):
        value = st.one_of(st.none(), value)
    return value


def _struct_value(struct, version, flexible):
    fields = [f for f in struct.fields if _within(f.versions, version)]
    parts = {f.name: _field_value(f, version, flexible) for f in fields}
    return st.fixed_dictionaries(parts).map(lambda d: _drop_default_tags(struct, version, flexible, d))


def _drop_default_tags(struct, version, flexible, data):
    # The reader leaves out tagged fields equal to their default, as Kafka's JSON does.
    out = {}
    for f in struct.fields:
        if f.name not in data:
            continue
        if f.tag is not None and _within(f.tagged, version):
            if f.kind == "struct" and not f.array:
                # Kafka's JSON leaves out a tagged struct equal to a struct of defaults, and
                # shows null; so the round trip goes through null.
                if data[f.name] is not None and data[f.name] == f.struct.default_value(version, flexible):
                    out[f.name] = None
                    continue
            elif data[f.name] == f.default_value(version, flexible):
                continue
        out[f.name] = data[f.name]
    return out


def _all_messages():
    for filename in ("consumer_offsets.json", "transaction_state.json", "cluster_metadata.json",
                     "kraft_control.json", "share_group_state.json", "remote_log_metadata.json"):
        for name, message in load(filename).messages.items():
            for version in range(message.lowest, message.highest + 1):
                yield pytest.param(message, version, id=f"{name}-v{version}")


@pytest.mark.parametrize("message, version", list(_all_messages()))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(message, version, data):
    flexible = _within(message.flexible, version)
    value = data.draw(_struct_value(message.root, version, flexible))
    encoded = kafka_wire.encode(message, version, value)
    assert message.decode(encoded, version) == value


# -- random bytes ---------------------------------------------------------------------------

def _only_decode_errors(fn, *args):
    try:
        result = fn(*args)
    except DecodeError:
        return None
    assert isinstance(result, dict)
    return result


COORDINATOR_IDS = st.sampled_from(sorted(consumer_offsets.table().types) + [-1, 99, 0x7FFF])
MAYBE_BYTES = st.one_of(st.none(), st.binary(max_size=80))


@SETTINGS
@given(key=MAYBE_BYTES, value=MAYBE_BYTES)
def test_offsets_random_bytes(key, value):
    _only_decode_errors(consumer_offsets.decode, key, value)


@SETTINGS
@given(type_id=COORDINATOR_IDS, key_body=st.binary(max_size=40), version=st.integers(-1, 6),
       body=st.binary(max_size=120))
def test_offsets_random_bodies_of_known_types(type_id, key_body, version, body):
    key = kafka_wire.i16(type_id) + key_body
    decoded = _only_decode_errors(consumer_offsets.decode, key, kafka_wire.i16(version) + body)
    if decoded is not None:
        consumer_offsets.text(decoded)


@SETTINGS
@given(key=MAYBE_BYTES, value=MAYBE_BYTES, version=st.integers(-1, 2), body=st.binary(max_size=80))
def test_transactions_random_bytes(key, value, version, body):
    _only_decode_errors(transaction_state.decode, key, value)
    decoded = _only_decode_errors(transaction_state.decode, kafka_wire.i16(0) + kafka_wire.string("t"),
                                  kafka_wire.i16(version) + body)
    if decoded is not None:
        transaction_state.text(decoded)


@SETTINGS
@given(key=MAYBE_BYTES, value=MAYBE_BYTES, type_id=st.integers(-1, 2), key_body=st.binary(max_size=40),
       body=st.binary(max_size=120))
def test_share_state_random_bytes(key, value, type_id, key_body, body):
    _only_decode_errors(share_group_state.decode, key, value)
    decoded = _only_decode_errors(share_group_state.decode, kafka_wire.i16(type_id) + key_body,
                                  kafka_wire.i16(0) + body)
    if decoded is not None:
        share_group_state.text(decoded)


def _framed_random_bytes(module, value, api_key, version, body) -> None:
    """Random bytes, then a valid frame (frame version, api key, version) around random ones."""
    _only_decode_errors(module.decode, None, value)
    framed = kafka_wire.uvarint(1) + kafka_wire.uvarint(api_key) + kafka_wire.uvarint(version) + body
    decoded = _only_decode_errors(module.decode, None, framed)
    if decoded is not None:
        module.text(decoded)


@SETTINGS
@given(value=MAYBE_BYTES, api_key=st.integers(0, 31), version=st.integers(0, 4), body=st.binary(max_size=120))
def test_metadata_random_bytes(value, api_key, version, body):
    _framed_random_bytes(cluster_metadata, value, api_key, version, body)


@SETTINGS
@given(value=MAYBE_BYTES, api_key=st.integers(0, 5), version=st.integers(0, 2), body=st.binary(max_size=160))
def test_remote_log_metadata_random_bytes(value, api_key, version, body):
    _framed_random_bytes(remote_log_metadata, value, api_key, version, body)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), api_key=st.integers(0, 3), version=st.integers(0, 1))
def test_remote_log_metadata_mutated_records(data, api_key, version):
    """A valid remote-log record of each type, flipped, cut or extended: still only DecodeError."""
    rtype = remote_log_metadata.types()[api_key]
    value = data.draw(_struct_value(rtype.message.root, version, True))
    raw = bytearray(kafka_wire.uvarint(1) + kafka_wire.uvarint(api_key) + kafka_wire.uvarint(version)
                    + kafka_wire.encode(rtype.message, version, value))
    action = data.draw(st.sampled_from(["flip", "cut", "extend"]))
    if action == "flip":
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
    elif action == "cut":
        del raw[data.draw(st.integers(0, len(raw) - 1)):]
    else:
        raw += data.draw(st.binary(min_size=1, max_size=8))
    decoded = _only_decode_errors(remote_log_metadata.decode, None, bytes(raw))
    if decoded is not None:
        remote_log_metadata.text(decoded)


@SETTINGS
@given(ctype=st.integers(-1, 8), value=MAYBE_BYTES)
def test_control_random_bytes(ctype, value):
    _only_decode_errors(decode_control_value, ctype, value)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_valid_records(data):
    """Flip, cut or extend the bytes of real-looking records: still only DecodeError."""
    m = load("consumer_offsets.json")["GroupMetadataValue"]
    value = data.draw(_struct_value(m.root, 4, True))
    raw = bytearray(kafka_wire.i16(4) + kafka_wire.encode(m, 4, value))
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "cut", "extend"]))
        if action == "flip" and raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del raw[data.draw(st.integers(0, len(raw))):]
        else:
            raw += data.draw(st.binary(min_size=1, max_size=8))
    _only_decode_errors(consumer_offsets.decode, kafka_wire.i16(2) + kafka_wire.string("g"), bytes(raw))
