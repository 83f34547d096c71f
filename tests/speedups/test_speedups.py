"""The C accelerator ``kdump._speedups.native`` against the pure-Python reference.

Every test runs the same input through both paths (``kdump._accel.use(True)`` and
``use(False)``) and requires identical output: the batches of the Walker with
its stop finding and stop position after every step, and the records (or the exact error)
of ``decode_records``. Inputs: every fixture segment, then generated segments, cut,
bit-flipped and with hostile header fields. The module is skipped when the extension is
not built; it runs whether or not KDUMP_NO_SPEEDUPS is set (it switches the accelerator
on by itself).
"""

from __future__ import annotations

import mmap
import os
import random
import struct
import zlib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch, encode_v2_record
from kdump.format import legacy
from kdump.format import records as records_mod
from kdump.format.batch import parse_v2
from kdump.format.varint import encode_uvarint
from kdump.format.walk import Walker, decode_records
from kdump.model import Batch, Record
from support.run import fixture_logs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
INT64 = (-(1 << 63), (1 << 63) - 1)




LOGS = fixture_logs()
REAL_LOGS = [p for p in LOGS if p.startswith("real" + os.sep)]


# -- running both paths -----------------------------------------------------------------------

def _Path(use_c: bool):
    """The accelerator on (or off) for the duration of a block."""
    return _accel.using(use_c)


def strict(x):
    """A structure that compares equal only if types match too (True is not 1, Batch is not tuple)."""
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [strict(i) for i in x])
    return (type(x).__name__, x)


def _error(e: Exception):
    return (type(e).__name__, str(e), getattr(e, "message", None), getattr(e, "position", None),
            getattr(e, "offset", None))


def run(buf, start: int = 0, end: int | None = None, *, decode: bool = True):
    """Everything observable about walking (and decoding) ``buf``."""
    walker = Walker(buf, start, end)
    steps, decoded = [], []
    try:
        for batch in walker:
            steps.append((strict(batch), walker.stop_position))
            if decode:
                try:
                    decoded.append(strict(decode_records(buf, batch)))
                except Exception as e:  # noqa: BLE001 - the exact error is part of the contract
                    decoded.append(_error(e))
    except Exception as e:  # noqa: BLE001 - e.g. a negative start: the walker itself raises
        steps.append(_error(e))
    return steps, strict(walker.stop), walker.stop_position, walker.trailing_bytes, decoded


def both(buf, start: int = 0, end: int | None = None, *, decode: bool = True):
    with _Path(use_c=False):
        pure = run(buf, start, end, decode=decode)
    with _Path(use_c=True):
        fast = run(buf, start, end, decode=decode)
    assert fast == pure
    return pure


# -- crc32c -----------------------------------------------------------------------------------

def test_crc32c_vector():
    assert _speedups.crc32c(b"123456789") == 0xE3069283
    assert _speedups._crc32c_sw(b"123456789") == 0xE3069283
    assert _speedups.crc32c(b"") == 0
    assert _speedups.crc32c_impl in ("sse4.2", "software")


def test_crc32c_matches_the_package_on_every_length_and_alignment():
    crc32c_pkg = pytest.importorskip("crc32c")
    rnd = random.Random(7)
    data = rnd.randbytes(3 * 8192 * 3 + 1000)
    view = memoryview(data)
    lengths = list(range(80)) + [767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 9, len(data) - 16]
    for n in lengths:
        for start in range(9):
            chunk = view[start:start + n]
            seed = rnd.randrange(1 << 32)
            want = crc32c_pkg.crc32c(chunk, seed)
            assert _speedups.crc32c(chunk, seed) == want, (start, n)
            assert _speedups._crc32c_sw(chunk, seed) == want, (start, n)


