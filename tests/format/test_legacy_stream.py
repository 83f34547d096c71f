"""format.legacy_stream: a v0/v1 wrapper's inner messages a slice at a time, and an inner set past
STREAM_THRESHOLD counted and decoded from a window of its decompressed stream.

The sliced path must give exactly what one list of the inner messages gives (``decode_records``,
today's whole-list path): every wrapper of every fixture and generated wrappers of every
codec, v0 and v1, with the C accelerator and without. The slice size, the threshold and the
window are shrunk so that small wrappers take the sliced and windowed paths, with windows that
end inside entries. A corrupt inner set gives the same error (type, message, position) from
the window as from the whole set.
"""

from __future__ import annotations

import os
import random
import struct

import pytest

from kdump import _accel
from kdump.encode import build_legacy_message, build_legacy_wrapper
from kdump.errors import KdumpError, RecordCountLimitError
from kdump.format import legacy, legacy_stream
from kdump.format.codecs import DEFAULT_LIMITS, GZIP, LZ4, SNAPPY, Limits
from kdump.format.records import RECORDS_SLICE
from kdump.format.walk import Walker, decode_records, record_slices
from support.run import FIXTURES, fixture_logs

LEGACY_LOGS = []
for _path in fixture_logs():
    with open(os.path.join(FIXTURES, _path), "rb") as _f:
        _data = _f.read()
    if any(b.magic < 2 and b.attributes & 7 for b in Walker(_data)):
        LEGACY_LOGS.append(_path)


def _error(e: KdumpError) -> tuple:
    return type(e).__name__, e.message, e.position


def whole(buf) -> list:
    """Each batch with its records decoded as one list (or its error), by the Python reference."""
    out = []
    with _accel.using(False):
        for b in Walker(buf):
            try:
                out.append((tuple(b), [tuple(r) for r in decode_records(buf, b)]))
            except KdumpError as e:
                out.append((tuple(b), _error(e)))
    return out


def sliced(buf, monkeypatch, use_c: bool, slice_size: int | None, threshold: int | None,
           window: int | None) -> list:
    """The same from ``record_slices``, with the slice size, threshold and window shrunk; the
    records of the slices before an error are kept beside it."""
    if slice_size is not None:
        monkeypatch.setattr(legacy_stream, "RECORDS_SLICE", slice_size)
    if threshold is not None:
        monkeypatch.setattr(legacy, "STREAM_THRESHOLD", threshold)
    if window is not None:
        monkeypatch.setattr(legacy, "WINDOW", window)
    out = []
    with _accel.using(use_c):
        for b in Walker(buf):
            records: list = []
            try:
                for part in record_slices(buf, b):
                    assert slice_size is None or len(part) <= slice_size
                    records += [tuple(r) for r in part]
            except KdumpError as e:
                assert not records
                out.append((tuple(b), _error(e)))
                continue
            out.append((tuple(b), records))
    monkeypatch.undo()
    return out


SHRUNK = [(None, None, None), (3, None, None), (3, 0, 2), (2, 0, 50), (1000, 0, 7), (5, 64, 300)]


@pytest.mark.parametrize("use_c", [True, False], ids=["c", "python"])
@pytest.mark.parametrize("path", LEGACY_LOGS)
def test_fixture_wrappers_sliced_as_whole(path, use_c, monkeypatch):
    with open(os.path.join(FIXTURES, path), "rb") as f:
        buf = f.read()
    expected = whole(buf)
    for shrunk in SHRUNK:
        assert sliced(buf, monkeypatch, use_c, *shrunk) == expected, shrunk


def _messages(n: int, seed: int) -> list[tuple]:
    rnd = random.Random(seed)
    return [(1000 + i, 1_700_000_000_000 + rnd.randrange(-5, 5),
             None if rnd.random() < 0.1 else rnd.randbytes(rnd.randrange(0, 9)),
             None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 3, 40, 700])))
            for i in range(n)]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("use_c", [True, False], ids=["c", "python"])
def test_wrappers_of_many_messages_sliced_as_whole(codec, magic, use_c, monkeypatch):
    """Wrappers of more than one slice (RECORDS_SLICE itself): LogAppendTime, librdkafka's
    wrapper offset 0, a second wrapper after the first (the walk's cache moves on)."""
    n = RECORDS_SLICE + 900
    buf = (build_legacy_wrapper(_messages(n, magic), magic=magic, codec=codec)
           + build_legacy_wrapper(_messages(n, 7)[:RECORDS_SLICE + 1], magic=magic, codec=codec, timestamp=5,
                                  timestamp_type=magic, wrapper_offset=0 if magic else None))
    expected = whole(buf)
    assert [len(r) for _, r in expected] == [n, RECORDS_SLICE + 1]
    for shrunk in [(None, None, None), (None, 0, 4096), (None, 0, 100), (777, 1 << 10, 1 << 14)]:
        assert sliced(buf, monkeypatch, use_c, *shrunk) == expected, shrunk


def test_slices_hold_at_most_records_slice():
    buf = build_legacy_wrapper(_messages(2 * RECORDS_SLICE + 1, 3), magic=1, codec=GZIP)
    [b] = Walker(buf)
    assert [len(s) for s in record_slices(buf, b)] == [RECORDS_SLICE, RECORDS_SLICE, 1]
    assert legacy.inner_set(buf, b) is not None     # held whole: the writers' C path reads it


