"""The C writers at the edges the sanitizer build (.ci/sanitize) watches: an offset at the end
of int64, a run that writes nothing in a fresh process, a batch declaring far more records
than its bytes hold. Each case once failed under -fsanitize=address,undefined (a signed
overflow, a memcpy from NULL, an allocation sized from the declared count); here each must
give what the pure-Python reference gives, and hold no more memory than its bytes call for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import pytest

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.encode import build_v2_batch  # noqa: E402
from kdump.model import Batch  # noqa: E402
from kdump.render import text  # noqa: E402
from support.damage import FIXTURES  # noqa: E402

INT64_MAX = (1 << 63) - 1
TS = 1_700_000_000_000


def _kdump(path, *args, speedups: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("KDUMP_NO_SPEEDUPS", None)
    if not speedups:
        env["KDUMP_NO_SPEEDUPS"] = "1"
    return subprocess.run([sys.executable, "-m", "kdump", "dump", *args, str(path)], capture_output=True, env=env)


def _same_as_python(path, *args) -> bytes:
    c, py = _kdump(path, *args), _kdump(path, *args, speedups=False)
    assert (c.returncode, c.stdout, c.stderr) == (py.returncode, py.stdout, py.stderr)
    return c.stdout


def test_two_records_at_the_last_offset(tmp_path):
    """One batch at base offset 2^63-1 holding two records of offset delta 0: the second does
    not follow the first (there is no offset after 2^63-1), so every writer leaves the batch to
    Python's gap report, and no one adds 1 to 2^63-1."""
    seg = build_v2_batch([(0, TS, None, None), (0, TS, None, None)], base_offset=INT64_MAX, last_offset_delta=0)
    assert len(seg) == 75
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(seg)
    section = seg[61:]
    batch = Batch(0, INT64_MAX, INT64_MAX, 2, len(seg), 2, 0, True, 0, -1, TS, TS, -1, -1, -1)
    assert _speedups.json_v2_line('"f"', batch, section, 0) is None
    assert _speedups.json_v2_run('"f"', seg, 0, len(seg), 16, 100, 1 << 20, 0, 1 << 20) == (None, 0, None, None)
    gaps: list = []
    out = bytearray()
    mode = text.C_METADATA
    assert _speedups.text_v2_run(out, seg, 0, len(seg), 16, 100, mode, -1, gaps, 1 << 20)[0] == len(seg)
    assert gaps == [(-1, INT64_MAX), (INT64_MAX, INT64_MAX)]
    assert _speedups.text_v2_run(bytearray(), seg, 0, len(seg), 16, 100, mode, -1, None, 1 << 20) == (0, None, None)
    for args in (("--records", "--json"), ("--records", "--data"), ("--deep-iteration",)):
        _same_as_python(path, *args)


def test_nothing_written_in_a_fresh_process():
    """A zstd segment's first batch is no run writer's: the run ends having written nothing,
    before any call gave the writer's buffer memory."""
    out = _same_as_python(FIXTURES / "generated" / "zstd-v2-0" / "00000000000000000000.log", "--records")
    assert b"compresscodec: zstd" in out


@pytest.mark.parametrize("writer", ["text", "json"])
def test_a_declared_count_sizes_nothing(writer):
    """A 70-byte batch declaring 100 million records: the run writers reserve room for the
    records there are, not for the count (600 bytes a record would be 56 GiB)."""
    count = 100_000_000
    seg = build_v2_batch([(0, TS, None, b"ab")], records_count=count)
    assert len(seg) == 70
    tracemalloc.start()
    try:
        if writer == "text":
            got = _speedups.text_v2_run(bytearray(), seg, 0, len(seg), 16, count, text.C_METADATA, -1, None, 1 << 20)
            want = (0, None, None)
        else:
            got = _speedups.json_v2_run('"f"', seg, 0, len(seg), 16, count, 1 << 20, 0, 1 << 20)
            want = (None, 0, None, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == want      # the records do not decode: Python's error is the one to show
    assert peak < 16 << 20


def test_a_declared_count_through_the_cli(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_v2_batch([(0, TS, None, b"ab")], records_count=100_000_000))
    for args in (("--records",), ("--records", "--json"), ("--records", "--max-records-per-batch", "200000000")):
        _same_as_python(path, *args)


def test_a_timestamp_past_int64_wraps_in_every_reader(tmp_path):
    """baseTimestamp + timestampDelta past 2^63-1 wraps as Java's long does (records.py's
    long_add): the one C record loop wraps it too, so the run writers take the batch and write
    what Python writes, where one of them used to hand it back."""
    top = INT64_MAX
    seg = build_v2_batch([(0, top - 1, None, b"a"), (1, top + 10, b"k", b"b")], base_timestamp=top - 1,
                         max_timestamp=top)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(seg)
    with _accel.using(False):
        from kdump.format.walk import Walker, decode_records

        batch = next(iter(Walker(seg)))
        records = decode_records(seg, batch)
    assert records[1].timestamp == top + 10 - (1 << 64)
    assert _speedups.decode_v2_records(seg[61:], batch) == records
    out = bytearray()
    assert _speedups.text_v2_run(out, seg, 0, len(seg), 16, 100, text.C_METADATA | text.C_DATA, -1, None,
                                 1 << 20) == (len(seg), 0, 1)
    assert f"CreateTime: {top + 10 - (1 << 64)} ".encode() in out
    lines, pos, first, last = _speedups.json_v2_run('"f"', seg, 0, len(seg), 16, 100, 1 << 20, 0, 1 << 20)
    assert (pos, first, last) == (len(seg), 0, 1) and f'"timestamp":{top + 10 - (1 << 64)},' in lines
    for args in (("--records", "--json"), ("--deep-iteration", "--print-data-log")):
        _same_as_python(path, *args)
