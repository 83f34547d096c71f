"""``_speedups.text_v2_run`` and ``json_v2_run`` (the run writers: text.c, jsonout.c) against
their Python reference: the walk (``format.walk.Walker``), ``decode_records`` and the line of
each batch (``render.text.item_lines`` with ``check.gaps.follow``; ``export.ndjson.py_batch_line``).

From any position a run writer must write exactly the lines Python writes for the batches it
takes, take every plain v2 batch (uncompressed, not control, a valid CRC, records that decode,
at most ``max_records`` of them; for JSON a records section of at most ``max_section`` bytes
and offsets following one another) and stop before the first other one, leaving it to
Python. Inputs: hypothesis segments mixing plain batches with compressed, control, damaged,
legacy and lying ones, keys, values and headers drawn from all 256 byte values (invalid
UTF-8 and 4-byte sequences included); every fixture segment; whole ``kdump dump`` runs.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.check.gaps import follow  # noqa: E402
from kdump.decoders.views import PayloadView  # noqa: E402
from kdump.encode import build_control_batch, build_legacy_wrapper, build_v2_batch  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.export import ndjson  # noqa: E402
from kdump.format.walk import Walker, decode_records  # noqa: E402
from kdump.model import COMPRESSION_MASK, CONTROL_FLAG  # noqa: E402
from kdump.render import text  # noqa: E402
from support.damage import FIXTURES  # noqa: E402
from support.run import fixture_logs  # noqa: E402

INT64 = (-(1 << 63), (1 << 63) - 1)
MODES = [(True, True, True, "utf8", "utf8"), (True, True, False, "utf8", "utf8"), (False, True, True, "hex", "base64"),
         (True, False, True, "utf8", "utf8"), (False, False, False, "utf8", "utf8"), (True, True, True, "long", "int")]
ENCODINGS = {"base64": 0, "hex": 1, "utf8": 2}


def _int64(*values) -> bool:
    return all(INT64[0] <= v <= INT64[1] for v in values)


def _plain(buf, b, max_records: int) -> list | None:
    """The records of ``b`` when a run writer must take it (the reader's own conditions), else None."""
    if b.magic != 2 or not b.crc_valid or b.attributes & (COMPRESSION_MASK | CONTROL_FLAG):
        return None
    if b.count is None or not 0 <= b.count <= max_records:
        return None
    try:
        return decode_records(buf, b)
    except KdumpError:
        return None


def _reference(buf, pos: int, max_records: int, followed: bool, last: int, max_section: int | None = None,
               max_batches: int = 1 << 16):
    """(batches taken with their records, gaps followed, why the run stopped) in pure Python."""
    taken, gaps, prev, stop = [], [], last, "end"
    with _accel.using(False):
        for b in Walker(buf, pos):
            if len(taken) == max_batches:
                stop = "max_batches"
                break
            records = _plain(buf, b, max_records)
            if records is None or (max_section is not None and b.size - 61 > max_section):
                stop = "not plain"
                break
            if not all(_int64(r.offset, r.timestamp) for r in records):
                stop = "beyond int64"
                break
            offsets = [r.offset for r in records]
            if not followed and offsets:
                start = offsets[0] if not any(t[1] for t in taken) else prev + 1
                if offsets != list(range(start, start + len(offsets))):
                    stop = "gap"
                    break
            if followed:
                prev = follow(records, prev, gaps)
            elif offsets:
                prev = offsets[-1]
            taken.append((b, records))
    return taken, gaps, stop


def _check_text(buf, pos: int, mode_spec, followed: bool, last: int = -1, max_records: int = 4096,
                max_batches: int = 1 << 16):
    metadata, data, escape, key, value = mode_spec
    view = PayloadView("utf8", key, value, escape=escape)
    mode = text.c_mode(view, data, metadata)
    taken, want_gaps, stop = _reference(buf, pos, max_records, followed, last, max_batches=max_batches)
    out, gaps = bytearray(b"x"), ([("a", "b")] if followed else None)
    new_pos, first, got_last = _speedups.text_v2_run(out, buf, pos, len(buf), max_batches, max_records, mode, last,
                                                     gaps, 1 << 30)
    lines = [line for b, records in taken for line in text.item_lines(b, records, view, data, metadata)]
    want = "".join(line + "\n" for line in lines).encode("utf-8")
    assert bytes(out[1:]) == want
    assert new_pos == (taken[-1][0].position + taken[-1][0].size if taken else pos)
    offsets = [r.offset for _, records in taken for r in records]
    assert (first, got_last) == ((offsets[0], offsets[-1]) if offsets else (None, None))
    if followed:
        assert gaps[1:] == want_gaps
    return taken, stop


def _check_json(buf, pos: int, encoding: str, max_records: int = 4096, max_section: int = 1 << 20,
                file_json: str = '"f.log"', max_batches: int = 1 << 16):
    taken, _, stop = _reference(buf, pos, max_records, False, 0, max_section, max_batches)
    lines, new_pos, first, last = _speedups.json_v2_run(file_json, buf, pos, len(buf), max_batches, max_records,
                                                        max_section, ENCODINGS[encoding], 1 << 30)
    view = PayloadView(encoding)
    want = "\n".join(ndjson.py_batch_line(file_json, b, records, view) for b, records in taken)
    assert lines == (want or None)
    assert new_pos == (taken[-1][0].position + taken[-1][0].size if taken else pos)
    offsets = [r.offset for _, records in taken for r in records]
    assert (first, last) == ((offsets[0], offsets[-1]) if offsets else (None, None))
    return taken, stop


# -- hypothesis segments -----------------------------------------------------------------------

_FRAGMENTS = [b"", b"\x00", b"\n", b"\x1b[31m", b"\x7f", b"\x80", b"\xc0\xaf", b"\xc2", b"\xe2\x82\xac",
              b"\xed\xa0\x80", b"\xef\xbf\xbd", b"\xf0\x9f\x8e\x89", b"\xf0\x9f\x8e",
              b"\xf4\x90\x80\x80", b"\xff", b"\xe2\x80\xa8"]
_bytes = st.one_of(st.binary(max_size=40), st.lists(st.integers(0, 255), max_size=40).map(bytes),
                   st.lists(st.sampled_from(_FRAGMENTS), max_size=8).map(b"".join))
_payload = st.one_of(st.none(), _bytes)
_headers = st.lists(st.tuples(_bytes, _payload), max_size=3)
_records = st.lists(st.tuples(st.integers(-1000, 1000), _payload, _payload, _headers), min_size=0, max_size=5)
KINDS = ["plain"] * 6 + ["gap", "lz4", "gzip", "control", "crc", "count", "legacy", "append", "seq", "huge_ts"]


def _segment(specs) -> bytes:
    out, offset = [], 1000
    for kind, recs in specs:
        items = [(i, 1_700_000_000_000 + ts, k, v, [(hk.decode("latin-1"), hv) for hk, hv in h])
                 for i, (ts, k, v, h) in enumerate(recs)]
        if kind == "gap":
            offset += 5
        if kind == "control":
            out.append(build_control_batch(0, b"\x00\x00\x00\x00\x00\x07", base_offset=offset))
            offset += 1
            continue
        if kind == "legacy":
            msgs = [(i, 1_700_000_000_000, k, v) for i, (_, k, v, _) in enumerate(recs or [(0, b"k", b"v", [])])]
            out.append(build_legacy_wrapper(msgs, magic=1, codec=1, wrapper_offset=offset + len(msgs) - 1))
            offset += len(msgs)
            continue
        extra = {}
        if kind == "lz4":
            extra["codec"] = 3
        elif kind == "gzip":
            extra["codec"] = 1
        elif kind == "count":
            extra["records_count"] = len(items) + 1
        elif kind == "append":
            extra.update(timestamp_type=1, max_timestamp=1_800_000_000_000)
        elif kind == "seq":
            extra.update(producer_id=7, producer_epoch=1, base_sequence=(1 << 31) - 2)
        elif kind == "huge_ts":
            extra.update(base_timestamp=INT64[1] - 10)
        batch = bytearray(build_v2_batch(items, base_offset=offset, **extra))
        if kind == "crc":
            batch[-1] ^= 0x55
        out.append(bytes(batch))
        offset += max(len(items), 1)
    return b"".join(out)


_specs = st.lists(st.tuples(st.sampled_from(KINDS), _records), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_specs, st.sampled_from(MODES), st.booleans(), st.sampled_from([-1, 999, 1003, INT64[1]]),
       st.sampled_from([4096, 2]))
def test_text_run_takes_the_plain_batches_and_writes_python_lines(specs, mode, followed, last, max_records):
    buf = _segment(specs)
    with _accel.using(False):
        starts = [b.position for b in Walker(buf)]
    for pos in starts:          # from every batch boundary: where a run starts after Python's batch
        _check_text(buf, pos, mode, followed, last, max_records)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_specs, st.sampled_from(list(ENCODINGS)), st.sampled_from([4096, 2]), st.sampled_from([1 << 20, 40]))