def test_crc32_matches_zlib_on_every_length_and_alignment():
    """The legacy messages' CRC-32: folded (carry-less multiplies) from 64 bytes on, by the
    table below that and for the tail; both against zlib's at every length round the fold's
    steps (16, 64) and every alignment, over bytes of all 256 values."""
    rnd = random.Random(11)
    data = rnd.randbytes(70_000)
    view = memoryview(data)
    lengths = list(range(200)) + [255, 256, 257, 1023, 1024, 1025, 65535, 65536, 65537, len(data) - 16]
    for n in lengths:
        for start in range(17):
            chunk = view[start:start + n]
            want = zlib.crc32(chunk)
            assert _speedups.crc32(chunk) == want, (start, n)
            assert _speedups._crc32_sw(chunk) == want, (start, n)
    assert _speedups.crc32(b"123456789") == 0xCBF43926
    for fill in (0x00, 0xFF, 0x80, 0x01):
        block = bytes([fill]) * 4096
        assert _speedups.crc32(block) == zlib.crc32(block)


def test_crc32c_chains_and_takes_any_buffer(tmp_path):
    data = random.Random(3).randbytes(100_000)
    whole = _speedups.crc32c(data)
    assert _speedups.crc32c(data[40_000:], _speedups.crc32c(data[:40_000])) == whole
    assert _speedups.crc32c(bytearray(data)) == whole
    path = tmp_path / "x"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert _speedups.crc32c(mm) == whole
    with pytest.raises(TypeError):
        _speedups.crc32c("text")


def test_crc_module_prefers_the_extension(monkeypatch):
    from kdump.format import crc
    calls = []
    monkeypatch.setattr(crc, "_fallback", lambda data, value=0: calls.append(value) or 0)
    with _accel.using(True):
        assert crc.crc32c(b"123456789") == 0xE3069283
    assert not calls
    with _accel.using(False):
        assert crc.crc32c(b"123456789", 7) == 0
    assert calls == [7]


# -- real and generated fixtures --------------------------------------------------------------

def test_fixtures_were_found():
    assert len(REAL_LOGS) > 100


@pytest.mark.parametrize("rel", LOGS)
def test_fixture_segment_identical(rel):
    path = os.path.join(FIXTURES, rel)
    if os.path.getsize(path) == 0:
        both(b"")
        return
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        both(mm)


def _sample_segments(n: int, limit: int = 24 << 10) -> list[bytes]:
    """Heads of some non-empty fixture segments (short, so that they can be mutated often)."""
    rnd = random.Random(11)
    paths = sorted(os.path.join(FIXTURES, p) for p in LOGS)
    paths = [p for p in paths if os.path.getsize(p) > 0]
    rnd.shuffle(paths)
    out = []
    for p in paths[:n]:
        with open(p, "rb") as f:
            out.append(f.read(limit))
    return out


SAMPLES = _sample_segments(40)


def _entry_positions(buf: bytes) -> list[int]:
    with _Path(use_c=False):
        return [b.position for b in Walker(buf)]


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_fixture_cut_everywhere_near_the_batch_edges(index):
    buf = SAMPLES[index]
    positions = _entry_positions(buf) + [len(buf)]
    cuts = set()
    for p in positions[:6] + positions[-2:]:
        for d in (-62, -61, -18, -17, -16, -1, 0, 1, 12, 16, 17, 18, 21, 60, 61, 62, 70):
            if 0 <= p + d <= len(buf):
                cuts.add(p + d)
    for i, cut in enumerate(sorted(cuts)):
        if i % 2:
            both(buf[:cut])
        else:
            both(buf, 0, cut)


# -- hostile edits ----------------------------------------------------------------------------

HOSTILE_I32 = [0, 1, 13, 14, 48, 49, 50, 60, 61, 0x7FFFFFFF, 0x7FFFFFF0, -1, -12, -(1 << 31)]
HOSTILE_I64 = [0, -1, (1 << 63) - 1, -(1 << 63), (1 << 63) - 2, 1 << 40]


