"""format.record_stream: a compressed batch whose records section is past STREAM_THRESHOLD
is decoded from a window of the decompressed stream, and gives what decoding the whole
section gives: the same slices, the same records, the same error (message, position), with
the C accelerator and without. The thresholds are shrunk so that small batches take the
window path, with windows that end inside records, varints and headers.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel
from kdump.encode import encode_v2_record
from kdump.errors import KdumpError
from kdump.format import codecs, gunzip, record_stream
from kdump.format.codecs import GZIP, LZ4, SNAPPY, ZSTD, compress
from kdump.model import Batch

HEADER = 61


def _batch(section: bytes, codec: int, count: int, log_append: bool) -> tuple[bytes, Batch]:
    payload = compress(codec, section)
    data = bytes(HEADER) + payload
    attributes = codec | (0x08 if log_append else 0)
    return data, Batch(0, 1 << 40, (1 << 40) + count, count, len(data), 2, 0, True, attributes, 0,
                       1_700_000_000_000, 1_700_000_000_009, -1, -1, 0x7FFFFFF0)


def _outcome(data: bytes, batch: Batch, threshold: int, window: int, monkeypatch) -> tuple[list, tuple | None]:
    monkeypatch.setattr(record_stream, "STREAM_THRESHOLD", threshold)
    monkeypatch.setattr(record_stream, "WINDOW", window)
    slices: list = []
    try:
        for records in record_stream.v2_record_slices(data, batch):
            slices.append([tuple(r) for r in records])
    except KdumpError as e:
        return slices, (type(e).__name__, e.message, e.position)
    return slices, None


_record = st.builds(
    encode_v2_record,
    st.integers(0, 300), st.integers(-5, 1 << 40),
    st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(st.tuples(st.binary(max_size=4), st.one_of(st.none(), st.binary(max_size=20))), max_size=2))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
@given(st.lists(_record, min_size=4, max_size=40), st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]),
       st.sampled_from([0, 0, 0, -1, -3, 1]), st.booleans(),
       st.one_of(st.none(), st.tuples(st.integers(0, 1 << 16), st.integers(0, 255))),
       st.one_of(st.none(), st.integers(0, 1 << 16)), st.one_of(st.binary(max_size=3), st.binary(min_size=60)),
       st.integers(0, 200), st.integers(1, 300), st.integers(1, 100), st.booleans())
def test_window_decodes_as_the_whole_section(monkeypatch, records, codec, count_shift, log_append, flip, cut, tail,
                                             threshold, window, piece, use_c):
    # pieces of the stream as small as ``piece`` bytes (zstd's are already small), so that
    # windows end anywhere in a record
    for name in ("LZ4_CHUNK", "XERIAL_CHUNK_SIZE"):
        monkeypatch.setattr(codecs, name, piece)
    monkeypatch.setattr(gunzip, "OUTPUT_CHUNK", piece)
    section = bytearray(b"".join(records))
    if flip is not None:
        section[flip[0] % len(section)] = flip[1]
    if cut is not None:
        del section[cut % len(section):]
    section += tail
    data, batch = _batch(bytes(section), codec, len(records) + count_shift, log_append)
    monkeypatch.setattr(record_stream, "RECORDS_SLICE", 3)
    with _accel.using(use_c):
        whole = _outcome(data, batch, 1 << 30, 1 << 20, monkeypatch)
        streamed = _outcome(data, batch, threshold, window, monkeypatch)
    assert streamed == whole


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_records_larger_than_the_window(codec, monkeypatch):
    """A record of many windows is held whole (the window grows to it), then the window shrinks."""
    records = [encode_v2_record(i, 0, b"k", bytes([i]) * size) for i, size in enumerate([10, 5000, 3, 70000, 1, 2])]
    data, batch = _batch(b"".join(records), codec, len(records), False)
    monkeypatch.setattr(record_stream, "RECORDS_SLICE", 2)
    slices, error = _outcome(data, batch, 100, 256, monkeypatch)
    assert error is None
    assert [[len(r[4]) for r in s] for s in slices] == [[10, 5000], [3, 70000], [1, 2]]


def test_the_payload_size_decides_the_path(monkeypatch):
    """Up to STREAM_THRESHOLD decompressed bytes the section is decoded whole; past it, windowed."""
    records = [encode_v2_record(i, 0, None, bytes(100)) for i in range(10)]
    data, batch = _batch(b"".join(records), ZSTD, 10, False)
    monkeypatch.setattr(record_stream, "RECORDS_SLICE", 3)
    calls = []
    real = record_stream._streamed
    monkeypatch.setattr(record_stream, "_streamed", lambda *a: calls.append(sum(map(len, a[3]))) or real(*a))
    size = len(b"".join(records))
    assert _outcome(data, batch, size, 64, monkeypatch)[1] is None and calls == []
    # past it, the pieces read so far (here the whole section, one zstd piece) are not read again
    assert _outcome(data, batch, size - 1, 64, monkeypatch)[1] is None and calls == [size]