def test_json_run_takes_the_plain_batches_and_writes_python_lines(specs, encoding, max_records, max_section):
    buf = _segment(specs)
    with _accel.using(False):
        starts = [b.position for b in Walker(buf)]
    for pos in starts:
        _check_json(buf, pos, encoding, max_records, max_section)


def test_the_runs_stop_where_they_must():
    """A run ends at the batch it must leave, whatever comes after; in the middle of nothing,
    at the end of the buffer, on a short tail, it takes nothing."""
    plain = [("plain", [(0, b"k", b"\xff\xfe v", [(b"h", b"x")])])] * 3
    for kind in ("lz4", "control", "crc", "count", "legacy"):
        buf = _segment(plain + [(kind, [(1, b"a", b"b", [])])] + plain)
        taken, stop = _check_text(buf, 0, MODES[0], True)
        assert len(taken) == 3 and stop == "not plain", kind
        taken, stop = _check_json(buf, 0, "base64")
        assert len(taken) == 3 and stop == "not plain", kind
    buf = _segment(plain + [("gap", [(1, b"a", b"b", [])])] + plain)
    assert len(_check_text(buf, 0, MODES[0], True)[0]) == 7          # followed: a gap is only noted
    assert _check_text(buf, 0, MODES[0], False)[1] == "gap"          # else the run stops before it
    assert _check_json(buf, 0, "hex")[1] == "gap"
    for pos in (len(buf), len(buf) - 3, -1):
        out = bytearray()
        assert _speedups.text_v2_run(out, buf, pos, len(buf), 9, 9, 1, -1, None, 1 << 20) == (pos, None, None)
        assert out == b""
        assert _speedups.json_v2_run('"f"', buf, pos, len(buf), 9, 9, 1 << 20, 0, 1 << 20) == (None, pos, None, None)
    # an end cutting the second batch: the first alone
    second = _segment(plain[:1])
    out = bytearray()
    assert _speedups.text_v2_run(out, buf, 0, len(second) + 20, 9, 9, 1, -1, None, 1 << 20)[0] == len(second)
    # max_batches and max_out bound a call; the next call goes on
    assert _speedups.text_v2_run(bytearray(), buf, 0, len(buf), 2, 9, 1, -1, None, 1 << 20)[0] == 2 * len(second)
    assert _speedups.text_v2_run(bytearray(), buf, 0, len(buf), 9, 9, 1, -1, None, 1)[0] == len(second)
    assert _speedups.json_v2_run('"f"', buf, 0, len(buf), 9, 9, 1 << 20, 0, 1)[1] == len(second)
    # not a file name it writes, not an encoding: nothing taken
    assert _speedups.json_v2_run('"é"', buf, 0, len(buf), 9, 9, 1 << 20, 0, 1 << 20)[1] == 0
    assert _speedups.json_v2_run('"f"', buf, 0, len(buf), 9, 9, 1 << 20, 3, 1 << 20)[1] == 0