def _fix_crc(buf: bytearray, pos: int) -> None:
    """Recompute the CRC of the v2 batch at ``pos`` (if its length is sane)."""
    if pos + 61 > len(buf):
        return
    (size,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + 12 + size
    if size >= 49 and end <= len(buf):
        struct.pack_into(">I", buf, pos + 17, _speedups.crc32c(memoryview(buf)[pos + 21:end]))


@st.composite
def mutations(draw, buf: bytes):
    data = bytearray(buf)
    positions = _entry_positions(buf) or [0]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "byte", "size", "count", "magic", "last_delta", "base_offset",
                                     "base_ts", "max_ts", "attributes", "cut", "base_sequence"]))
        pos = draw(st.sampled_from(positions))
        if kind == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[draw(st.integers(0, len(data))):]
        elif pos + 61 <= len(data):
            if kind == "size":
                struct.pack_into(">i", data, pos + 8, draw(st.sampled_from(HOSTILE_I32)))
            elif kind == "count":
                struct.pack_into(">i", data, pos + 57, draw(st.sampled_from(HOSTILE_I32)))
            elif kind == "magic":
                data[pos + 16] = draw(st.one_of(st.sampled_from([0, 1, 3, 0x82, 0xFF]), st.integers(0, 255)))
            elif kind == "last_delta":
                struct.pack_into(">i", data, pos + 23, draw(st.sampled_from(HOSTILE_I32)))
            elif kind == "base_offset":
                struct.pack_into(">q", data, pos, draw(st.sampled_from(HOSTILE_I64)))
            elif kind == "base_ts":
                struct.pack_into(">q", data, pos + 27, draw(st.sampled_from(HOSTILE_I64)))
            elif kind == "max_ts":
                struct.pack_into(">q", data, pos + 35, draw(st.sampled_from(HOSTILE_I64)))
            elif kind == "attributes":
                struct.pack_into(">h", data, pos + 21, draw(st.sampled_from([0, 8, 0x20, 0x28, -1, 0x7FFF, 5])))
            elif kind == "base_sequence":
                struct.pack_into(">i", data, pos + 53, draw(st.sampled_from(HOSTILE_I32)))
            if draw(st.booleans()):
                _fix_crc(data, pos)
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.data())
def test_mutated_fixtures_identical(data):
    buf = data.draw(st.sampled_from(SAMPLES))
    mutated = data.draw(mutations(buf))
    start = data.draw(st.sampled_from([0, 0, 0, 1, 17, -5]))
    end = data.draw(st.sampled_from([None, None, len(mutated) // 2, len(mutated) + 100, 0]))
    both(mutated, start, end)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(-3, 80), st.one_of(st.none(), st.integers(-5, 500)))
def test_random_bytes_identical(buf, start, end):
    both(buf, start, end)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.binary(max_size=30)), max_size=6), st.integers(0, 255))
def test_random_headers_identical(parts, magic):
    """Entries whose head looks right (magic 2, plausible size) around random bodies."""
    out = bytearray()
    for kind, body in parts:
        if kind == 0:
            body = body.ljust(45, b"\0")            # a v2-sized entry: 61 bytes in all
        size = 4 + 1 + len(body) + (3 if kind == 2 else 0)   # kind 2 claims more than there is
        out += struct.pack(">qii", 5, size, -1) + bytes((2 if kind != 1 else magic,)) + body
    both(bytes(out))


# -- generated batches ------------------------------------------------------------------------

_small_bytes = st.one_of(st.none(), st.binary(max_size=20), st.binary(min_size=120, max_size=300))
_headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=10))), max_size=3)
_records = st.lists(st.tuples(st.integers(-1 << 40, 1 << 40), _small_bytes, _small_bytes, _headers),
                    min_size=0, max_size=12)


@st.composite
def v2_batches(draw):
    recs = draw(_records)
    deltas = draw(st.sampled_from(["index", "gaps", "wild"]))
    items = []
    for i, (ts, key, value, headers) in enumerate(recs):
        if deltas == "index":
            delta = i
        elif deltas == "gaps":
            delta = i * 3 + 1
        else:
            delta = draw(st.integers(-(1 << 31), (1 << 31) - 1))
        items.append((delta, ts, key, value, headers))
    codec = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 4]))
    base_sequence = draw(st.sampled_from([-1, 0, 5, (1 << 31) - 1, (1 << 31) - 3]))
    return build_v2_batch(
        items, base_offset=draw(st.sampled_from([0, 1000, (1 << 62), (1 << 63) - 20, -(1 << 63)])),
        codec=codec, timestamp_type=draw(st.integers(0, 1)),
        max_timestamp=draw(st.one_of(st.none(), st.sampled_from([0, -1, (1 << 63) - 1]))),
        producer_id=draw(st.sampled_from([-1, 7, (1 << 63) - 1])), producer_epoch=draw(st.sampled_from([-1, 3])),
        base_sequence=base_sequence, is_transactional=draw(st.booleans()),
        partition_leader_epoch=draw(st.sampled_from([-1, 0, 12])),
        records_count=draw(st.one_of(st.none(), st.none(), st.sampled_from([-1, 0, 1, (1 << 31) - 1]))))


