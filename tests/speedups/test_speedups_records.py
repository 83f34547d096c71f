"""``kdump records --json`` on jsonout.c's flat writer (flat_records, flat_v2_run) against the
Python writer of render/records.py, the reference: the same bytes on every shipped fixture
(compressed, v0/v1, control batches, headers, transactions, damage), under every encoding,
isolation and --limit; on random Record objects; on segments of transactions in any order;
and on damaged copies of the fixtures."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.decoders.views import PayloadView  # noqa: E402
from kdump.encode import build_end_txn_marker, build_v2_batch  # noqa: E402
from kdump.model import Batch, Record  # noqa: E402
from kdump.render import records as render  # noqa: E402
from kdump.run import records as run  # noqa: E402
from support.run import FIXTURES, GENERATED, run_kdump  # noqa: E402

ENCODINGS = {"base64": 0, "hex": 1, "utf8": 2}


def both(*args) -> tuple:
    """(code, out, err) of ``kdump records ARGS`` with the C writer, and with Python alone."""
    with _accel.using(True):
        fast = run_kdump("records", *args)
    with _accel.using(False):
        pure = run_kdump("records", *args)
    return (fast.code, fast.out, fast.err), (pure.code, pure.out, pure.err)


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_every_fixture_is_the_same_stream(encoding, isolation):
    fast, pure = both(FIXTURES, "--json", "--encoding", encoding, "--isolation", isolation)
    assert fast == pure
    assert fast[1].count("\n") > 10000


@pytest.mark.parametrize("limit", ["1", "7", "100", "1001", "30000"])
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_limit_stops_at_the_same_record(limit, isolation):
    fast, pure = both(FIXTURES, "--json", "--limit", limit, "--isolation", isolation)
    assert fast == pure
    assert fast[1].count("{\"object\":\"record\"") == int(limit)


@pytest.mark.parametrize("name", sorted(p.name for p in GENERATED.iterdir() if p.is_dir()))
def test_each_generated_partition_with_a_limit_in_every_batch(name):
    for limit in ("2", "3", "5", "11"):
        fast, pure = both(GENERATED / name, "--json", "--limit", limit)
        assert fast == pure


class _Calls:
    """A writer, counting the calls that wrote something."""

    def __init__(self, fn):
        self.fn, self.n = fn, 0

    def __call__(self, *args):
        out = self.fn(*args)
        if out is not None and out[0]:
            self.n += 1
        return out


@pytest.mark.parametrize("name, how", [
    ("headers-0", "run"),               # plain v2 batches: straight from the segment (its others compressed)
    ("transactions-0", "run"),          # transactional, control batches between
    ("gzip-v2-0", "raw"),               # a decompressed records section
    ("zstd-v2-0", "raw"),
    ("lz4-v1-0", "raw"),                # a legacy wrapper's inner set
])
def test_the_c_writer_writes_them(name, how, monkeypatch):
    """No record object is written by Python where C can write it, and the run writes the
    plain batches straight from the segment (the comparisons above would pass with Python
    doing everything)."""
    py, raw, c_run = _Calls(render.record_objects), _Calls(render.c_raw_objects), _Calls(render.c_run_objects)
    monkeypatch.setattr(run, "record_objects", py)
    monkeypatch.setattr(render, "c_raw_objects", raw)
    monkeypatch.setattr(render, "c_run_objects", c_run)
    with _accel.using(True):
        r = run_kdump("records", GENERATED / name, "--json")
    assert r.code == 0 and r.out.count("\n") > 0
    assert py.n == 0
    assert (raw if how == "raw" else c_run).n > 0


def test_flat_v2_run_takes_a_plain_segment_whole():
    """With no transaction (an empty table, whose buffer may be at any address) and with one."""
    from array import array

    seg = b"".join(build_v2_batch([(i, 1000 + i, b"k", b"v%d" % i) for i in range(3)], base_offset=3 * n)
                   for n in range(4))
    head, file_json = render.record_head("t", 0), '"f"'
    for table in (array("q"), array("q", [5, 100, 1])):
        text, pos, count = _speedups.flat_v2_run(head, file_json, seg, 0, len(seg), 100, 4096, 0, 1 << 20, -1,
                                                 table, None, False)
        assert (pos, count) == (len(seg), 12)
        assert text.count("\n") == 12 and text.startswith(head + "0,")
    text, pos, count = _speedups.flat_v2_run(head, file_json, seg, 0, len(seg), 100, 4096, 0, 1 << 20, 5,
                                             array("q"), None, False)
    assert (pos, count) == (2 * len(seg) // 4, 5)      # the batch where --limit is reached is the last taken


def test_filters_and_tail_stay_in_python(monkeypatch):
    c_run = _Calls(render.c_run_objects)
    monkeypatch.setattr(render, "c_run_objects", c_run)
    with _accel.using(True):
        r = run_kdump("records", GENERATED / "headers-0", "--json", "--key-regex", "^k")
    assert r.code == 0 and c_run.n == 0


# -- flat_records on Record objects ----------------------------------------------------------------

_bytes = st.one_of(st.none(), st.binary(max_size=12), st.sampled_from([b"\xff\xfe", b"\xc3\xa9\x7f\x00\"\\",
                                                                      b"\xf0\x9f\x8e\x89", b"\xed\xa0\x80"]))
_record = st.builds(
    lambda off, ts, key, value, headers, seq, magic: Record(
        off, ts, 0 if magic else -1, key, value, tuple(headers), seq, None, magic,
        None if magic == 2 else 7, None if magic == 2 else True),
    st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1), _bytes, _bytes,
    st.lists(st.tuples(st.binary(max_size=6) | st.sampled_from([b"\xff", b"k\xc3", b"\xe2\x80\xa8"]), _bytes),
             max_size=3),
    st.integers(-1, (1 << 31) - 1), st.sampled_from([0, 1, 2]))
_batch = Batch(5, 10, 12, 3, 200, 2, 1, True, 0x10, 3, 100, 200, 77, 2, 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record, max_size=6), st.sampled_from(list(ENCODINGS)), st.integers(-1, 7),
       st.sampled_from([None, "committed", "aborted", "open"]), st.sampled_from(["t", "ünï", "a\"b"]))
def test_flat_records_is_record_objects(records, encoding, limit, txn, topic):
    head, tail = render.batch_parts(topic, 3, "/x/00.log", _batch, txn)
    got = _speedups.flat_records(head, tail, None, records, None, ENCODINGS[encoding], limit)
    if not head.isascii():
        assert got is None
        return
    kept = records if limit < 0 else records[:limit]
    assert got == (render.record_objects(head, tail, kept, PayloadView(encoding)), len(kept))


def test_flat_records_leaves_what_it_cannot_write_to_python():
    head, tail = render.batch_parts("t", 0, "f", _batch, None)
    odd = Record(True, 0, 0, None, None, (), 0, None, 2, None, None)        # a bool, not an int
    assert _speedups.flat_records(head, tail, None, [odd], None, 0, -1) is None
    assert _speedups.flat_records(head, tail, None, [], None, 9, -1) is None  # no such encoding
    assert _speedups.flat_records(head, tail, _batch, b"\x01\x02", None, 0, -1) is None  # malformed section
    assert _speedups.flat_records(head, tail, None, [], None, 0, -1) == ("", 0)


# -- transactions in any order ---------------------------------------------------------------------

_step = st.tuples(st.sampled_from(["data", "txn", "commit", "abort"]), st.integers(0, 2), st.integers(-3, 40),
                  st.integers(1, 3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, min_size=1, max_size=14), st.sampled_from(["read_uncommitted", "read_committed"]),
       st.sampled_from([[], ["--limit", "3"]]))
def test_any_order_of_transactions_and_markers(steps, isolation, limit):
    """Batches and markers of three producers at any offsets (going back too): each record's
    txn and read_committed's cut as Outcomes says, C to the byte."""
    out = b""
    for kind, pid, base, n in steps:
        if kind in ("commit", "abort"):
            out += build_end_txn_marker(kind == "commit", base_offset=base, producer_id=pid, producer_epoch=0)
        else:
            out += build_v2_batch([(i, 1000 + i, b"k", b"v%d" % i) for i in range(n)], base_offset=base,
                                  producer_id=pid, producer_epoch=0, base_sequence=0,
                                  is_transactional=kind == "txn")
    with tempfile.TemporaryDirectory() as d:
        part = Path(d) / "t-0"
        part.mkdir()
        (part / "00000000000000000000.log").write_bytes(out)
        fast, pure = both(part, "--json", "--isolation", isolation, *limit)
    assert fast == pure


# -- hostile input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["headers-0", "transactions-0", "gzip-v2-0", "lz4-v1-0", "idempotent-0"])
def test_damaged_copies_are_the_same_stream(name, tmp_path):
    """Bytes of each segment overwritten at random (CRC-invalid batches, records that do not
    decode, torn tails): the stream, the damage objects and stderr, C as Python."""
    src = GENERATED / name
    rnd = random.Random(name)
    for trial in range(12):
        part = tmp_path / f"{trial}" / name
        part.mkdir(parents=True)
        for seg in sorted(src.glob("*.log")):
            data = bytearray(seg.read_bytes())
            for _ in range(rnd.randint(1, 4)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
            if trial % 4 == 3:
                del data[rnd.randrange(len(data)):]
            (part / seg.name).write_bytes(bytes(data))
        for isolation in ("read_uncommitted", "read_committed"):
            fast, pure = both(part, "--json", "--isolation", isolation)
            assert fast == pure
