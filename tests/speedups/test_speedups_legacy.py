"""legacy_scan and legacy_decode_span (legacy.c) against their Python twins: ``legacy.inner_entries``
(checking the entries of a window of an inner set) and ``legacy_stream.decode_span`` (their
records). Inputs: well-formed inner sets damaged with bytes drawn from all 256 values, and raw
bytes, cut into windows anywhere. C answers None exactly where Python raises (the Python code
then raises the precise error), and otherwise exactly what Python gives.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.encode import build_legacy_message  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.format import legacy, legacy_stream  # noqa: E402

INT64 = (-(1 << 63), (1 << 63) - 1)
WRAPPER = legacy.Message(build_legacy_message(9, None, b"x", magic=1, codec=1, timestamp=3), 12,
                         len(build_legacy_message(9, None, b"x", magic=1, codec=1, timestamp=3)))


def strict(x):
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [strict(i) for i in x])
    return (type(x).__name__, x)


_bytes = st.one_of(st.none(), st.binary(max_size=12))


@st.composite
def inner_sets(draw):
    """A well-formed inner set, then damaged: bytes from all 256 values set, inserted or cut."""
    entries = []
    for i in range(draw(st.integers(0, 6))):
        magic = draw(st.integers(0, 1))
        entries.append(build_legacy_message(draw(st.sampled_from([i, 0, -1, INT64[1], INT64[0], 1 << 40])),
                                            draw(_bytes), draw(_bytes), magic=magic,
                                            timestamp=draw(st.sampled_from([-1, 0, INT64[1], INT64[0]])),
                                            timestamp_type=draw(st.integers(0, 1)),
                                            codec=draw(st.sampled_from([0, 0, 0, 0, 1, 4]))))
    data = bytearray(b"".join(entries))
    for _ in range(draw(st.integers(0, 4))):
        what = draw(st.sampled_from(["byte", "insert", "cut", "size"]))
        if what == "byte" and data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif what == "insert":
            at = draw(st.integers(0, len(data)))
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif what == "cut":
            del data[draw(st.integers(0, len(data))):]
        elif what == "size" and len(data) >= 12:
            data[8:12] = struct.pack(">i", draw(st.sampled_from([-1, 0, 13, 14, 21, 22, (1 << 31) - 1, -(1 << 31)])))
    return bytes(data)


def _windows(draw, data: bytes) -> tuple[int, int]:
    start = draw(st.integers(0, len(data)))
    return start, draw(st.integers(start, len(data)))


def python_scan(data: bytes, start: int, end: int):
    try:
        entries, pos = legacy.inner_entries(data, start, end, "offset 9", "", final=False)
    except (KdumpError, struct.error):
        return None
    if not entries:
        return pos, 0, None, None
    return pos, len(entries), entries[0][0], entries[-1][0]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(inner_sets(), st.binary(max_size=120)), st.data())
def test_legacy_scan_is_entries_twin(data, draw):
    start, end = _windows(draw.draw, data)
    assert _speedups.legacy_scan(data, start, end) == python_scan(data, start, end)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(inner_sets(), st.binary(max_size=120)), st.data(),
       st.sampled_from([0, 5, -3, INT64[1], INT64[0], 1 << 62]), st.integers(0, 8),
       st.sampled_from([None, 0, 77, INT64[1]]))
def test_legacy_decode_span_is_decode_span_twin(data, draw, base, take, log_append):
    start, end = _windows(draw.draw, data)
    got = _speedups.legacy_decode_span(data, start, end, base, take, log_append)
    with _accel.using(False):
        try:
            expected = legacy_stream.decode_span(data, start, end, base, take, log_append, WRAPPER, 9)
        except (KdumpError, struct.error):
            expected = None
    if expected is not None and any(not INT64[0] <= r.offset <= INT64[1] for r in expected[0]):
        assert got is None          # past int64: Python's big ints decide
        return
    assert strict(got) == strict(expected)


def test_windows_stop_before_an_entry_they_do_not_hold():
    entries = [build_legacy_message(i, b"k", b"v" * i, magic=1, timestamp=i) for i in range(4)]
    data = b"".join(entries)
    ends = [sum(map(len, entries[:i])) for i in range(5)]
    assert _speedups.legacy_scan(data, 0, len(data)) == (len(data), 4, 0, 3)
    assert _speedups.legacy_scan(data, 0, ends[2] + 11) == (ends[2], 2, 0, 1)     # inside a header
    assert _speedups.legacy_scan(data, ends[1], ends[3] - 1) == (ends[2], 1, 1, 1)    # inside a message
    assert _speedups.legacy_scan(data, ends[1], ends[1]) == (ends[1], 0, None, None)
    records, pos = _speedups.legacy_decode_span(data, ends[1], len(data), 100, 2, None)
    assert pos == ends[3] and [(r.offset, r.value) for r in records] == [(101, b"v"), (102, b"vv")]
    assert [r.timestamp_type for r in _speedups.legacy_decode_span(data, 0, len(data), 0, 9, 5)[0]] == [1] * 4
    bad = data[:ends[1] + 8] + struct.pack(">i", 13) + data[ends[1] + 12:]
    assert _speedups.legacy_scan(bad, 0, len(bad)) is None                          # below the minimum size
    assert _speedups.legacy_scan(bad, 0, ends[1] + 11) == (ends[1], 1, 0, 0)        # (its header not yet read)
    assert _speedups.legacy_scan(data, 0, len(data) + 1) is None                    # past the buffer
    assert _speedups.legacy_decode_span(data, 0, len(data), INT64[1], 9, None) is None   # offsets past int64
