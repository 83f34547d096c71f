"""``_speedups.text_item`` (the C text renderer, kdump/_speedups/text.c) against its Python
reference: ``kdump.render.text.item_lines`` with ``PayloadView.text`` and ``check.gaps.follow``.

For every mode ``text.c_mode`` gives (metadata or not, data or not, escaped or not; keys and
payloads as utf8, hex, base64, int or long) the C function must append exactly the UTF-8 of
the lines Python writes and follow the offsets into the same gaps, or answer None and leave
both as they were. Inputs: every batch of every fixture segment; hypothesis batches whose
keys, values and header keys and values are drawn from all 256 byte values, valid and
invalid UTF-8 and 4-byte sequences; every 1- and 2-byte sequence and the 3- and 4-byte
sequences around UTF-8's boundaries; whole ``kdump dump`` runs with and without C.
"""

from __future__ import annotations

import io
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.check.gaps import follow  # noqa: E402
from kdump.decoders.views import PayloadView  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.format.javautf8 import java_utf8  # noqa: E402
from kdump.format.walk import Walker, decode_records  # noqa: E402
from kdump.model import Batch, Control, Record  # noqa: E402
from kdump.render import text  # noqa: E402
from support.damage import FIXTURES, run_kdump  # noqa: E402
from support.run import fixture_logs  # noqa: E402

KINDS = list(text.C_KINDS)
INT64 = (-(1 << 63), (1 << 63) - 1)


def view_for(key: str, value: str, escape: bool, by_encoding: bool = False) -> PayloadView:
    """The view text_item's mode stands for: decoders, or (by_encoding) the --encoding itself."""
    if by_encoding and key == value and key in ("utf8", "hex", "base64"):
        return PayloadView(key, escape=escape)
    return PayloadView("utf8", key, value, escape=escape)


def python_item(batch, records, view, data, metadata, last, gaps):
    """The reference: what TextDump.item's Python path writes, and the last offset."""
    if records is not None and gaps is not None:
        last = follow(records, last, gaps)
    lines = text.item_lines(batch, records, view, data, metadata)
    return ("\n".join(lines) + "\n").encode("utf-8"), last


def check(batch, records, view, data: bool, metadata: bool, expect_c: bool | None = None, last: int = -1):
    mode = text.c_mode(view, data, metadata)
    assert mode is not None
    want_gaps: list = []
    want, want_last = python_item(batch, records, view, data, metadata, last, want_gaps)
    out = bytearray(b"before|")
    gaps = [("x", "y")]
    got_last = _speedups.text_item(out, batch, records, mode, last, gaps)
    if got_last is None:
        assert expect_c is not True, "the C renderer refused a batch it must take"
        assert out == b"before|" and gaps == [("x", "y")]
        return None
    assert expect_c is not False, "the C renderer took a batch it must leave to Python"
    assert bytes(out[7:]) == want
    assert gaps[1:] == want_gaps and got_last == want_last
    # Not following (kdump's own gap report): the same lines, the last offset given back.
    out = bytearray()
    assert _speedups.text_item(out, batch, records, mode, last, None) == last
    assert bytes(out) == want
    # A slice of a streamed batch: the records' lines alone (the batch line drawn before).
    out = bytearray()
    assert _speedups.text_item(out, batch, records, mode | text.C_RECORDS_ONLY, last, None) == last
    assert bytes(out) == want.split(b"\n", 1)[1]
    return want


def all_modes():
    for metadata, data, escape in itertools.product((True, False), repeat=3):
        for key, value in (("utf8", "utf8"), ("hex", "hex"), ("base64", "base64"), ("long", "int"),
                           ("int", "utf8"), ("utf8", "long"), ("base64", "hex")):
            yield metadata, data, escape, key, value


MODES = list(all_modes())


# -- every fixture batch -------------------------------------------------------------------------

