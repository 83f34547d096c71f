"""Property tests (hypothesis) for the decoding core.

- varints and varlongs round-trip over the whole int32/int64 range and at its bounds,
  and values one past a bound are rejected, never widened;
- build -> walk -> decode returns what was built, for every magic, codec and attribute
  combination, with and without the C accelerator;
- any byte string given to the batch, record, index, checkpoint and metadata parsers
  yields valid objects or a KdumpError, never another exception.

Profiles: ``ci`` (default, fast) and ``thorough``; choose with KDUMP_HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import itertools
import json
import os
import struct

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kdump import _accel, encode
from kdump.encode import (
    build_control_batch,
    build_end_txn_marker,
    build_legacy_message,
    build_legacy_wrapper,
    build_v2_batch,
)
from kdump.errors import InvalidRecordError, KdumpError, TruncatedError
from kdump.format import checkpoint, index, logdir_files, snapshot, timeindex, txnindex, varint
from kdump.format.batch import parse_v2
from kdump.format.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD, Limits, compress, decompress
from kdump.format.control import ABORT, COMMIT
from kdump.format.records import decode_v2_payload
from kdump.format.walk import Walker, decode_records
from kdump.model import Batch

# The speedups fixture sets module state for the whole test, which is what we want.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=_QUIET)
settings.register_profile("thorough", max_examples=1000, deadline=None,
                          suppress_health_check=_QUIET)
PROFILE = settings.get_profile(os.environ.get("KDUMP_HYPOTHESIS_PROFILE", "ci"))
# Tests parametrized over every attribute combination: fewer examples per combination.
PER_COMBO = settings(PROFILE, max_examples=max(5, PROFILE.max_examples // 8))

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
T0 = 1_700_000_000_000
LIMITS = Limits(ratio=64, floor=1 << 20, cap=16 << 20)


@pytest.fixture(params=["accel", "pure"])
def speedups(request):
    """Run a test with the C accelerator and again without it (skipped if not built)."""
    if request.param == "accel" and _accel.built() is None:
        pytest.skip(f"C accelerator {_accel.unavailable}")
    was = _accel.use(request.param == "accel")
    yield request.param
    _accel.use(was)


def both_ways(fn, *args):
    """``fn(*args)`` with the C accelerator and without; the two results must be equal."""
    got = fn(*args)
    with _accel.using(False):
        assert fn(*args) == got, "C accelerator and pure Python disagree"
    return got


# -- varints ----------------------------------------------------------------------------------

def _bounds(lo: int, hi: int) -> list[int]:
    return [lo, lo + 1, -1, 0, 1, hi - 1, hi]


@PROFILE
@given(st.integers(*INT32))
def test_varint_round_trip_int32(value):
    for v in (value, *_bounds(*INT32)):
        encoded = varint.encode_varint(v)
        assert len(encoded) <= 5
        assert varint.read_varint(encoded + b"\xff", 0) == (v, len(encoded))
        assert varint.size_of_varint(v) == len(encoded)


@PROFILE
@given(st.integers(*INT64))
def test_varlong_round_trip_int64(value):
    for v in (value, *_bounds(*INT64)):
        encoded = varint.encode_varlong(v)
        assert len(encoded) <= 10
        assert varint.read_varlong(encoded, 0) == (v, len(encoded))


@PROFILE
@given(st.integers(0, (1 << 64) - 1))
def test_uvarint_round_trip(value):
    encoded = varint.encode_uvarint(value)
    assert varint.read_uvarint(encoded, 0, 10) == (value, len(encoded))


@pytest.mark.parametrize("value", [INT32[0] - 1, INT32[1] + 1, 1 << 32, INT64[0], INT64[1]])
def test_varint_outside_int32_is_rejected(value):
    encoded = varint.encode_varint(value)
    with pytest.raises(InvalidRecordError):
        varint.read_varint(encoded, 0)


@pytest.mark.parametrize("raw", [
    bytes.fromhex("ffffffffffffffffff7f"),        # 70 significant bits in a 10-byte varlong
    bytes.fromhex("80808080808080808002"),        # bit 64 set, nothing below it
])
def test_varlong_wider_than_int64_is_rejected(raw):
    with pytest.raises(InvalidRecordError):
        varint.read_varlong(raw, 0)


@pytest.mark.parametrize("reader, width", [(varint.read_varint, 5), (varint.read_varlong, 10)])
def test_overlong_and_truncated_varints(reader, width):
    with pytest.raises(InvalidRecordError):
        reader(b"\x80" * width + b"\x00", 0)
    for n in range(width):
        with pytest.raises(TruncatedError):
            reader(b"\x80" * n, 0)


@PROFILE
@given(st.binary(max_size=12), st.integers(0, 12))
def test_varint_readers_never_raise_anything_else(data, pos):
    for read in (varint.read_varint, varint.read_varlong, varint.read_uvarint):
        try:
            value, end = read(data, pos)
        except KdumpError:
            continue
        assert pos < end <= len(data)
        if read is varint.read_varint:
            assert INT32[0] <= value <= INT32[1]
        elif read is varint.read_varlong:
            assert INT64[0] <= value <= INT64[1]


# -- build -> walk -> decode -----------------------------------------------------------------

header_key = st.one_of(st.text(max_size=8), st.binary(max_size=8).map(lambda b: b.decode("latin-1")))
nullable = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(st.tuples(header_key, nullable), max_size=3)
v2_records = st.lists(st.tuples(st.integers(-(1 << 40), 1 << 40), nullable, nullable, headers), max_size=6)

# Every v2 attribute combination the encoder can express: codec x snappy framing x
# timestamp type x transactional x delete horizon.
V2_COMBOS = [(codec, xerial, ts_type, txn, horizon)
             for codec in (NONE, GZIP, SNAPPY, LZ4, ZSTD)
             for xerial in ((True, False) if codec == SNAPPY else (True,))
             for ts_type, txn, horizon in itertools.product((0, 1), (False, True), (False, True))]


def _walk_one(data: bytes) -> Batch:
    walker = Walker(data)
    batches = list(walker)
    assert walker.stop is None and len(batches) == 1
    assert batches[0].crc_valid
    return batches[0]


@pytest.mark.parametrize("codec, xerial, ts_type, txn, horizon", V2_COMBOS,
                         ids=lambda v: str(v))
@PER_COMBO
@given(records=v2_records, base_offset=st.integers(0, INT64[1] - (1 << 32)),
       producer=st.tuples(st.integers(-1, INT64[1]), st.integers(-1, INT32[1] >> 16), st.integers(-1, INT32[1])),
       epoch=st.integers(*INT32))
def test_v2_build_parse_round_trip(codec, xerial, ts_type, txn, horizon, records, base_offset,
                                   producer, epoch):
    pid, pepoch, base_seq = producer
    items = [(i * 2, T0 + ts, k, v, h) for i, (ts, k, v, h) in enumerate(records)]
    broker_time = T0 + (1 << 41)
    kwargs = {"max_timestamp": broker_time} if ts_type else {}
    if horizon:
        kwargs["delete_horizon_ms"] = T0 - 5
    data = build_v2_batch(items, base_offset=base_offset, codec=codec, timestamp_type=ts_type,
                          producer_id=pid, producer_epoch=pepoch, base_sequence=base_seq,
                          is_transactional=txn, partition_leader_epoch=epoch, xerial=xerial, **kwargs)
    batch = both_ways(_walk_one, data)
    assert (batch.base_offset, batch.count, batch.compression, batch.magic) == \
           (base_offset, len(items), codec, 2)
    assert batch.last_offset == base_offset + (items[-1][0] if items else 0)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, pepoch, base_seq)
    assert batch.partition_leader_epoch == epoch and batch.is_transactional == txn
    assert batch.timestamp_type == ts_type and batch.delete_horizon_ms == (T0 - 5 if horizon else None)
    decoded = both_ways(decode_records, data, batch, LIMITS)
    assert len(decoded) == len(items)
    for (delta, ts, key, value, hdrs), rec in zip(items, decoded):
        assert rec.offset == base_offset + delta
        assert rec.timestamp == (broker_time if ts_type else ts)
        assert (rec.key, rec.value) == (key, value)
        assert rec.headers == tuple((k.encode("utf-8"), v) for k, v in hdrs)
        assert rec.sequence == (-1 if base_seq < 0 else (base_seq + delta) & 0x7FFFFFFF)
        json.dumps(rec.to_dict())
    json.dumps(batch.to_dict())


@pytest.mark.parametrize("kind", ["commit", "abort", "snapshot_footer"])
@PER_COMBO
@given(base_offset=st.integers(0, 1 << 50), coordinator_epoch=st.integers(*INT32),
       pid=st.integers(0, INT64[1]))
def test_control_build_parse_round_trip(kind, base_offset, coordinator_epoch, pid):
    if kind == "snapshot_footer":
        data = build_control_batch(4, b"\x00\x00\x00", base_offset=base_offset)
    else:
        data = build_end_txn_marker(kind == "commit", base_offset=base_offset, producer_id=pid, producer_epoch=3,
                                    coordinator_epoch=coordinator_epoch)
    batch = both_ways(_walk_one, data)
    assert batch.is_control
    (rec,) = both_ways(decode_records, data, batch, LIMITS)
    if kind == "snapshot_footer":
        assert rec.control.type_name == "SNAPSHOT_FOOTER"
    else:
        assert rec.control.type == (COMMIT if kind == "commit" else ABORT)
        assert rec.control.coordinator_epoch == coordinator_epoch
        assert batch.is_transactional and batch.producer_id == pid


legacy_messages = st.lists(st.tuples(st.integers(-1, 1 << 45), nullable, nullable), min_size=1, max_size=5)
LEGACY_COMBOS = [(magic, codec, xerial, ts_type)
                 for magic in (0, 1)
                 for codec in (NONE, GZIP, SNAPPY, LZ4)
                 for xerial in ((True, False) if codec == SNAPPY else (True,))
                 for ts_type in ((0, 1) if magic == 1 else (0,))]


@pytest.mark.parametrize("magic, codec, xerial, ts_type", LEGACY_COMBOS, ids=lambda v: str(v))
@PER_COMBO
@given(messages=legacy_messages, first=st.integers(0, 1 << 50))
def test_legacy_build_parse_round_trip(magic, codec, xerial, ts_type, messages, first):
    items = [(first + i, T0 + ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(messages)]
    if codec == NONE:
        data = b"".join(build_legacy_message(o, k, v, magic=magic, timestamp=ts, timestamp_type=ts_type)
                        for o, ts, k, v in items)
    else:
        data = build_legacy_wrapper(items, magic=magic, codec=codec, timestamp_type=ts_type, xerial=xerial,
                                    timestamp=T0 + 99 if ts_type else None)
    walker = Walker(data)
    batches = list(walker)
    assert walker.stop is None and all(b.crc_valid for b in batches)
    assert all(b.magic == magic and b.compression == codec for b in batches)
    decoded = [r for b in batches for r in decode_records(data, b, LIMITS)]
    assert [(r.offset, r.key, r.value) for r in decoded] == [(o, k, v) for o, _, k, v in items]
    if magic == 0:
        assert all(r.timestamp == -1 for r in decoded)
    elif ts_type and codec:
        assert all(r.timestamp == T0 + 99 for r in decoded)     # inner messages take the wrapper's time
    else:
        assert [r.timestamp for r in decoded] == [ts for _, ts, _, _ in items]
    if codec:
        (wrapper,) = batches
        assert (wrapper.base_offset, wrapper.last_offset, wrapper.count) == (first, items[-1][0], len(items))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY], ids=["gzip-members", "xerial-streams"])
@PER_COMBO
@given(parts=st.lists(st.binary(max_size=3000), min_size=1, max_size=3), padding=st.integers(0, 3))
@example(parts=[bytes(range(256)) * 300, b"", b"x" * 70_000], padding=2)     # several xerial chunks
def test_concatenated_streams_decode(codec, parts, padding):
    # Java reads every gzip member (and zero padding after the last); newer snappy-java
    # reads concatenated xerial streams, header and all.
    data = b"".join(compress(codec, p) for p in parts) + (bytes(padding) if codec == GZIP else b"")
    assert decompress(codec, data) == b"".join(parts)


# -- arbitrary bytes --------------------------------------------------------------------------

def _mutated(valid: bytes):
    """Valid bytes with a few bytes overwritten, cut short or extended: reaches deeper code."""
    return st.tuples(st.lists(st.tuples(st.integers(0, max(len(valid) - 1, 0)), st.integers(0, 255)), max_size=6),
                     st.integers(0, len(valid)), st.binary(max_size=16)).map(
        lambda t: _apply(valid, *t))


def _apply(valid: bytes, edits, cut, tail) -> bytes:
    b = bytearray(valid)
    for at, value in edits:
        if at < len(b):
            b[at] = value
    return bytes(b[:cut]) + tail


SAMPLE_SEGMENT = b"".join([
    build_v2_batch([(0, T0, b"k", b"v", [("h", b"x")]), (1, T0 + 5, None, b"w")], base_offset=0),
    build_v2_batch([(0, T0, b"k", b"v" * 50)], base_offset=2, codec=GZIP),
    build_end_txn_marker(True, base_offset=3, producer_id=9, producer_epoch=0),
    build_legacy_message(4, b"a", b"b", magic=1, timestamp=T0),
    build_legacy_wrapper([(5, T0, None, b"c"), (6, T0, b"d", None)], magic=1, codec=LZ4),
    build_legacy_wrapper([(7, -1, None, b"e")], magic=0, codec=SNAPPY),
])


def _walk_all(data: bytes) -> None:
    walker = Walker(data, 0, None, LIMITS)
    pos = 0
    for batch in walker:
        assert batch.position == pos and batch.next_position <= len(data)
        pos = batch.next_position
        json.dumps(batch.to_dict())
        try:
            records = decode_records(data, batch, LIMITS)
        except KdumpError:
            continue
        for r in records:
            json.dumps(r.to_dict())
    assert walker.stop_position == pos
    assert (walker.stop is None) == (pos == len(data))


@PROFILE
@given(st.one_of(st.binary(max_size=400), _mutated(SAMPLE_SEGMENT)))
def test_any_bytes_to_the_walker_and_record_decoder(speedups, data):
    _walk_all(data)


@PROFILE
@given(st.binary(min_size=61, max_size=200))
def test_any_bytes_to_the_v2_header_parser(data):
    batch = parse_v2(data, 0)
    assert batch.size == struct.unpack_from(">i", data, 8)[0] + 12
    if batch.size > len(data) or batch.size < 61:
        assert not batch.crc_valid


@PROFILE
@given(data=st.binary(max_size=300), count=st.one_of(st.integers(-2, 20), st.integers(*INT32)),
       attributes=st.sampled_from([0, 0x08, 0x20, 0x30, 0x28]), base_seq=st.sampled_from([-1, 0, INT32[1]]))
@example(data=b"\x0c\x00\x00\x00\x01\x02\xff\xff\xff\xff\x0f", count=1, attributes=0, base_seq=-1)
def test_any_bytes_to_the_v2_record_decoder(speedups, data, count, attributes, base_seq):
    batch = Batch(0, 100, 100 + max(count, 0), count, 61, 2, 0, True, attributes, 0, T0, T0, 1, 0, base_seq)
    try:
        records = decode_v2_payload(data, batch)
    except KdumpError:
        return
    assert len(records) == count
    # Each record takes at least 7 bytes: a count larger than the data can never decode.
    assert count * 7 <= len(data)


def _index_samples():
    return st.one_of(st.binary(max_size=200), st.binary(max_size=40).map(lambda b: b + bytes(64)))


@PROFILE
@given(_index_samples(), st.integers(0, INT64[1] >> 1))
def test_any_bytes_to_the_index_parsers(data, base):
    idx = index.parse_index(data, base)
    assert len(idx.entries) <= len(data) // 8 and idx.partial_bytes == len(data) % 8
    assert all(isinstance(m, str) for m in idx.sanity_check("x.index"))
    tidx = timeindex.parse_timeindex(data, base)
    assert len(tidx.entries) <= len(data) // 12 and tidx.partial_bytes == len(data) % 12
    assert all(isinstance(m, str) for m in tidx.sanity_check("x.timeindex"))
    txn = txnindex.parse_txnindex(data)
    assert len(txn.entries) == len(data) // 34
    txnindex.version_errors(txn.entries, "x")
    txnindex.sanity_check_txnindex(txn.entries, base, "x")


VALID_SNAPSHOT = encode.encode_snapshot([(7, 1, 5, 100, 2, T0, 3, -1), (8, 0, 9, 200, 0, T0, -1, 150)])


@PROFILE
@given(st.one_of(st.binary(max_size=200), _mutated(VALID_SNAPSHOT)))
def test_any_bytes_to_the_snapshot_parser(data):
    try:
        snap = snapshot.parse_snapshot(data)
    except KdumpError:
        return
    assert len(snap.entries) * snapshot.ENTRY_SIZE + snapshot.HEADER.size + snap.trailing_bytes == len(data)


checkpoint_text = st.one_of(
    st.binary(max_size=120),
    st.lists(st.sampled_from(["0", "1", "2", "-1", "x", "0 5", "t 0 5", "a b c", " 1 2", "2147483648 0",
                              "t 1 9223372036854775808", "", "\u00e9 0 1"]), max_size=6)
      .map(lambda lines: "\n".join(lines).encode("utf-8")),
)


@pytest.mark.parametrize("kind", checkpoint.KINDS)
@PROFILE
@given(data=checkpoint_text)
def test_any_bytes_to_the_checkpoint_parser(kind, data):
    try:
        entries = checkpoint.parse_checkpoint(data, kind, "x")
    except KdumpError:
        return
    assert checkpoint.parse_checkpoint(checkpoint.encode_checkpoint(entries), kind) == entries


metadata_text = st.one_of(
    st.binary(max_size=120),
    st.lists(st.sampled_from(["version: 0", "version=1", "topic_id: AAAAAAAAAAAAAAAAAAAAAQ", "node.id=1",
                              "broker.id=x", "cluster.id=abc", "directory.id=AAAAAAAAAAAAAAAAAAAAAQ",
                              "a\\", "\\u00e9=1", "\\uzz", "# c", '{"version":0,"brokerEpoch":5}', "[", ""]),
             max_size=6).map(lambda lines: "\n".join(lines).encode("utf-8")),
)


@pytest.mark.parametrize("parse", [logdir_files.parse_partition_metadata, logdir_files.parse_meta_properties,
                                   logdir_files.parse_quorum_state, logdir_files.parse_clean_shutdown],
                         ids=lambda f: f.__name__)
@PROFILE
@given(data=metadata_text)
def test_any_bytes_to_the_metadata_parsers(parse, data):
    try:
        value = parse(data)
    except KdumpError:
        return
    assert isinstance(value, dict)
    json.dumps(value, default=str)
