"""Every command that reads an index file walks it, never holds it: ``index --verify``,
``timeindex --verify``, ``index`` of a ``.txnindex``, ``txn``, the clean-shutdown load (its
``readNextOffset`` over the trusted ``.index``), and an out-of-order ``.index`` (checked
unsorted past ``index_file.SORTED_AT_MOST`` entries, not sorted at 16 bytes an entry).

Before, ``index --verify`` parsed the mapped file into a list (a 100 MB ``.index``: gigabytes),
``txn`` read a ``.txnindex`` whole and kept every entry in a dict, the clean-shutdown load read
the ``.index`` whole, and an out-of-order index was sorted whole. The bound is that of
``test_memory_indexes``: below the file's own size plus the interpreter.
"""

from __future__ import annotations

from array import array

import pytest
from test_memory import _peak_rss_of  # noqa: E402
from test_memory_indexes import BOUND, _txnindex  # noqa: E402

from support.run import peak_rss

pytestmark = pytest.mark.slow
BASE = "00000000000000000000"


def _partition(tmp_path, suffix: str, data: bytes):
    d = tmp_path / "logs" / "t-0"
    d.mkdir(parents=True)
    (d / f"{BASE}.log").write_bytes(b"")
    (d / f"{BASE}{suffix}").write_bytes(data)
    return d


def _bounded(args, what: str) -> str:
    peak, r = _peak_rss_of(args)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert peak < BOUND, f"peak RSS {peak >> 20} MiB for {what}"
    return r.stderr


def _zero_tail(size: int, slot: int) -> bytes:
    """One entry (zeros: slot 0 counts), then a preallocated tail of zeros to ``size`` bytes:
    cheap to check, yet a reader that maps or reads the file whole holds all of it."""
    return bytes(size - size % slot)


@pytest.mark.parametrize("command", ["index", "timeindex"])
def test_index_verify_of_a_100_mb_index_is_bounded(tmp_path, command):
    suffix, slot = (".index", 8) if command == "index" else (".timeindex", 12)
    d = _partition(tmp_path, suffix, _zero_tail(100 << 20, slot))
    _bounded([command, "--verify-index-only", str(d / f"{BASE}{suffix}")], suffix)


@pytest.mark.parametrize("command", ["index", "txn"])
def test_index_and_txn_of_a_txnindex_are_bounded(tmp_path, command):
    # 20 MB: before, ``index`` made an object of each of its 588,000 entries, ``txn`` held them in a dict
    d = _partition(tmp_path, ".txnindex", _txnindex(20_000_000 // 34))
    _bounded(["index", "--verify-index-only", str(d / f"{BASE}.txnindex")] if command == "index" else
             ["txn", "--json", str(d)], ".txnindex")


def test_the_clean_shutdown_load_of_a_100_mb_index_is_bounded(tmp_path):
    d = _partition(tmp_path, ".index", _zero_tail(100 << 20, 8))
    (d.parent / ".kafka_cleanshutdown").write_bytes(b"")
    _bounded(["verify", str(d)], "a 100 MB .index read by the clean-shutdown load")


def test_an_out_of_order_12_mb_index_is_checked_unsorted_and_bounded(tmp_path):
    # offsets rising, positions falling: every entry after the first is out of order (before: sorted, 240 MB)
    n = 1_500_000
    a = array("i", [0] * (2 * n))
    a[0::2] = array("i", range(1, n + 1))
    a[1::2] = array("i", range(n, 0, -1))
    if a.itemsize == 4:
        a.byteswap()
    d = _partition(tmp_path, ".index", a.tobytes())
    code, kb = peak_rss(tmp_path / "out", "index", "--verify-index-only", d / f"{BASE}.index")
    assert code == 1 and kb << 10 < BOUND, f"peak RSS {kb >> 10} MiB"
    assert (f"{n - 1} entries after an entry out of order not checked against the log: an index of 1,048,576 "
            f"entries or more is not sorted, the entries that rise are checked") in \
        (tmp_path / "out").read_text()