@pytest.mark.parametrize("name", fixture_logs())
def test_fixture_batches_are_identical(name):
    buf = (FIXTURES / name).read_bytes()
    for batch in Walker(buf):
        try:
            records = decode_records(buf, batch)
        except KdumpError:
            records = None
        control = any(r.control is not None for r in records or ())
        for metadata, data, escape, key, value in MODES[::3]:
            check(batch, records, view_for(key, value, escape, by_encoding=True), data, metadata,
                  expect_c=False if control else (True if batch.base_offset is not None or batch.magic < 2 else None))
        check(batch, None, view_for("utf8", "utf8", True), True, True)


# -- hypothesis: all 256 byte values, invalid UTF-8, 4-byte sequences --------------------------------

_FRAGMENTS = [b"", b"\x00", b"\n", b"\r\n", b"\t", b"\x1b[31m", b"\x7f", b"\x80", b"\xbf", b"\xc0\xaf", b"\xc2",
              b"\xc2\x80", b"\xdf\xbf", b"\xe0\x80\x80", b"\xe0\xa0\x80", b"\xe2\x82", b"\xe2\x82\xac", b"\xed\x9f\xbf",
              b"\xed\xa0\x80", b"\xed\xa0", b"\xed\xbf\xbf", b"\xed\xb9\x5e", b"\xee\x80\x80", b"\xef\xbf\xbd",
              b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf0\x9f\x8e\x89", b"\xf0\x9f\x8e", b"\xf4\x8f\xbf\xbf",
              b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xc2\x85", b"\xe2\x80\xa8", b"plain text ok",
              # bidi controls, zero-width characters (escaped as \uNNNN), and their neighbours (not)
              b"\xd8\x9c", b"\xd8\x9b", b"\xe2\x80\x8b", b"\xe2\x80\x8f", b"\xe2\x80\x90", b"\xe2\x80\xae",
              b"\xe2\x80\xaf", b"\xe2\x81\xa0", b"\xe2\x81\xa6", b"\xe2\x81\xa9", b"\xe2\x81\xaa",
              b"\xef\xbb\xbf", b"\xef\xbb\xbe"]
_bytes = st.one_of(
    st.binary(max_size=64),
    st.lists(st.integers(0, 255), max_size=64).map(bytes),
    st.lists(st.sampled_from(_FRAGMENTS), max_size=12).map(b"".join),
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.binary(max_size=5)), max_size=10).map(b"".join),
    st.text(max_size=16).map(lambda s: s.encode("utf-8", "surrogatepass")),
)
_payload = st.one_of(st.none(), _bytes)
_i64 = st.one_of(st.integers(*INT64), st.sampled_from([0, -1, 1, INT64[0], INT64[1]]))
_headers = st.lists(st.tuples(_bytes, _payload), max_size=4).map(tuple)
_v2_record = st.builds(
    lambda offset, ts, ts_type, key, value, headers, seq: Record(offset, ts, ts_type, key, value, headers, seq),
    _i64, _i64, st.sampled_from([0, 1]), _payload, _payload, _headers, _i64)
_legacy_record = st.builds(
    lambda offset, ts, key, value, magic, crc, ok: Record(offset, ts, magic - 1, key, value, (), -1, None, magic,
                                                          crc, ok),
    _i64, _i64, _payload, _payload, st.integers(0, 1), st.one_of(st.none(), st.integers(0, (1 << 32) - 1)),
    st.one_of(st.none(), st.booleans()))
_batch = st.builds(
    lambda pos, base, delta, count, size, magic, crc, ok, attributes, epoch, bts, mts, pid, pepoch, seq:
        Batch(pos, base, base + delta if base is not None else delta, count, size, magic, crc, ok, attributes, epoch,
              bts, mts, pid, pepoch, seq),
    st.integers(0, 1 << 40), st.one_of(st.integers(-(1 << 62), 1 << 62), st.none()),
    st.integers(-(1 << 31), (1 << 31) - 1), st.one_of(st.integers(-(1 << 31), (1 << 31) - 1), st.none()),
    st.integers(26, 1 << 31), st.sampled_from([2, 2, 2, 3, 1, 0]), st.integers(0, (1 << 32) - 1), st.booleans(),
    st.integers(-(1 << 15), (1 << 15) - 1), st.integers(-(1 << 31), (1 << 31) - 1), _i64, _i64, _i64,
    st.integers(-(1 << 15), (1 << 15) - 1), st.integers(-(1 << 31), (1 << 31) - 1))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batch, st.one_of(st.none(), st.lists(st.one_of(_v2_record, _legacy_record), max_size=6)),
       st.sampled_from(MODES), st.booleans(), _i64)