@st.composite
def segments(draw):
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["v2", "v2", "v2", "legacy", "junk"]))
        if kind == "v2":
            parts.append(draw(v2_batches()))
        elif kind == "legacy":
            magic = draw(st.integers(0, 1))
            parts.append(build_legacy_message(draw(st.integers(0, 1 << 40)), draw(_small_bytes),
                                              draw(_small_bytes), magic=magic, timestamp=5))
        else:
            parts.append(draw(st.binary(max_size=40)))
    return b"".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(segments())
def test_generated_segments_identical(buf):
    both(buf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.data())
def test_generated_segments_mutated_identical(data):
    buf = data.draw(segments())
    assume(buf)
    both(data.draw(mutations(buf)))


def test_kafka_python_built_segment_identical():
    builder_mod = pytest.importorskip("kafka.record.default_records")
    rnd = random.Random(5)
    out = bytearray()
    offset = 0
    for i in range(300):
        b = builder_mod.DefaultRecordBatchBuilder(2, 0, i % 7 == 0, 1000 + i % 3, 0, i, 1 << 20)
        n = rnd.randrange(1, 20)
        for j in range(n):
            headers = [("h", rnd.randbytes(3))] if j % 4 == 0 else []
            key = None if j % 3 else rnd.randbytes(rnd.randrange(0, 10))
            b.append(j, 1_700_000_000_000 + rnd.randrange(-1000, 1000), key, rnd.randbytes(rnd.randrange(0, 300)),
                     headers)
        data = b.build()
        struct.pack_into(">q", data, 0, offset)
        offset += n
        out += data
    steps, stop, _, trailing, decoded = both(bytes(out))
    assert len(steps) == 300 and stop == strict(None) and trailing == 0
    assert all(d[0] == "list" for d in decoded)


def test_big_segment_spans_many_scan_chunks():
    batch = build_v2_batch([(0, 1000, None, b"v" * 50)])
    buf = bytearray()
    for i in range(2000):
        buf += struct.pack(">q", i) + batch[8:]
    buf += build_legacy_message(2000, None, b"x", magic=1, timestamp=3)
    for i in range(700):
        buf += struct.pack(">q", 2001 + i) + batch[8:]
    buf += b"\0" * 10
    steps, stop, _, trailing, _ = both(bytes(buf))
    assert len(steps) == 2701 and trailing == 10 and stop[0] == "Finding"


def test_walker_stop_position_while_iterating():
    batch = build_v2_batch([(0, 1000, None, b"v")])
    buf = batch * 600
    with _Path(use_c=True):
        w = Walker(buf)
        it = iter(w)
        for i in range(300):
            b = next(it)
            assert w.stop_position == b.position + b.size == (i + 1) * len(batch)
        it.close()


# -- scan_v2 against its own definition -------------------------------------------------------

def ref_scan(buf, pos: int, end: int, max_batches: int):
    """What scan_v2 must do, in Python (parse_v2 for each batch it takes)."""
    end = min(end, len(buf))
    out = []
    while len(out) < max_batches and pos >= 0 and end - pos > 17:
        if buf[pos + 16] != 2:
            break
        (size,) = struct.unpack_from(">i", buf, pos + 8)
        if size + 12 < 61 or pos + 12 + size > end:
            break
        batch = parse_v2(buf, pos)
        if not INT64[0] <= batch.last_offset <= INT64[1]:
            break
        out.append(batch)
        pos += 12 + size
    return out, pos


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.data())
def test_scan_v2_matches_its_definition(data):
    buf = data.draw(st.one_of(segments(), st.binary(max_size=200)))
    if buf and data.draw(st.booleans()):
        buf = data.draw(mutations(buf))
    pos = data.draw(st.integers(-2, len(buf) + 2))
    end = data.draw(st.integers(-2, len(buf) + 50))
    max_batches = data.draw(st.integers(0, 5))
    got, new_pos = _speedups.scan_v2(buf, pos, end, max_batches)
    want, want_pos = ref_scan(buf, pos, end, max_batches)
    assert strict(got) == strict(want) and new_pos == want_pos
    assert all(type(b) is Batch for b in got)


