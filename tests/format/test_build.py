"""The encoders (kdump.encode) against kdump's decoder and kafka-python.

A round trip through our own decoder alone could hide a shared misunderstanding, so
every built batch is also read by kafka-python, and the reference's worked bytes pin
the layout down byte for byte.
"""

from __future__ import annotations

import itertools
import struct

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from tests.oracle import kafka_python_decode, kdump_decode_buffer
except ImportError:
    from support.peers import kafka_python_decode, kdump_decode_buffer

from kdump.encode import (
    build_control_batch,
    build_end_txn_marker,
    build_legacy_message,
    build_legacy_wrapper,
    build_v2_batch,
)
from kdump.errors import KdumpError
from kdump.format.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD
from kdump.format.control import ABORT, COMMIT, SNAPSHOT_FOOTER, encode_control_key, encode_marker_value
from kdump.format.walk import Walker

T0 = 1_700_000_000_000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# (id, codec, xerial): raw snappy is what some non-Java producers write; v2 only here.
V2_CODECS = [("none", NONE, True), ("gzip", GZIP, True), ("snappy-xerial", SNAPPY, True),
             ("snappy-raw", SNAPPY, False), ("lz4", LZ4, True), ("zstd", ZSTD, True)]
LEGACY_CODECS = [("none", NONE), ("gzip", GZIP), ("snappy", SNAPPY), ("lz4", LZ4)]


def _hdrs(headers) -> tuple:
    return tuple((k if isinstance(k, str) else k.decode(), v) for k, v in headers)


def _both_agree(data: bytes):
    """Decode with kdump and kafka-python, assert they agree, return kdump's view."""
    ours = kdump_decode_buffer(data)
    batches, records = kafka_python_decode(data)
    assert ours.stop is None, ours.stop
    assert ours.records == records
    assert ours.batches == batches
    return ours


# -- worked bytes and documented sizes --------------------------------------------------------

def test_reference_v2_worked_bytes():
    expected = bytes.fromhex(
        "0000000000000000 0000003d 00000000 02 e641a44b 0000 00000000 0000018bcfe56800 0000018bcfe56800"
        "ffffffffffffffff ffff ffffffff 00000001 16 00 00 00 01 0a 68656c6c6f 00".replace(" ", ""))
    built = build_v2_batch([(0, 1_700_000_000_000, None, b"hello")], partition_leader_epoch=0)
    assert built == expected
    assert len(built) == 73
    assert struct.unpack_from(">I", built, 17)[0] == 3863061579


def test_reference_v1_worked_bytes():
    expected = bytes.fromhex(
        "0000000000000000 0000001b 8ee30bba 01 00 0000018bcfe56800 ffffffff 00000005 68656c6c6f".replace(" ", ""))
    built = build_legacy_message(0, None, b"hello", magic=1, timestamp=1_700_000_000_000)
    assert built == expected
    assert len(built) == 39
    assert struct.unpack_from(">I", built, 12)[0] == 2397244346


def test_kafka_docs_batch_sizes():
    assert len(build_v2_batch([(0, T0, b"key", b"value")])) == 76
    assert len(build_v2_batch([(0, T0, None, b"value")])) == 73