def test_hypothesis_items_are_identical(batch, records, mode, by_encoding, last):
    metadata, data, escape, key, value = mode
    check(batch, records, view_for(key, value, escape, by_encoding), data, metadata, last=last)


@settings(max_examples=400, deadline=None)
@given(st.lists(_bytes, min_size=1, max_size=8), st.booleans())
def test_hypothesis_payload_bytes_render_as_java_decodes_them(values, escape):
    """Every value the C renderer takes comes out as java_utf8 (escaped or not)."""
    batch = Batch(0, 0, len(values) - 1, len(values), 100, 2, 1, True, 0, 0, 0, 0, -1, -1, -1)
    records = [Record(i, 0, 0, None, v, ((v, None),), -1) for i, v in enumerate(values)]
    got = check(batch, records, view_for("utf8", "utf8", escape), True, False, expect_c=True)
    shown = [java_utf8(v) if not escape else PayloadView(escape=True)._one_text(v, None) for v in values]
    assert got.decode("utf-8").endswith("".join(f"| payload: {t}\n" for t in shown))


# -- exhaustive short sequences ----------------------------------------------------------------------

_EDGES = [0x00, 0x0A, 0x1F, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xA8, 0xA9, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0,
          0xED, 0xF0, 0xF4, 0xF5, 0xFF]     # (E2 80 A8/A9: U+2028/U+2029, escaped)


def _short_sequences() -> list[bytes]:
    seqs = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    seqs += [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in _EDGES for c in _EDGES]
    seqs += [bytes([a, b, c, d]) for a in range(0xE0, 0xF8) for b in _EDGES for c in _EDGES for d in _EDGES[::2]]
    # every character of the blocks that hold the \uNNNN escapes (U+0600.., U+2000.., U+FE00..)
    seqs += [bytes([a, b, c]) for a, bs in ((0xE2, (0x80, 0x81)), (0xEF, (0xBB,))) for b in bs for c in range(256)]
    return seqs


@pytest.mark.parametrize("escape", [True, False])
@pytest.mark.parametrize("kind", ["utf8", "hex", "base64", "int", "long"])
def test_every_short_sequence_is_identical(kind, escape):
    seqs = _short_sequences()
    if kind != "utf8":
        seqs = seqs[::7]        # every length, each byte value: no decoding rule to cover
    for at in range(0, len(seqs), 20000):
        part = seqs[at:at + 20000]
        batch = Batch(0, 0, len(part) - 1, len(part), 100, 2, 1, True, 0, 0, 0, 0, -1, -1, -1)
        # each value also as a header key, and with text around it (sequences cut by the end or not)
        records = [Record(i, 0, 0, b"<" + s, s + b"z", ((s, None), (b"k" + s, s)), -1) for i, s in enumerate(part)]
        check(batch, records, view_for(kind, kind, escape), True, True, expect_c=True)


# -- what the C renderer leaves to Python ---------------------------------------------------------------