def test_scan_v2_batches_are_real_batches():
    buf = build_v2_batch([(0, 5, b"k", b"v"), (1, 6, None, None)], base_offset=10, timestamp_type=1,
                         max_timestamp=99, is_transactional=True)
    (batch,), pos = _speedups.scan_v2(buf, 0, len(buf), 10)
    assert pos == len(buf) and batch == parse_v2(buf, 0)
    assert batch.crc_valid is True and batch.is_transactional and batch.timestamp_type == 1
    assert batch.last_offset == 11 and batch.next_position == len(buf) and batch._fields == Batch._fields
    assert hash(batch) == hash(tuple(batch)) and batch.to_dict() == parse_v2(buf, 0).to_dict()


def test_scan_v2_refuses_what_is_not_a_buffer():
    assert _speedups.scan_v2("not a buffer", 0, 100, 5) == ([], 0)


# -- decode_v2_records against decode_v2_payload ----------------------------------------------

def _fake_batch(count, base_offset, base_ts, log_append, base_seq, max_ts):
    attributes = 0x08 if log_append else 0
    return Batch(0, base_offset, base_offset, count, 61, 2, 0, True, attributes, -1, base_ts, max_ts, -1, -1,
                 base_seq)


def _needs_big_ints(recs, base_offset, base_ts, log_append, base_seq) -> bool:
    def out(v):
        return not INT64[0] <= v <= INT64[1]
    for r in recs:
        if out(r.offset):
            return True
        if not log_append and (out(r.timestamp) or out(r.timestamp - base_ts)):
            return True
        if base_seq >= 0 and out(base_seq + r.offset - base_offset):
            return True
    return False


def check_decode(payload, count, base_offset, base_ts, log_append, base_seq, max_ts=123):
    batch = _fake_batch(count, base_offset, base_ts, log_append, base_seq, max_ts)
    fast = _speedups.decode_v2_records(payload, base_offset, base_ts, max_ts if log_append else None,
                                       base_seq, count)
    # kdump's own call hands the batch: C picks the same fields from it
    assert repr(_speedups.decode_v2_records(payload, batch)) == repr(fast)
    with _Path(use_c=False):
        try:
            pure = records_mod.decode_v2_payload(payload, batch)
        except Exception as e:  # noqa: BLE001
            pure = e
    if isinstance(pure, Exception):
        assert fast is None, pure
    elif fast is None:
        assert _needs_big_ints(pure, base_offset, base_ts, log_append, base_seq)
    else:
        assert strict(fast) == strict(pure)
        assert all(type(r) is Record for r in fast)
    return fast, pure


_ints64 = st.one_of(st.integers(-1000, 1000), st.sampled_from([INT64[0], INT64[1], INT64[1] - 5, -(1 << 62)]))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([-1, 0, 1, 2, 3, 7, (1 << 31) - 1]), _ints64, _ints64,
       st.booleans(), st.sampled_from([-1, 0, 1, (1 << 31) - 1]))
def test_decode_random_payloads(payload, count, base_offset, base_ts, log_append, base_seq):
    check_decode(payload, count, base_offset, base_ts, log_append, base_seq)


_varint_values = st.one_of(st.integers(-3, 300), st.sampled_from(
    [-(1 << 31), (1 << 31) - 1, -(1 << 63), (1 << 63) - 1, 1 << 63, -(1 << 63) - 1, 1 << 69, -(1 << 69)]))


def _zigzag(v: int) -> bytes:
    """Zigzag varint of any Python int (more than 10 bytes for values beyond 64 bits)."""
    return encode_uvarint(v << 1 if v >= 0 else ((-v) << 1) - 1)