@pytest.mark.parametrize("name", fixture_logs())
def test_fixture_segments_from_every_batch(name):
    buf = (FIXTURES / name).read_bytes()
    with _accel.using(False):
        starts = [b.position for b in Walker(buf)]
    for pos in starts[:3] + starts[3::max(1, len(starts) // 4)]:      # runs of up to 40 batches from a few places
        _check_text(buf, pos, MODES[0], True, max_batches=40)
        _check_json(buf, pos, "base64", max_batches=40)


# -- legacy wrappers: drawn from their decompressed inner set ----------------------------------

_inner = st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 5), _payload, _payload, st.integers(0, 1)),
                  min_size=1, max_size=5)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_inner, st.sampled_from([0, 1]), st.booleans(), st.sampled_from([None, 0, 40]), st.sampled_from(MODES),
       st.sampled_from(list(ENCODINGS)), st.integers(0, 3), st.binary(max_size=3), st.booleans())
def test_legacy_wrappers_are_drawn_as_their_records(inner, magic, log_append, wrapper_offset, mode, encoding,
                                                     damage, tail, followed):
    """Inner messages with keys and values from all 256 byte values, offsets with gaps, a
    wrapper offset of 0 (librdkafka) or too small, LogAppendTime, inner CRCs damaged, bytes
    left over: text_legacy_set and json_legacy_line write the lines of the records
    decode_legacy makes, legacy_set_span says their first offset and count, or all three
    answer None where the set does not decode (and for gaps, where the offsets must follow)."""
    from kdump.format import legacy
    from kdump.format.codecs import decompress

    offset, msgs = 10, []
    for step, ts, key, value, flip in inner:
        offset += step
        msgs.append((offset, 1_700_000_000_000 + ts, key, value))
    raw = bytearray(build_legacy_wrapper(msgs, magic=magic, codec=1, wrapper_offset=wrapper_offset,
                                         timestamp_type=int(log_append)))
    with _accel.using(False):
        (batch,) = list(Walker(bytes(raw)))
    data = bytearray(decompress(1, legacy.Message(bytes(raw), 12, len(raw)).value, magic))
    if damage and len(data) > 40:
        data[len(data) // damage - 1] ^= 0x21           # an inner CRC, a length, a field...
    data = bytes(data) + tail
    lat = batch.max_timestamp if log_append and magic == 1 else None
    msg = legacy.Message(bytes(raw), 12, len(raw))
    with _accel.using(False):
        try:
            records = legacy._inner_records(msg, batch.last_offset, data)
        except KdumpError:
            records = None
    span = _speedups.legacy_set_span(data, batch.last_offset, magic)
    metadata, data_shown, escape, key, value = mode
    view = PayloadView("utf8", key, value, escape=escape)
    out, gaps = bytearray(b"x"), ([("a", "b")] if followed else None)
    drawn = _speedups.text_legacy_set(out, batch, data, lat, text.c_mode(view, data_shown, metadata), 7, gaps)
    line = _speedups.json_legacy_line('"f"', batch, data, lat, ENCODINGS[encoding])
    if records is None or not all(_int64(r.offset, r.timestamp) for r in records):
        assert span is None and drawn is None and line is None and out == b"x"
        return
    offsets = [r.offset for r in records]
    assert span == (offsets[0], len(offsets))
    follows = offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    if not follows:
        assert line is None
    else:
        assert line == (ndjson.py_batch_line('"f"', batch, records, PayloadView(encoding)), offsets[0], offsets[-1])
    if not follows and not followed:
        assert drawn is None and out == b"x"
        return
    want_gaps: list = []
    if followed:
        follow(records, 7, want_gaps)
        assert gaps[1:] == want_gaps
    lines = text.item_lines(batch, records, view, data_shown, metadata)
    assert bytes(out[1:]) == "".join(line + "\n" for line in lines).encode()
    assert drawn == (offsets[0], offsets[-1])


def test_the_reader_offers_a_span_before_every_batch_it_leaves_and_rests_them_on_long_refusals():
    """SegmentReader's spans: every batch is either taken by the consumer's C writer from a span
    or yielded, in order; after RUNS_TRIES refusals in a row spans come again RUNS_REST batches later."""
    from kdump.storage import record_reader as rr

    lz4 = [("lz4", [(0, b"k", b"v" * 30, [])])] * (rr.RUNS_TRIES + rr.RUNS_REST + 3)
    plain = [("plain", [(0, b"k", b"\xc3\x28", [])])] * (rr.RUNS_REST + 10)
    buf = _segment(plain[:2] + lz4 + plain)
    with _accel.using(False):
        every = [(b.position, b.size) for b in Walker(buf)]
    offered, taken, yielded = [], [], []
    walker = Walker(buf)
    for x in rr.SegmentReader._spans(walker, len(buf), 4096):
        if type(x) is rr.Span:
            offered.append(x.start)
            new = _speedups.text_v2_run(bytearray(), x.buf, x.start, x.end, 1 << 16, x.max_records, 1, -1, None,
                                        1 << 30)[0]
            taken.extend(p for p, size in every if x.start <= p < new)
            walker.resume(new)
        else:
            yielded.append(x.position)
    assert sorted(yielded + taken) == [p for p, _ in every] and not set(yielded) & set(taken)
    assert taken[:2] == [p for p, _ in every[:2]]
    assert taken[-3:] == [p for p, _ in every[-3:]]          # the plain tail: the writer's again
    assert len(offered) < len(every) // 2
    assert walker.ended and walker.stop is None and walker.stop_position == len(buf)
