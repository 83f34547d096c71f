"""Index files are walked, never held: a 100 MB ``.index``, ``.timeindex`` or ``.txnindex`` beside
a 0-byte ``.log`` costs ``verify`` and a ``recover`` plan a chunk of memory, not gigabytes.

Before, every entry became a Python object (a 100 MB ``.index``: 3.1 GB and 20-60 s; a 100 MB
``.txnindex``: 1.1 GB). The bound, 80 MiB, is below the file's own size plus the interpreter:
a check that read the file whole would fail it. Peak memory is that of a kdump subprocess
(``test_memory._peak_rss_of``).
"""

from __future__ import annotations

import struct
from array import array

import pytest
from test_memory import _peak_rss_of  # noqa: E402

MiB = 1 << 20
BOUND = 80 * MiB
N_INDEX = 100_000_000 // 8


def _index(n: int) -> bytes:
    """``n`` offset index entries (relative offset, position), big-endian, in order."""
    a = array("i", range(1, 2 * n + 1))     # (1, 2), (3, 4), ...: past the end of a 0-byte log
    if a.itemsize == 4:
        a.byteswap()
    return a.tobytes()


def _timeindex(n: int) -> bytes:
    """``n`` time index entries (timestamp i, relative offset i), both increasing."""
    entry = struct.Struct(">qi")
    return b"".join(entry.pack(i, i) for i in range(1, n + 1))


def _txnindex(n: int) -> bytes:
    """``n`` aborted transactions (version 0, producer 7, first 2i, last 2i+1, LSO 2i)."""
    entry = struct.Struct(">hqqqq")
    return b"".join(entry.pack(0, 7, 2 * i, 2 * i + 1, 2 * i) for i in range(n))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["verify", "recover"])
@pytest.mark.parametrize("what", ["index", "timeindex", "txnindex"])
def test_a_100_mb_index_beside_an_empty_log_is_checked_in_bounded_memory(tmp_path, command, what):
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    if what == "txnindex":
        (d / "00000000000000000000.txnindex").write_bytes(_txnindex(100_000_000 // 34))
    elif what == "timeindex":
        (d / "00000000000000000000.timeindex").write_bytes(_timeindex(100_000_000 // 12))
    else:
        (d / "00000000000000000000.index").write_bytes(_index(N_INDEX))
    peak, r = _peak_rss_of([command, str(d)])
    assert r.returncode in (0, 1), r.stderr     # damage found, or a plan: no error
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert peak < BOUND, f"peak RSS {peak >> 20} MiB for a 100 MB {what}"


@pytest.mark.parametrize("option", ["--start-offset", "--start-time"])
def test_a_dump_seeks_with_a_40_mb_index_in_bounded_memory(tmp_path, option):
    """The seek read the ``.index``/``.timeindex`` whole (up to 256 MB) and made every entry
    an object: 40 MB cost about 600 MB. Now it is checked a chunk at a time and searched a
    slot a probe. The log is sparse, as long as the sane index needs."""
    n = 40 * MiB // 8
    d = tmp_path / "t-0"
    d.mkdir()
    with open(d / "00000000000000000000.log", "wb") as f:
        f.truncate(2 * n + 1)                   # every position of the index inside the log
    if option == "--start-time":
        (d / "00000000000000000000.timeindex").write_bytes(_timeindex(12 * MiB // 12))   # ~120 MB as objects
    (d / "00000000000000000000.index").write_bytes(_index(n))
    peak, r = _peak_rss_of(["dump", option, str(n), str(d / "00000000000000000000.log")])
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert peak < BOUND, f"peak RSS {peak >> 20} MiB for a 40 MB index"