@st.composite
def record_fields(draw):
    """A record built field by field, with hostile values and lengths that may lie."""
    ts_delta = draw(_varint_values)
    off_delta = draw(st.one_of(st.integers(-3, 300), st.sampled_from([-(1 << 31), (1 << 31) - 1, 1 << 31])))
    key = draw(_small_bytes)
    value = draw(_small_bytes)
    body = bytearray(b"\0" + _zigzag(ts_delta) + _zigzag(off_delta))
    klen = -1 if key is None else len(key) + draw(st.sampled_from([0, 0, 0, 1, -1, -5]))
    body += _zigzag(klen) + (key or b"")
    vlen = -1 if value is None else len(value) + draw(st.sampled_from([0, 0, 0, 1, -1]))
    body += _zigzag(vlen) + (value or b"")
    headers = draw(_headers)
    hcount = len(headers) + draw(st.sampled_from([0, 0, 0, 1, -1, -len(headers) - 1]))
    body += _zigzag(hcount)
    for hk, hv in headers:
        hk = hk.encode()
        body += _zigzag(len(hk) if draw(st.integers(0, 9)) else -1) + hk
        body += _zigzag(-1 if hv is None else len(hv)) + (hv or b"")
    if draw(st.integers(0, 9)) == 0:
        body += b"\x80" * draw(st.integers(1, 11))     # an overlong varint
    length = len(body) + draw(st.sampled_from([0, 0, 0, 0, 1, -1, 1000, -(1 << 31)]))
    return _zigzag(length) + bytes(body)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_fields(), max_size=5), st.sampled_from([0, 0, 1, -1, 2]), _ints64, _ints64, st.booleans(),
       st.sampled_from([-1, 0, 1, (1 << 31) - 1, INT64[1] - 3]), st.binary(max_size=3))
def test_decode_hostile_records(recs, count_shift, base_offset, base_ts, log_append, base_seq, tail):
    payload = b"".join(recs) + (tail if count_shift == 2 else b"")
    check_decode(payload, max(len(recs) + (count_shift if count_shift != 2 else 0), -1),
                 base_offset, base_ts, log_append, base_seq)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-1 << 40, 1 << 40), st.integers(-(1 << 31), (1 << 31) - 1), _small_bytes,
                          _small_bytes, _headers), max_size=10),
       st.booleans(), st.sampled_from([-1, 0, (1 << 31) - 2]))
def test_decode_well_formed_records(items, log_append, base_seq):
    payload = b"".join(encode_v2_record(off, ts, key, value, headers) for ts, off, key, value, headers in items)
    fast, _ = check_decode(payload, len(items), 1 << 40, 1_700_000_000_000, log_append, base_seq)
    assert fast is not None


def test_decode_shares_the_empty_headers_tuple():
    payload = encode_v2_record(0, 0, b"k", b"v") + encode_v2_record(1, 0, None, None)
    recs = _speedups.decode_v2_records(payload, 0, 0, None, -1, 2)
    assert recs[0].headers is recs[1].headers
    assert recs[0].headers == ()
    assert recs[1].key is None and recs[1].value is None and recs[1].control is None and recs[1].magic == 2


@pytest.mark.parametrize("args", [
    (b"", 0, 0, None, -1, -1),
    (b"", 0, 0, None, -1, (1 << 31) - 1),
    (b"\x00", 0, 0, None, -1, 0),               # leftover bytes
    (b"", 1 << 70, 0, None, -1, 0),             # not an int64: Python's business
    (b"", "0", 0, None, -1, 0),
    (b"", 0, 0, "x", -1, 0),
    ("text", 0, 0, None, -1, 0),
])
def test_decode_returns_none_rather_than_raising(args):
    assert _speedups.decode_v2_records(*args) is None


def test_decode_empty_payload_no_records():
    assert _speedups.decode_v2_records(b"", 0, 0, None, -1, 0) == []


def test_init_checks_its_classes():
    with pytest.raises(TypeError):
        _speedups.init(tuple, Record)
    with pytest.raises(TypeError):
        _speedups.init(Batch, dict)
    _speedups.init(Batch, Record)