def test_same_bytes_as_kafka_python_builder():
    """kafka-python's own writer (uncompressed, so no codec framing differences) agrees byte for byte."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    recs = [(0, T0, b"k", b"v", [("h", b"x"), ("n", None)]), (1, T0 - 5, None, b"w" * 300, []),
            (2, T0 + 99, b"", None, [("\u00fc", b"")])]
    theirs = DefaultRecordBatchBuilder(2, 0, True, 77, 3, 12, 1 << 20)
    for delta, ts, key, value, headers in recs:
        theirs.append(delta, ts, key, value, headers)
    ours = build_v2_batch(recs, producer_id=77, producer_epoch=3, base_sequence=12, is_transactional=True,
                          partition_leader_epoch=0)
    assert ours == bytes(theirs.build())


# -- v2 matrix --------------------------------------------------------------------------------

FLAGS = ("log_append_time", "transactional", "control", "delete_horizon", "headers", "nulls")
V2_CASES = [(cid, codec, xerial, dict(zip(FLAGS, bits)))
            for (cid, codec, xerial), bits in itertools.product(V2_CODECS, itertools.product((False, True),
                                                                                           repeat=len(FLAGS)))]


def _case_id(case) -> str:
    cid, _, _, flags = case
    return "-".join([cid] + ([f for f in FLAGS if flags[f]] or ["plain"]))


def _v2_inputs(flags) -> list[tuple]:
    headers = [("trace", b"t-1"), ("n\u00e4me", None), ("", b"")] if flags["headers"] else []
    if flags["control"]:
        if flags["nulls"]:
            return [(0, T0, encode_control_key(SNAPSHOT_FOOTER), None, headers)]
        return [(0, T0, encode_control_key(COMMIT), encode_marker_value(7), headers),
                (1, T0 + 1, encode_control_key(ABORT), encode_marker_value(8), headers)]
    if flags["nulls"]:
        return [(0, T0, None, b"v0", headers), (1, T0 - 10, b"k1", None, headers), (3, T0 + 50, None, None, [])]
    return [(0, T0, b"k0", b"v0", headers), (1, T0 - 10, b"k1", b"v" * 200, headers), (3, T0 + 50, b"k3", b"", [])]


@pytest.mark.parametrize("case", V2_CASES, ids=[_case_id(c) for c in V2_CASES])
def test_v2_round_trip(case):
    _, codec, xerial, flags = case
    recs = _v2_inputs(flags)
    kwargs = dict(base_offset=1234, codec=codec, xerial=xerial, partition_leader_epoch=9)
    broker_time = T0 + 777_777
    if flags["log_append_time"]:
        kwargs.update(timestamp_type=1, max_timestamp=broker_time)
    if flags["transactional"]:
        kwargs.update(is_transactional=True, producer_id=42, producer_epoch=5, base_sequence=100)
    if flags["control"]:
        kwargs.update(is_control=True)
    horizon = T0 + 86_400_000
    if flags["delete_horizon"]:
        kwargs.update(delete_horizon_ms=horizon)
    data = build_v2_batch(recs, **kwargs)
    ours = _both_agree(data)

    [batch] = ours.raw_batches
    assert batch.crc_valid and batch.size == len(data)
    assert (batch.base_offset, batch.last_offset, batch.count) == (1234, 1234 + recs[-1][0], len(recs))
    assert batch.compression == codec and batch.partition_leader_epoch == 9
    assert batch.timestamp_type == (1 if flags["log_append_time"] else 0)
    assert batch.is_transactional == flags["transactional"] and batch.is_control == flags["control"]
    assert batch.delete_horizon_ms == (horizon if flags["delete_horizon"] else None)
    expected = [(1234 + d, broker_time if flags["log_append_time"] else ts, k, v, _hdrs(h))
                for d, ts, k, v, h in recs]
    assert ours.records == expected
    for rec, (d, *_rest) in zip(ours.raw_records, recs):
        assert rec.sequence == (100 + d if flags["transactional"] else -1)
        if flags["control"]:
            assert rec.control is not None
    if flags["control"] and not flags["nulls"]:
        assert [(r.control.type, r.control.coordinator_epoch) for r in ours.raw_records] == [(COMMIT, 7), (ABORT, 8)]


# -- legacy matrix ----------------------------------------------------------------------------

LEGACY_CASES = [(magic, cid, codec, ts_type, nulls)
                for magic in (0, 1) for cid, codec in LEGACY_CODECS
                for ts_type in ((0, 1) if magic == 1 else (0,)) for nulls in (False, True)]


@pytest.mark.parametrize("magic,cid,codec,ts_type,nulls", LEGACY_CASES,
                         ids=[f"v{m}-{c}-{'lat' if t else 'ct'}{'-nulls' if n else ''}"
                              for m, c, _, t, n in LEGACY_CASES])
def test_legacy_round_trip(magic, cid, codec, ts_type, nulls):
    msgs = [(500, T0 + 3, None if nulls else b"a", b"first"),
            (501, T0 + 1, b"b", None if nulls else b"second" * 50),
            (502, T0 + 2, None if nulls else b"", b"")]
    broker_time = T0 + 999
    if codec == NONE:
        # Uncompressed LogAppendTime messages carry the broker time themselves.
        stamp = (lambda ts: broker_time) if ts_type else (lambda ts: ts)
        data = b"".join(build_legacy_message(o, k, v, magic=magic, timestamp=stamp(ts), timestamp_type=ts_type)
                        for o, ts, k, v in msgs)
    else:
        data = build_legacy_wrapper(msgs, magic=magic, codec=codec, timestamp_type=ts_type,
                                    timestamp=broker_time if ts_type else None)
    ours = _both_agree(data)
    if magic == 0:
        expected_ts = [-1] * 3
    elif ts_type:
        expected_ts = [broker_time] * 3
    else:
        expected_ts = [ts for _, ts, _, _ in msgs]
    assert ours.records == [(o, t, k, v, ()) for (o, _, k, v), t in zip(msgs, expected_ts)]
    assert all(b.crc_valid for b in ours.raw_batches)
    assert all(r.crc_valid and r.magic == magic for r in ours.raw_records)
    if codec != NONE:
        [wrapper] = ours.raw_batches
        assert (wrapper.base_offset, wrapper.last_offset, wrapper.count) == (500, 502, 3)
        if magic == 1 and not ts_type:
            assert wrapper.max_timestamp == T0 + 3     # the wrapper carries the max inner timestamp


def _wrapper_value(entry: bytes, magic: int) -> bytes:
    pos = 12 + 4 + 2 + (8 if magic == 1 else 0)
    (klen,) = struct.unpack_from(">i", entry, pos)
    pos += 4 + max(klen, 0)
    (vlen,) = struct.unpack_from(">i", entry, pos)
    return entry[pos + 4:pos + 4 + vlen]


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_header_checksum_is_broken_only_for_magic_0(magic):
    value = _wrapper_value(build_legacy_wrapper([(0, T0, None, b"x" * 100)], magic=magic, codec=LZ4), magic)
    right = (xxhash.xxh32_intdigest(value[4:6]) >> 8) & 0xFF
    assert right == 0x82
    # KAFKA-3160: the 0.8/0.9 writer hashed magic+FLG+BD; the reference gives the byte as 0x1a.
    assert value[6] == (0x1A if magic == 0 else 0x82)


def test_legacy_wrapper_offsets():
    # v1 inner offsets are relative to the first; gaps (a compacted wrapper) survive.
    data = build_legacy_wrapper([(10, T0, b"a", b"1"), (12, T0, b"b", b"2"), (15, T0, b"c", b"3")],
                                magic=1, codec=GZIP)
    assert [r[0] for r in _both_agree(data).records] == [10, 12, 15]
    # v0 inner offsets are absolute.
    data = build_legacy_wrapper([(7, -1, b"a", b"1"), (8, -1, b"b", b"2")], magic=0, codec=SNAPPY)
    assert [r[0] for r in _both_agree(data).records] == [7, 8]
    # librdkafka's wrapper offset 0: Kafka treats the relative offsets as absolute.
    data = build_legacy_wrapper([(0, T0, None, b"1"), (1, T0, None, b"2")], magic=1, codec=LZ4, wrapper_offset=0)
    assert [r[0] for r in _both_agree(data).records] == [0, 1]
    # Pre-built inner entries are taken verbatim.
    inner = [build_legacy_message(i, None, b"x", magic=1, timestamp=T0) for i in range(3)]
    data = build_legacy_wrapper(inner, magic=1, codec=GZIP, wrapper_offset=40, timestamp=T0)
    assert [r[0] for r in _both_agree(data).records] == [38, 39, 40]


# -- odd but legal shapes ---------------------------------------------------------------------

def test_empty_batch_as_compaction_leaves_it():
    data = build_v2_batch([], base_offset=50, last_offset_delta=4, producer_id=9, producer_epoch=1, base_sequence=3)
    ours = _both_agree(data)
    [batch] = ours.raw_batches
    assert (batch.count, batch.base_offset, batch.last_offset) == (0, 50, 54)
    assert (batch.base_timestamp, batch.max_timestamp) == (-1, -1)
    assert batch.last_sequence == 7
    assert ours.records == []


@pytest.mark.parametrize("codec", [NONE, ZSTD])
def test_empty_batch_compressed_or_not(codec):
    ours = _both_agree(build_v2_batch([], codec=codec, base_timestamp=T0, max_timestamp=T0))
    assert ours.records == [] and ours.raw_batches[0].max_timestamp == T0


def test_log_append_time_keeps_create_time_deltas():
    data = build_v2_batch([(0, T0, None, b"a"), (1, T0 + 5, None, b"b")], timestamp_type=1, max_timestamp=T0 + 1000)
    ours = _both_agree(data)
    assert ours.raw_batches[0].base_timestamp == T0
    assert [r[1] for r in ours.records] == [T0 + 1000] * 2


@pytest.mark.parametrize("count", [1, 3])
def test_records_count_override_is_caught_by_the_decoder(count):
    data = build_v2_batch([(0, T0, None, b"a"), (1, T0, None, b"b")], records_count=count)
    [batch] = list(Walker(data))
    assert batch.crc_valid and batch.count == count
    with pytest.raises(KdumpError):
        kdump_decode_buffer(data)


def test_end_txn_markers_and_kraft_control():
    data = (build_end_txn_marker(True, base_offset=5, producer_id=1, producer_epoch=2, coordinator_epoch=3,
                                 timestamp=T0)
            + build_end_txn_marker(False, base_offset=6, producer_id=1, producer_epoch=2, coordinator_epoch=4,
                                   timestamp=T0)
            + build_control_batch(SNAPSHOT_FOOTER, b"\x00\x00\x00", base_offset=7, timestamp=T0))
    ours = _both_agree(data)
    assert [(r.control.type, r.control.coordinator_epoch) for r in ours.raw_records] == \
        [(COMMIT, 3), (ABORT, 4), (SNAPSHOT_FOOTER, None)]
    assert [b.is_transactional for b in ours.raw_batches] == [True, True, False]
    assert all(b.is_control for b in ours.raw_batches)


# -- properties -------------------------------------------------------------------------------

blobs = st.none() | st.binary(max_size=300)
header_keys = st.text(alphabet=st.characters(codec="utf-8"), max_size=10)


@st.composite
def v2_batches(draw):
    n = draw(st.integers(0, 6))
    base_ts = draw(st.integers(INT64_MIN, INT64_MAX))
    # Every timestamp must differ from the first (the base) by a delta that fits int64.
    ts_range = st.integers(max(INT64_MIN, base_ts - (1 << 62)), min(INT64_MAX, base_ts + (1 << 62)))
    delta = draw(st.integers(0, 10))
    records = []
    for i in range(n):
        ts = base_ts if i == 0 else draw(ts_range)
        headers = draw(st.lists(st.tuples(header_keys, blobs), max_size=3))
        records.append((delta, ts, draw(blobs), draw(blobs), headers))
        delta += draw(st.integers(1, 1000))
    cid, codec, xerial = draw(st.sampled_from(V2_CODECS))
    kwargs = dict(base_offset=draw(st.integers(0, 1 << 62)), codec=codec, xerial=xerial,
                  timestamp_type=draw(st.sampled_from([0, 1])),
                  producer_id=draw(st.integers(-1, INT64_MAX)), producer_epoch=draw(st.integers(-1, 32767)),
                  base_sequence=draw(st.integers(-1, (1 << 31) - 1)), is_transactional=draw(st.booleans()),
                  partition_leader_epoch=draw(st.integers(-1, (1 << 31) - 1)))
    if kwargs["timestamp_type"] == 1:
        kwargs["max_timestamp"] = draw(st.integers(INT64_MIN, INT64_MAX))
    return records, kwargs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v2_batches())
def test_v2_property_round_trip(case):
    records, kwargs = case
    data = build_v2_batch(records, **kwargs)
    ours = _both_agree(data)
    base = kwargs["base_offset"]
    lat = kwargs["timestamp_type"] == 1
    expected = [(base + d, kwargs["max_timestamp"] if lat else ts, k, v, _hdrs(h)) for d, ts, k, v, h in records]
    assert ours.records == expected
    seq = kwargs["base_sequence"]
    assert [r.sequence for r in ours.raw_records] == [(seq + d) & 0x7FFFFFFF if seq >= 0 else -1
                                                      for d, *_ in records]
    [batch] = ours.raw_batches
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == \
        (kwargs["producer_id"], kwargs["producer_epoch"], seq)


@st.composite
def legacy_sets(draw):
    magic = draw(st.sampled_from([0, 1]))
    cid, codec = draw(st.sampled_from(LEGACY_CODECS))
    first = draw(st.integers(0, 1 << 62))
    n = draw(st.integers(1, 5))
    msgs = [(first + i, draw(st.integers(INT64_MIN, INT64_MAX)) if magic else -1, draw(blobs), draw(blobs))
            for i in range(n)]
    return magic, codec, msgs


@settings(max_examples=200, deadline=None)
@given(legacy_sets())
def test_legacy_property_round_trip(case):
    magic, codec, msgs = case
    if codec == NONE:
        data = b"".join(build_legacy_message(o, k, v, magic=magic, timestamp=ts) for o, ts, k, v in msgs)
    else:
        data = build_legacy_wrapper(msgs, magic=magic, codec=codec)
    ours = _both_agree(data)
    assert ours.records == [(o, ts, k, v, ()) for o, ts, k, v in msgs]


@pytest.mark.parametrize("accelerated", [True, False])
def test_sequences_wrap_past_int32_alike_everywhere(accelerated):
    """A producer sequence near 2^31-1 wraps to 0 (``DefaultRecordBatch.incrementSequence``), in
    the batch's lastSequence, every record's sequence (Python loop and C decoder) and the text
    line (Python and C renderer): one rule, model.sequence_at."""
    from kdump import _accel
    from kdump.format.records import decode_v2
    from kdump.format.walk import Walker
    from kdump.model import sequence_at
    from kdump.render.text import batch_line

    top = (1 << 31) - 1
    assert [sequence_at(top - 1, d) for d in range(4)] == [top - 1, top, 0, 1]
    assert sequence_at(1, -3) == top - 1 and sequence_at(-1, 5) == -1
    data = build_v2_batch([(i, 1_700_000_000_000, b"k", b"v") for i in range(4)], base_offset=10, producer_id=9,
                          producer_epoch=0, base_sequence=top - 1)
    with _accel.using(accelerated):
        [batch] = list(Walker(data))
        assert batch.last_sequence == 1
        assert [r.sequence for r in decode_v2(data, batch)] == [top - 1, top, 0, 1]
        assert f"baseSequence: {top - 1} lastSequence: 1 " in batch_line(batch)
