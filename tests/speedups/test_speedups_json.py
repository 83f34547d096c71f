"""``_speedups.json_batch_line`` (the C NDJSON writer) against the Python writer (``kdump.export.ndjson``).

For a plain view (no decoders) the C function must return exactly the line
``ndjson.py_batch_line`` writes, for base64, hex and utf8, or None when it leaves the
line to Python (control records, a batch without a base offset, anything not an exact int
within int64 or exact bytes). Inputs: every batch of every fixture segment, hypothesis
records with arbitrary keys, values and headers, every short UTF-8 sequence (valid or
not), and whole ``kdump dump --json`` runs with and without the C writer.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel  # noqa: E402

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)


from kdump.decoders.views import PayloadView  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.export import ndjson  # noqa: E402
from kdump.format.walk import Walker, decode_records  # noqa: E402
from kdump.model import Batch, Control, Record  # noqa: E402
from support.damage import FIXTURES, run_kdump  # noqa: E402
from support.run import fixture_logs  # noqa: E402

ENCODINGS = {"base64": 0, "hex": 1, "utf8": 2}
VIEWS = {name: PayloadView(name) for name in ENCODINGS}
INT64 = (-(1 << 63), (1 << 63) - 1)
FILE_JSONS = [ndjson.dumps("fixtures/x/00000000000000000000.log"), ndjson.dumps("/tmp/ünï cödé/日本/0.log"),
              ndjson.dumps('a "quoted" \\ path\n\x01'), "null"]




LOGS = fixture_logs()


def _int64(x) -> bool:
    return type(x) is int and INT64[0] <= x <= INT64[1]


def c_writes(batch, records) -> bool:
    """Whether the C writer must take this line (else it must answer None)."""
    if not all(_int64(v) for i, v in enumerate(batch) if i != 7) or batch[5] not in (0, 1, 2) \
            or type(batch[7]) is not bool:
        return False
    for r in records or ():
        if not (_int64(r.offset) and _int64(r.timestamp) and _int64(r.sequence) and _int64(r.magic)
                and 0 <= r.magic <= 2 and r.control is None):
            return False
        if r.magic < 2 and not (_int64(r.crc) and type(r.crc_valid) is bool):
            return False
        if any(type(x) is not bytes for x in (r.key, r.value) if x is not None):
            return False
        for h in r.headers:
            if type(h) is not tuple or len(h) != 2 or type(h[0]) is not bytes \
                    or (h[1] is not None and type(h[1]) is not bytes):
                return False
    return True


def check(file_json, batch, records, encoding: str, expect_c: bool | None = None) -> str:
    want = ndjson.py_batch_line(file_json, batch, records, VIEWS[encoding])
    got = _speedups.json_batch_line(file_json, batch, records, ENCODINGS[encoding])
    if expect_c is None:
        expect_c = c_writes(batch, records)
    if expect_c:
        assert got == want
        assert type(got) is str
    else:
        assert got is None
    return want


# -- every fixture batch -----------------------------------------------------------------------

@pytest.mark.parametrize("name", LOGS)
def test_fixture_lines_are_identical(name):
    buf = (FIXTURES / name).read_bytes()
    file_json = ndjson.dumps(str(FIXTURES / name))
    for batch in Walker(buf):
        try:
            records = decode_records(buf, batch)
        except KdumpError:
            records = None
        for encoding in ENCODINGS:
            line = check(file_json, batch, records, encoding)
            if batch.base_offset is not None and all(r.control is None for r in records or ()):
                assert _speedups.json_batch_line(file_json, batch, records, ENCODINGS[encoding]) is not None
            json.loads(line)
        check(file_json, batch, None, "base64")
    # The other spellings of the file member, on the first few batches.
    for batch in list(Walker(buf))[:3]:
        try:
            records = decode_records(buf, batch)
        except KdumpError:
            records = None
        for fj in FILE_JSONS:
            check(fj, batch, records, "utf8")


def test_the_c_writer_takes_most_fixture_lines():
    taken = total = 0
    for name in LOGS:
        buf = (FIXTURES / name).read_bytes()
        for batch in Walker(buf):
            total += 1
            try:
                records = decode_records(buf, batch)
            except KdumpError:
                records = None
            taken += _speedups.json_batch_line("null", batch, records, 0) is not None
    assert taken > total // 2, (taken, total)


def test_legacy_lines_are_written_in_c_control_lines_left_to_python():
    for magic, attributes in ((0, 0), (1, 0), (1, 0x08), (1, 0x7F), (0, 0x7A)):
        legacy = Batch(0, 5, 5, 1, 40, magic, 123, True, attributes, -1, 7, 7, -1, -1, -1)
        old = Record(5, 7, 0, b"k", b"v", (), -1, None, magic, 99, False)
        check("null", legacy, None, "base64", True)
        check("null", legacy, [old, old._replace(crc_valid=True)], "hex", True)
    # a wrapper whose inner set could not be read has no base offset: Python writes it
    assert _speedups.json_batch_line("null", Batch(0, None, 5, None, 40, 1, 1, True, 1, -1, 7, 7, -1, -1, -1),
                                     None, 0) is None
    v2 = Batch(0, 5, 5, 1, 80, 2, 123, True, 0x20, 3, 7, 7, 9, 1, -1)
    ctl = Record(5, 7, 0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x01", (), -1, Control(1, 0, 1))
    assert _speedups.json_batch_line("null", v2, [ctl], 0) is None
    old = Record(5, 7, 0, b"k", b"v", (), -1, None, 1, 99, True)
    for bad in (old._replace(crc=None), old._replace(crc=1 << 64), old._replace(crc_valid=1),
                old._replace(magic=3), old._replace(magic=-1)):
        assert _speedups.json_batch_line("null", v2, [bad], 0) is None, bad
    check("null", v2, [old], "utf8", True)
    assert _speedups.json_batch_line("null", v2, None, 0) is not None


def test_unusual_values_are_left_to_python():
    good = Batch(0, 5, 5, 1, 80, 2, 123, True, 0, 3, 7, 7, 9, 1, -1)
    rec = Record(5, 7, 0, b"k", b"v", ((b"h", b"x"),), 3)
    assert _speedups.json_batch_line("null", good, [rec], 0) == check("null", good, [rec], "base64", True)
    for i, bad in ((1, 1 << 63), (3, True), (9, -(1 << 64)), (5, 3), (7, 1), (12, 2.5), (1, None)):
        fields = list(good)
        fields[i] = bad
        assert _speedups.json_batch_line("null", Batch(*fields), [rec], 0) is None, (i, bad)
    for r in (rec._replace(key=bytearray(b"k")), rec._replace(value=memoryview(b"v")),
              rec._replace(headers=((b"h", b"x", b"y"),)), rec._replace(headers=[[b"h", b"x"]]),
              rec._replace(headers=((b"h", "x"),)), rec._replace(headers=(("h", b"x"),)),
              rec._replace(offset=1 << 64), rec._replace(sequence=False), rec._replace(magic=0),
              rec._replace(magic=3)):
        assert _speedups.json_batch_line("null", good, [r], 0) is None, r
        assert _speedups.json_batch_line("null", good, [rec, r], 2) is None, r
    # Headers as a list, records as a tuple: written as Python writes them.
    check("null", good, (rec._replace(headers=[(b"a", None), (b"b", b"")]),), "hex", True)
    assert _speedups.json_batch_line("null", good, "not records", 0) is None
    assert _speedups.json_batch_line(b"null", good, None, 0) is None
    assert _speedups.json_batch_line("null", good, None, 3) is None
    assert _speedups.json_batch_line("null", good, None, -1) is None
    assert _speedups.json_batch_line("null", tuple(good)[:14], None, 0) is None
    with pytest.raises(TypeError):
        _speedups.json_batch_line("null", good, None)
    with pytest.raises(TypeError):
        _speedups.json_batch_line("null", good, None, "base64")


# -- hypothesis records ------------------------------------------------------------------------

_payload = st.one_of(st.none(), st.binary(max_size=40),
                     st.text(max_size=12).map(lambda s: s.encode("utf-8", "surrogatepass")),
                     st.sampled_from([b"", b"\x00", b'"\\', b"\x7f\x80\xff", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80",
                                      b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xc0\xaf", b"\t\n\r\x08\x0c\x1f"]))
_i64 = st.one_of(st.integers(*INT64), st.sampled_from([0, -1, INT64[0], INT64[1]]))
_record = st.one_of(st.builds(
    lambda offset, ts, key, value, headers, seq: Record(offset, ts, 0, key, value, tuple(headers), seq),
    _i64, _i64, _payload, _payload,
    st.lists(st.tuples(_payload.map(lambda b: b if b is not None else b"k"), _payload), max_size=4), _i64),
    st.builds(lambda offset, ts, key, value, magic, crc, ok: Record(offset, ts, magic - 1, key, value, (), -1, None,
                                                                    magic, crc, ok),
              _i64, _i64, _payload, _payload, st.integers(0, 1), st.integers(0, (1 << 32) - 1), st.booleans()))
_batch = st.builds(
    lambda pos, base, delta, count, size, magic, crc, ok, attributes, epoch, bts, mts, pid, pepoch, seq:
        Batch(pos, base, base + delta, count, size, magic, crc, ok, attributes, epoch, bts, mts, pid, pepoch, seq),
    st.integers(0, 1 << 40), st.integers(-(1 << 62), 1 << 62), st.integers(-(1 << 31), (1 << 31) - 1),
    st.integers(-(1 << 31), (1 << 31) - 1), st.integers(26, 1 << 31), st.sampled_from([2, 2, 1, 0]),
    st.integers(0, (1 << 32) - 1), st.booleans(),
    st.integers(-(1 << 15), (1 << 15) - 1), st.integers(-(1 << 31), (1 << 31) - 1), _i64, _i64, _i64,
    st.integers(-(1 << 15), (1 << 15) - 1), st.integers(-(1 << 31), (1 << 31) - 1))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batch, st.one_of(st.none(), st.lists(_record, max_size=5)), st.sampled_from(list(ENCODINGS)),
       st.sampled_from(FILE_JSONS))
def test_generated_lines_are_identical(batch, records, encoding, file_json):
    line = check(file_json, batch, records, encoding, True)
    obj = json.loads(line)
    assert obj["position"] == batch.position and len(obj.get("records", ())) == len(records or ())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_utf8_matches_python_on_any_bytes(data):
    rec = Record(0, 0, 0, data, data + b"A", ((data, data),), -1)
    batch = Batch(0, 0, 0, 1, 80, 2, 0, True, 0, 0, 0, 0, -1, -1, -1)
    line = check("null", batch, [rec], "utf8", True)
    assert json.loads(line)["records"][0]["key"] == data.decode("utf-8", "replace")


def _utf8_samples():
    """Every 1- and 2-byte sequence, and 3/4-byte ones around every boundary of UTF-8."""
    edge = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF,
            0xF0, 0xF4, 0xF5, 0xFF]
    out = [bytes([a]) for a in range(256)]
    out += [bytes([a, b]) for a in range(256) for b in range(256)]
    out += [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in range(256) for c in edge]
    out += [bytes([a, b, c, d]) for a in range(0xF0, 0xF8) for b in edge + [0x81, 0xA5] for c in edge for d in edge]
    return out


def test_utf8_every_short_sequence():
    batch = Batch(0, 0, 0, 1, 80, 2, 0, True, 0, 0, 0, 0, -1, -1, -1)
    samples = _utf8_samples()
    for i in range(0, len(samples), 2000):
        chunk = samples[i:i + 2000]
        # each sample as its own header key (decoded alone) and, followed by "A", as a value
        rec = Record(0, 0, 0, None, None, tuple((s, s + b"A") for s in chunk), -1)
        got = _speedups.json_batch_line("null", batch, [rec], 2)
        assert got == ndjson.py_batch_line("null", batch, [rec], VIEWS["utf8"])
    for s in samples[::97]:
        assert _speedups.json_batch_line("null", batch, [Record(0, 0, 0, s, None, (), -1)], 2) == \
            ndjson.py_batch_line("null", batch, [Record(0, 0, 0, s, None, (), -1)], VIEWS["utf8"])
        k = json.loads(_speedups.json_batch_line("null", batch, [Record(0, 0, 0, s, None, (), -1)], 2))
        assert encode_basestring_ascii(k["records"][0]["key"]) == encode_basestring_ascii(s.decode("utf-8", "replace"))


def test_large_payloads_and_many_records():
    batch = Batch(0, 0, 999, 1000, 80, 2, 0, False, 0, 0, 0, 0, -1, -1, -1)
    big = bytes(range(256)) * 40_000      # ~10 MB: the buffer grows, then is let go
    recs = [Record(i, i, 0, b"k%d" % i, big if i == 3 else b"v" * (i % 50), (), i) for i in range(1000)]
    for encoding in ENCODINGS:
        check("null", batch, recs, encoding, True)
    check("null", batch, recs[:2], "hex", True)


# -- whole dumps -----------------------------------------------------------------------------

def _Writer(use_c: bool):
    """jsonout's C writer (and the walker's C functions) switched on or off."""
    return _accel.using(use_c)


@pytest.mark.parametrize("args", [
    ["--records", "--data", "--encoding", "base64"],
    ["--records", "--data", "--encoding", "hex"],
    ["--records", "--data", "--encoding", "utf8"],
    ["--records", "--data", "--encoding", "utf8", "--no-auto-decode"],
    [],
    ["--records", "--data", "--value-decoder", "json"],
    ["--records", "--start-offset", "3", "--end-offset", "40"],
])
def test_dump_json_identical_with_and_without_c(args):
    cmd = ["dump", str(FIXTURES), "--json", *args]
    with _Writer(use_c=False):
        pure = run_kdump(*cmd)
    with _Writer(use_c=True):
        fast = run_kdump(*cmd)
    assert (fast.code, fast.out, fast.err) == (pure.code, pure.out, pure.err)
    assert fast.out.count("\n") > 100


# -- json_records: a batch written a slice of records at a time ----------------------------------

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record, max_size=6), st.sampled_from(list(ENCODINGS)))
def test_json_records_is_the_records_member_of_the_line(records, encoding):
    """json_records gives the members of the line's "records" array (what render/dump.py's
    streamed batch writes slice after slice), or None exactly where json_batch_line does."""
    got = _speedups.json_records(records, ENCODINGS[encoding])
    batch = Batch(0, 0, 0, len(records), 61, 2, 0, True, 0, 0, 0, 0, -1, -1, -1)
    if not c_writes(batch, records):
        assert got is None
        return
    want = ndjson.records_json(records, VIEWS[encoding])
    assert '"records":[' + got + "]" == want
    assert got.isascii()


def test_a_streamed_batch_is_the_same_line_as_a_whole_one(tmp_path):
    """A batch of more records than one slice (RECORDS_SLICE) is written slice by slice; the
    line is the one the Python writer makes of the whole batch, keys, values and headers
    drawn from all 256 byte values."""
    from kdump.encode import build_v2_batch
    from kdump.format.records import RECORDS_SLICE
    from support.run import write_segment

    rng = __import__("random").Random(7)
    recs = [(i, 1_700_000_000_000 + i, bytes(rng.randrange(256) for _ in range(rng.randrange(6))),
             bytes(rng.randrange(256) for _ in range(rng.randrange(12))),
             [(bytes(rng.randrange(256) for _ in range(3)).decode("latin-1"), bytes([i % 256]))])
            for i in range(RECORDS_SLICE * 2 + 5)]
    seg = write_segment(tmp_path / "t-0", [build_v2_batch(recs, codec=4)])
    data = seg.read_bytes()
    batch = next(iter(Walker(data)))
    whole = decode_records(data, batch)
    for encoding in ENCODINGS:
        r = run_kdump("dump", "--records", "--data", "--json", "--encoding", encoding, "-q", seg)
        assert r.code == 0, r.err
        want = ndjson.py_batch_line(ndjson.dumps(str(seg)), batch, whole, VIEWS[encoding])
        assert r.out == want + "\n"


# -- json_v2_line: the line written straight from an uncompressed v2 records section ------------

def _v2_section(items, base_offset=1 << 40, gap_at=None):
    from kdump.encode import encode_v2_record

    out = []
    for i, (ts, key, value, headers) in enumerate(items):
        delta = i + (3 if gap_at is not None and i >= gap_at else 0)
        out.append(encode_v2_record(delta, ts, key, value, headers))
    return b"".join(out)


_hdr = st.lists(st.tuples(st.binary(max_size=6).map(lambda b: b.decode("latin-1")),
                          st.one_of(st.none(), st.binary(max_size=12))), max_size=3)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(-(1 << 40), 1 << 40), st.one_of(st.none(), st.binary(max_size=20)),
                          st.one_of(st.none(), st.binary(max_size=60)), _hdr), max_size=8),
       st.sampled_from(list(ENCODINGS)), st.booleans(), st.sampled_from([-1, 0, (1 << 31) - 2]),
       st.one_of(st.none(), st.integers(1, 7)), st.sampled_from([0, 0, 1, -1]), st.binary(max_size=2))
def test_json_v2_line_is_the_line_of_the_decoded_records(items, encoding, log_append, base_seq, gap_at, shift, tail):
    """Keys, values and header values from all 256 byte values; a gap in the offsets, a count
    that lies, bytes left over: the C line equals the Python line of the decoded records, or C
    answers None where the records do not decode or their offsets do not follow one another."""
    from kdump.errors import KdumpError
    from kdump.format.records import decode_v2_payload

    section = _v2_section(items, gap_at=gap_at) + tail
    count = max(len(items) + shift, 0)
    attributes = 0x08 if log_append else 0
    batch = Batch(0, 1 << 40, (1 << 40) + count, count, 61 + len(section), 2, 7, True, attributes, 3,
                  1_700_000_000_000, 1_700_000_000_999, 9, 1, base_seq)
    got = _speedups.json_v2_line('"f"', batch, section, ENCODINGS[encoding])
    with _off():
        try:
            records = decode_v2_payload(section, batch)
        except KdumpError:
            records = None
    if records is None:
        assert got is None
        return
    offsets = [r.offset for r in records]
    if offsets and offsets != list(range(offsets[0], offsets[0] + len(offsets))):
        assert got is None
        return
    if got is None:     # only where a value needs more than int64 (then Python writes it)
        assert not all(_int64(r.timestamp) for r in records)
        return
    line, first, last = got
    assert line == ndjson.py_batch_line('"f"', batch, records, VIEWS[encoding])
    assert (first, last) == ((offsets[0], offsets[-1]) if offsets else (None, None))


def _off():
    import contextlib

    @contextlib.contextmanager
    def off():
        was = _accel.use(False)
        try:
            yield
        finally:
            _accel.use(was)
    return off()


def test_json_v2_line_leaves_control_and_odd_batches_to_python():
    section = _v2_section([(0, b"k", b"v", [])])
    base = Batch(0, 0, 0, 1, 61 + len(section), 2, 0, True, 0, 0, 0, 0, -1, -1, -1)
    from kdump.format.records import decode_v2_payload

    assert _speedups.json_v2_line('"f"', base._replace(attributes=0x20), section, 0) is None     # control
    # The batches it does write are Python's lines, to the byte (a compressed batch: ``data``
    # is its records section decompressed).
    for batch in (base, base._replace(attributes=1), base._replace(attributes=4)):
        with _off():
            records = decode_v2_payload(section, batch._replace(attributes=0))
        want = ndjson.py_batch_line('"f"', batch, records, VIEWS["base64"])
        assert _speedups.json_v2_line('"f"', batch, section, 0) == (want, 0, 0)
    assert _speedups.json_v2_line('"f"', base._replace(magic=1), section, 0) is None
    assert _speedups.json_v2_line('"é"', base, section, 0) is None          # a file name that is not ASCII
    assert _speedups.json_v2_line('"f"', base, section, 3) is None          # not an encoding it writes