def test_the_c_field_order_is_the_models():
    """C reads and builds Batch and Record by position (speedups.h BF_*/RF_*): its names, in its
    order, are the model's, and init() refuses a class whose fields are the same but reordered."""
    from collections import namedtuple

    from kdump import model

    assert _speedups.BATCH_FIELD_NAMES == Batch._fields
    assert _speedups.RECORD_FIELD_NAMES == Record._fields
    assert [getattr(model, "B_" + name.upper()) for name in Batch._fields] == list(range(len(Batch._fields)))
    swapped = list(Batch._fields)
    swapped[1], swapped[2] = swapped[2], swapped[1]
    with pytest.raises(TypeError, match="fields"):
        _speedups.init(namedtuple("Batch", swapped), Record)
    with pytest.raises(TypeError, match="fields"):
        _speedups.init(Batch, namedtuple("Record", list(Record._fields)[::-1]))
    _speedups.init(Batch, Record)


# -- decode_legacy_set: the inner message sets of v0/v1 wrappers --------------------------------

@st.composite
def legacy_wrappers(draw):
    """A gzip wrapper whose inner set is well-formed, then perhaps damaged before compression."""
    magic = draw(st.integers(0, 1))
    n = draw(st.integers(1, 5))
    first = draw(st.sampled_from([0, 7, 1 << 40, (1 << 63) - 10]))
    inner = []
    for i in range(n):
        stored = first + i if magic == 0 else i * draw(st.sampled_from([1, 1, 2]))
        inner_magic = draw(st.sampled_from([magic, magic, magic, 1 - magic]))
        inner.append(build_legacy_message(stored, draw(_small_bytes), draw(_small_bytes), magic=inner_magic,
                                          timestamp=draw(st.sampled_from([-1, 0, 5, (1 << 63) - 1])),
                                          timestamp_type=draw(st.integers(0, 1)),
                                          codec=draw(st.sampled_from([0, 0, 0, 0, 1]))))
    data = bytearray(b"".join(inner))
    for _ in range(draw(st.integers(0, 3))):
        what = draw(st.sampled_from(["flip", "cut", "junk", "size"]))
        if what == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif what == "cut":
            del data[draw(st.integers(0, len(data))):]
        elif what == "junk":
            data += draw(st.binary(max_size=20))
        elif what == "size" and len(data) >= 12:
            data[8:12] = struct.pack(">i", draw(st.sampled_from([-1, 0, 13, 14, 22, 1 << 30])))
    wrapper_offset = draw(st.sampled_from([0, 3, first + n - 1, (1 << 63) - 1]))
    return build_legacy_wrapper([bytes(data)], magic=magic, codec=1, wrapper_offset=wrapper_offset,
                                timestamp=draw(st.sampled_from([-1, 99])), timestamp_type=draw(st.integers(0, 1)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(legacy_wrappers())
def test_legacy_inner_sets_identical(buf):
    both(buf)


def test_legacy_inner_set_is_decoded_in_c():
    inner = [(10 + i, 1000 + i, b"k%d" % i, None if i == 2 else b"v" * i) for i in range(4)]
    buf = build_legacy_wrapper(inner, magic=1, codec=1)
    data = legacy.decompress(1, legacy.Message(buf, 12, len(buf)).value, 1)
    got = _speedups.decode_legacy_set(data, 13, 1, None)
    assert strict(got) == both(buf)[4][0] and [r.offset for r in got] == [10, 11, 12, 13]
    assert [type(r) for r in got] == [Record] * 4 and got[2].value is None
    assert [r.timestamp_type for r in _speedups.decode_legacy_set(data, 13, 1, 77)] == [1] * 4
    assert _speedups.decode_legacy_set(data, 2, 1, None) is None       # wrapper offset below the last relative
    assert _speedups.decode_legacy_set(data[:-1], 13, 1, None) is None
    assert _speedups.decode_legacy_set(b"", 13, 1, None) is None
    assert _speedups.decode_legacy_set(data, 13, 2, None) is None
    assert _speedups.decode_legacy_set(data, 1 << 64, 1, None) is None


# -- decode_v2_span: a batch decoded a slice of records at a time --------------------------------

def check_span(payload, count, base_offset, base_ts, log_append, base_seq, takes, max_ts=123):
    """Slices of ``takes`` records (C, then the Python reference) give what one decode of the
    whole payload gives, or fail where it fails."""
    batch = _fake_batch(count, base_offset, base_ts, log_append, base_seq, max_ts)
    with _Path(use_c=False):
        try:
            whole = records_mod.decode_v2_payload(payload, batch)
        except Exception as e:  # noqa: BLE001
            whole = e
    for use_c in (True, False):
        got, pos, n, failed = [], 0, 0, None
        with _Path(use_c=use_c):
            try:
                for take in takes:
                    take = min(take, max(count - n, 0))
                    recs, pos = records_mod.decode_v2_span(payload, pos, batch, n, take)
                    got += recs
                    n += take
                    if n >= count:
                        break
            except Exception as e:  # noqa: BLE001
                failed = e
        if n < count and failed is None:
            continue        # the takes did not cover the batch
        if isinstance(whole, Exception):
            assert failed is not None and type(failed) is type(whole) and failed.message == whole.message
        else:
            assert failed is None, failed
            assert strict(got) == strict(whole)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_fields(), max_size=6), st.sampled_from([0, 0, 1, -1]), _ints64, _ints64, st.booleans(),
       st.sampled_from([-1, 0, (1 << 31) - 1]), st.lists(st.integers(0, 4), min_size=1, max_size=8))