def test_control_records_and_unusual_fields_are_left_to_python():
    view = view_for("utf8", "utf8", True)
    v2 = Batch(0, 5, 5, 1, 80, 2, 123, True, 0x20, 3, 7, 7, 9, 1, -1)
    ctl = Record(5, 7, 0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x01", (), -1, Control(1, 0, 1))
    assert check(v2, [ctl], view, True, True, expect_c=False) is None
    rec = Record(5, 7, 0, b"k", b"v", ((b"h", b"x"),), 3)
    check(v2, [rec], view, True, True, expect_c=True)
    for i, bad in ((1, 1 << 63), (3, True), (9, -(1 << 64)), (5, 2.0), (7, 1), (12, 2.5), (8, None)):
        fields = list(v2)
        fields[i] = bad
        assert _speedups.text_item(bytearray(), Batch(*fields), [rec], 7, -1, []) is None, (i, bad)
    for r in (rec._replace(key=bytearray(b"k")), rec._replace(value=memoryview(b"v")),
              rec._replace(headers=((b"h", b"x", b"y"),)), rec._replace(headers=[[b"h", b"x"]]),
              rec._replace(headers=(("h", b"x"),)), rec._replace(offset=1 << 64), rec._replace(offset=True),
              rec._replace(sequence=False), rec._replace(timestamp_type=2), rec._replace(magic=None)):
        out, gaps = bytearray(b"x"), []
        assert _speedups.text_item(out, v2, [rec, r], 7, -1, gaps) is None, r
        assert out == b"x" and gaps == []
    assert _speedups.text_item(bytearray(), v2, (rec,), 7, -1, None) is None
    assert _speedups.text_item(bytearray(), v2, [rec], 7 | 5 << 4, -1, None) is None       # no such kind
    assert _speedups.text_item(bytearray(), v2, [rec], 7, 1 << 64, []) is None
    with pytest.raises(TypeError):
        _speedups.text_item(b"", v2, [rec], 7, -1, None)
    with pytest.raises(TypeError):
        _speedups.text_item(bytearray(), v2, [rec], 7)


def test_views_the_c_renderer_does_not_draw():
    assert text.c_mode(PayloadView("utf8", None, "json"), True, True) is None
    assert text.c_mode(PayloadView("utf8", internal="offsets"), True, True) is None
    assert text.c_mode(PayloadView("hex", "long", None, escape=False), True, False) == \
        text.C_DATA | text.C_KINDS["long"] << 4 | text.C_KINDS["hex"] << 8


# -- whole runs ---------------------------------------------------------------------------------------

SEGMENTS = ["generated/headers-0/00000000000000000000.log", "generated/compacted-0/00000000000000000000.log",
            "generated/transactions-0/00000000000000000000.log", "generated/gzip-v2-0/00000000000000000012.log",
            "generated/legacy-v1-0/00000000000000000000.log"]


@pytest.mark.parametrize("options", [("--print-data-log",), ("--print-data-log", "--escape", "none"),
                                     ("--deep-iteration", "--skip-record-metadata"),
                                     ("--print-data-log", "--key-decoder-class", "LongDecoder",
                                      "--value-decoder-class", "IntegerDecoder"),
                                     ("--deep-iteration",), ()])
def test_runs_with_and_without_c_are_identical(options):
    files = ",".join(str(FIXTURES / s) for s in SEGMENTS if (FIXTURES / s).exists())
    with _accel.using(True):
        fast = run_kdump("dump", "--format", "text", *options, "--files", files)
    with _accel.using(False):
        slow = run_kdump("dump", "--format", "text", *options, "--files", files)
    assert fast.out == slow.out and fast.err == slow.err and fast.code == slow.code
    assert fast.out.count("\n") > 20


def test_byte_lines_write_through_any_stream():
    """A stream without a binary buffer (a worker's capture) gets the same text."""
    from kdump.render.line_buffer import ByteLines

    raw = io.BytesIO()
    binary = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace")
    plain = io.StringIO()
    for stream in (binary, plain):
        lines = ByteLines(stream)
        lines.add("Dumping caf\u00e9 \udcff")
        lines.buf += "| payload: \ufffd\n".encode()
        lines.flush()
    assert raw.getvalue().decode("utf-8") == "Dumping caf\u00e9 \\udcff\n| payload: \ufffd\n"
    assert plain.getvalue() == "Dumping caf\u00e9 \udcff\n| payload: \ufffd\n"


def test_a_batch_larger_than_the_kept_room_is_drawn_and_the_next_one_too():
    """A value whose room passes the 64 MiB the renderer keeps between calls (its buffer is let go)."""
    import random

    value = random.Random(7).randbytes(9 << 20) + b"tail\n" * (2 << 20)
    batch = Batch(0, 0, 0, 1, 100, 2, 1, True, 0, 0, 0, 0, -1, -1, -1)
    view = view_for("utf8", "utf8", True)
    check(batch, [Record(0, 0, 0, b"k", value, (), -1)], view, True, True, expect_c=True)
    check(batch, [Record(0, 0, 0, b"k", b"small", (), -1)], view, True, True, expect_c=True)