def test_a_huge_inner_set_is_not_held(monkeypatch):
    """Past STREAM_THRESHOLD the walk keeps only the set's size: ``inner_set`` gives None (the
    writers take the record path) and the records come from a window of the stream."""
    monkeypatch.setattr(legacy, "STREAM_THRESHOLD", 1000)
    buf = build_legacy_wrapper(_messages(5000, 4), magic=1, codec=GZIP)
    [b] = Walker(buf)
    cached = legacy._last_inner
    assert cached is not None and type(cached[4]) is int and cached[5] is None
    assert legacy.inner_set(buf, b) is None
    assert b.count == 5000 and b.base_offset == 1000
    assert [r.offset for s in record_slices(buf, b) for r in s] == list(range(1000, 6000))


# -- errors: the same from a window as from the whole set --------------------------------------

def _v1(offset: int, key=b"k", value=b"v", **kw) -> bytes:
    return build_legacy_message(offset, key, value, magic=1, timestamp=5, **kw)


GOOD = [_v1(i) for i in range(200)]


def _resized(entry: bytes, size: int) -> bytes:
    return entry[:8] + struct.pack(">i", size) + entry[12:]


CORRUPT = {
    "truncated entry header": b"".join(GOOD) + b"\x00" * 5,
    "entry runs past the set": b"".join(GOOD) + _resized(_v1(200), 1000),
    "entry below the minimum size": b"".join(GOOD[:150]) + _resized(_v1(150), 13) + b"".join(GOOD[150:]),
    "negative size": b"".join(GOOD[:3]) + _resized(_v1(3), -1) + b"".join(GOOD[4:]),
    "compressed inner message": b"".join(GOOD[:120]) + _v1(120, codec=GZIP) + b"".join(GOOD[121:]),
    "invalid inner magic": b"".join(GOOD[:90]) + _v1(90)[:16] + b"\x07" + _v1(90)[17:],
    "bad key length": b"".join(GOOD[:199]) + _v1(199)[:26] + struct.pack(">i", -2) + _v1(199)[30:],
    "bytes after the value": b"".join(GOOD[:60]) + _resized(_v1(60) + b"x", len(_v1(60)) - 11),
    "v1 message below 22 bytes": b"".join(GOOD[:5]) + build_legacy_message(5, None, None, magic=1)[:12 + 14]
                                 .replace(struct.pack(">i", 22), struct.pack(">i", 14), 1) + b"".join(GOOD[6:]),
    "empty set": b"",
    "wrapper offset below the last relative": b"".join(GOOD),
}


def _wrapper(name: str, inner: bytes, crc_valid: bool) -> bytes:
    wrapper_offset = 150 if name == "wrapper offset below the last relative" else 7000
    buf = bytearray(build_legacy_wrapper([inner], magic=1, codec=GZIP, wrapper_offset=wrapper_offset))
    if not crc_valid:
        buf[12] ^= 0xFF
    return bytes(buf)


def _raised(f, *args) -> tuple | None:
    try:
        f(*args)
    except KdumpError as e:
        return _error(e)
    return None


@pytest.mark.parametrize("crc_valid", [True, False], ids=["crc-ok", "crc-fails"])
@pytest.mark.parametrize("use_c", [True, False], ids=["c", "python"])
@pytest.mark.parametrize("name", list(CORRUPT))
def test_corrupt_inner_set_gives_the_same_error(name, use_c, crc_valid, monkeypatch):
    buf = _wrapper(name, CORRUPT[name], crc_valid)
    msg = legacy.Message(buf, 12, len(buf))
    offset = struct.unpack_from(">q", buf)[0]
    data = legacy._inner_data(msg, offset, DEFAULT_LIMITS)
    with _accel.using(use_c):
        expected = _raised(legacy._inner_records, msg, offset, data)
        assert expected is not None
        for window in (2, 33, 100, 1 << 20):
            monkeypatch.setattr(legacy, "WINDOW", window)
            assert _raised(legacy._streamed_span, msg, offset, DEFAULT_LIMITS, len(data)) == expected, window
        # the walk too: the wrapper is not counted, and decoding it says why
        monkeypatch.setattr(legacy, "STREAM_THRESHOLD", 0)
        [b] = Walker(buf)
        assert b.count is None and b.base_offset is None
        assert _raised(lambda: list(record_slices(buf, b))) == (expected[0], expected[1], 0)


def test_corrupt_messages_are_named_where_they_are(monkeypatch):
    """A window's errors count their byte from the set's start, not the window's."""
    at = 200 * len(GOOD[0])
    expected = ("InvalidRecordError", f"inner message of 1000 bytes at inner byte {at} does not fit (wrapper offset "
                "7000)", None)
    buf = _wrapper("x", CORRUPT["entry runs past the set"], True)
    msg = legacy.Message(buf, 12, len(buf))
    monkeypatch.setattr(legacy, "WINDOW", 50)
    assert _raised(legacy._streamed_span, msg, 7000, DEFAULT_LIMITS, at + len(GOOD[0])) == expected


def test_max_records_per_batch_applies_to_inner_messages():
    buf = build_legacy_wrapper(_messages(RECORDS_SLICE + 5, 1), magic=1, codec=GZIP)
    [b] = Walker(buf, limits=Limits(max_records=RECORDS_SLICE))
    message = (f"compressed message at offset {1000 + RECORDS_SLICE + 4} holds {RECORDS_SLICE + 5} inner messages, "
               f"more than the limit of {RECORDS_SLICE} (--max-records-per-batch); not decoded")
    for decode in (lambda: list(record_slices(buf, b, Limits(max_records=RECORDS_SLICE))),
                   lambda: decode_records(buf, b, Limits(max_records=RECORDS_SLICE))):
        with pytest.raises(RecordCountLimitError) as e:
            decode()
        assert (e.value.message, e.value.position) == (message, 0)
    assert sum(map(len, record_slices(buf, b, Limits(max_records=RECORDS_SLICE + 5)))) == RECORDS_SLICE + 5