def test_span_hostile_records(recs, count_shift, base_offset, base_ts, log_append, base_seq, takes):
    check_span(b"".join(recs), max(len(recs) + count_shift, 0), base_offset, base_ts, log_append, base_seq,
               takes + [1 << 20])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1 << 40, 1 << 40), st.integers(-(1 << 31), (1 << 31) - 1), st.binary(max_size=9),
                          st.one_of(st.none(), st.binary(max_size=30)),
                          st.lists(st.tuples(st.binary(max_size=5).map(lambda b: b.decode("latin-1")),
                                             st.one_of(st.none(), st.binary(max_size=8))), max_size=3)),
                max_size=12),
       st.lists(st.integers(1, 5), min_size=1, max_size=12))
def test_span_well_formed_records_any_bytes(items, takes):
    """Keys, values and headers drawn from all 256 byte values."""
    payload = b"".join(encode_v2_record(off, ts, key, value, headers) for ts, off, key, value, headers in items)
    check_span(payload, len(items), 1 << 40, 1_700_000_000_000, False, 0, takes + [1 << 20])


def test_record_slices_of_a_record_count_bomb_stay_small():
    """A zstd batch of 100,000 empty records comes in slices of RECORDS_SLICE, never one list."""
    from kdump.encode import build_record_count_bomb
    from kdump.format.walk import record_slices

    data = build_record_count_bomb(100_000)
    batch = next(iter(Walker(data)))
    sizes = [len(s) for s in record_slices(data, batch)]
    assert sum(sizes) == 100_000 and max(sizes) == records_mod.RECORDS_SLICE


@pytest.mark.parametrize("last_relative, wrapper_offset", [(-(1 << 63), (1 << 63) - 1), (-2, (1 << 63) - 1),
                                                            (-(1 << 62), (1 << 62) + 5), (-1, 5)])
def test_legacy_base_beyond_int64_is_decided_by_python(last_relative, wrapper_offset):
    """``wrapper_offset - last_inner`` in legacy.c had no overflow check
    (undefined behaviour in C; the last record's checked addition happened to catch it)."""
    inner = b"".join(build_legacy_message(relative, b"k", b"v", magic=1, timestamp=5) for relative in (0, last_relative))  # noqa: E501
    buf = build_legacy_wrapper([inner], magic=1, codec=1, wrapper_offset=wrapper_offset)
    pure = both(buf)
    if wrapper_offset - last_relative > INT64[1]:
        data = legacy.decompress(1, legacy.Message(buf, 12, len(buf)).value, 1)
        assert _speedups.decode_legacy_set(data, wrapper_offset, 1, None) is None
    assert pure[4]
