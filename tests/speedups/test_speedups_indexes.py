"""``_speedups.index_clean`` (the C proof that a segment's ``.index``/``.timeindex`` have no
finding) against the Python checks it short-cuts (kdump/check/indexes/).

C may only say "clean" where Python finds nothing; where it says "not clean" Python decides.
Inputs: every fixture segment with its index files, and a damage matrix on a small partition
(each kind of index finding, and clean files of the other conventions that C leaves to
Python). ``kdump verify`` must give the same output and exit status both ways on each.
"""

from __future__ import annotations

import os
import struct

import pytest

from kdump import _accel
from kdump import findings as F

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.check.indexes import forward_pass  # noqa: E402
from kdump.check.indexes.forward_pass import index_findings  # noqa: E402
from kdump.check.scan import scan_segment  # noqa: E402
from kdump.encode import build_v2_batch  # noqa: E402
from kdump.storage.names import filename_offset  # noqa: E402
from support.damage import FIXTURES  # noqa: E402
from support.run import fixture_logs, run_kdump  # noqa: E402

LOGS = [p for p in fixture_logs() if os.path.exists(os.path.join(FIXTURES, p[:-4] + ".index"))
        or os.path.exists(os.path.join(FIXTURES, p[:-4] + ".timeindex"))]


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def both_ways(log: bytes, base: int, index: bytes | None, timeindex: bytes | None) -> tuple[bool, tuple]:
    """(C's verdict, Python's findings of each file) for one segment."""
    scan = scan_segment(log, base_offset=base)
    clean = _speedups.index_clean(log, scan.valid_bytes, base, index, timeindex)
    with _accel.using(False):
        found = index_findings("-", base, scan, index, timeindex, log_buf=log)
    return clean, found


def test_fixtures_c_clean_only_where_python_finds_nothing():
    proved = 0
    for rel in LOGS:
        path = os.path.join(FIXTURES, rel)
        log = _read(path)
        assert log is not None
        clean, (ix, tx) = both_ways(log, filename_offset(path) or 0, _read(path[:-4] + ".index"),
                                    _read(path[:-4] + ".timeindex"))
        if clean:
            assert ix == [] and tx == [], rel
            proved += 1
    assert proved >= len(LOGS) // 3, (proved, len(LOGS))     # the fast path is really taken


def test_fixtures_verify_same_output_both_ways():
    dirs = sorted({os.path.dirname(os.path.join(FIXTURES, p)) for p in LOGS})
    for d in dirs:
        for args in (("verify", d), ("verify", "--json", d)):
            got = run_kdump(*args)
            with _accel.using(False):
                ref = run_kdump(*args)
            assert got == ref, (args, got, ref)


# -- a damage matrix on a partition of six batches --------------------------------------------

BASE = 100


def _segment() -> tuple[bytes, list[tuple[int, int, int, int]]]:
    """Six batches of three records each: the log and each batch's (position, first, last, max ts)."""
    log, batches = b"", []
    for i in range(6):
        first = BASE + 3 * i
        recs = [(d, 1_000 + 10 * i + d, b"k", b"v" * 40) for d in range(3)]
        b = build_v2_batch(recs, base_offset=first)
        batches.append((len(log), first, first + 2, 1_002 + 10 * i))
        log += b
    return log, batches


LOG, BATCHES = _segment()


def ix(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", o - BASE, p) for o, p in entries)


def tx(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, o - BASE) for ts, o in entries)


def at(i: int) -> tuple[int, int]:
    """The usual .index entry of batch i."""
    return BATCHES[i][2], BATCHES[i][0]


def ts(i: int) -> tuple[int, int]:
    """The usual .timeindex entry of batch i."""
    return BATCHES[i][3], BATCHES[i][2]


GOOD_IX = ix(at(2), at(4))
GOOD_TX = tx(ts(2), ts(4), ts(5))       # a closed segment's: the roll entry last
ZEROS = bytes(8 * 4)

# (name, .index, .timeindex, the finding kind Python gives, or None: clean, C may leave it to Python)
MATRIX = [
    ("clean", GOOD_IX, GOOD_TX, None),
    ("clean, no entries", b"", tx(ts(5)), None),
    ("clean, zero tails", GOOD_IX + ZEROS, tx(ts(2), ts(4)) + bytes(36), None),
    ("clean, all zero", bytes(80), bytes(120), None),
    ("clean, base-offset convention", ix((BATCHES[2][1], BATCHES[2][0])), GOOD_TX, None),
    ("index partial", GOOD_IX + b"\1\2\3", GOOD_TX, F.INDEX_PARTIAL),
    ("index after tail", GOOD_IX + bytes(8) + ix(at(5)), GOOD_TX, F.INDEX_AFTER_TAIL),
    ("index below base", ix((BASE - 1, BATCHES[1][0]), at(4)), GOOD_TX, F.INDEX_BELOW_BASE),
    ("index negative position", ix((BATCHES[2][2], -8)), GOOD_TX, F.INDEX_BELOW_BASE),
    ("index not increasing", ix(at(4), at(2)), GOOD_TX, F.INDEX_ORDER),
    ("index same entry twice", ix(at(2), at(2)), GOOD_TX, F.INDEX_ORDER),
    ("index mid batch", ix((BATCHES[2][2], BATCHES[2][0] + 5)), GOOD_TX, F.INDEX_MID_BATCH),
    ("index offset mismatch", ix((BATCHES[1][2], BATCHES[2][0])), GOOD_TX, F.INDEX_MISMATCH),
    ("index past end", ix(at(2), (BATCHES[5][2] + 9, len(LOG) + 100)), GOOD_TX, F.INDEX_PAST_END),
    ("index offset past the log", ix((BATCHES[5][2] + 9, BATCHES[5][0])), GOOD_TX, F.INDEX_PAST_END),
    ("timeindex partial", GOOD_IX, GOOD_TX + b"\1", F.TIME_PARTIAL),
    ("timeindex after tail", GOOD_IX, tx(ts(2)) + bytes(12) + tx(ts(5)), F.TIME_AFTER_TAIL),
    ("timeindex below base", GOOD_IX, tx((BATCHES[1][3], BASE - 1), ts(5)), F.TIME_BELOW_BASE),
    ("timeindex backwards", GOOD_IX, tx(ts(2), (BATCHES[1][3], BATCHES[4][2]), ts(5)), F.TIME_BACKWARDS),
    ("timeindex not increasing", GOOD_IX, tx(ts(4), ts(2), ts(5)), F.TIME_ORDER),
    ("timeindex not max", GOOD_IX, tx((BATCHES[1][3], BATCHES[2][2]), ts(5)), F.TIME_NOT_MAX),
    ("timeindex mismatch", GOOD_IX, tx((BATCHES[2][3], BATCHES[2][2] - 1), ts(5)), F.TIME_MISMATCH),
    ("timeindex past end", GOOD_IX, tx(ts(5), (BATCHES[5][3], BATCHES[5][2] + 5)), F.TIME_PAST_END),
    ("timeindex no final entry", GOOD_IX, tx(ts(2), ts(4)), F.TIME_NO_FINAL),
    ("timeindex empty, trimmed", GOOD_IX, b"", F.TIME_NO_FINAL),
    ("timeindex same entry twice", GOOD_IX, tx(ts(2), ts(2), ts(5)), None),
]


@pytest.mark.parametrize("name,index,timeindex,kind", MATRIX, ids=[m[0] for m in MATRIX])
def test_damage_matrix(tmp_path, name, index, timeindex, kind):
    clean, (ix_found, tx_found) = both_ways(LOG, BASE, index, timeindex)
    kinds = {f.kind for f in ix_found + tx_found}
    if kind is not None:
        assert kind in kinds and not clean, (name, kinds)
    elif clean:
        assert not kinds, name
    if name == "clean":
        assert clean       # the usual files are proved in C
    part = tmp_path / "t-0"
    part.mkdir()
    stem = f"{BASE:020d}"
    (part / f"{stem}.log").write_bytes(LOG)
    (part / f"{stem}.index").write_bytes(index)
    (part / f"{stem}.timeindex").write_bytes(timeindex)
    for args in (("verify", str(part)), ("verify", "--json", str(part))):
        got = run_kdump(*args)
        with _accel.using(False):
            ref = run_kdump(*args)
        assert got == ref, (name, args)
        if kind is not None and "--json" in args:
            assert kind in got.out


def test_cut_log_walked_only_to_the_kept_bytes():
    """An entry into bytes the broker's recovery cuts is past the end: C walks to valid_bytes only."""
    torn = LOG[:BATCHES[5][0] + 20]
    clean, (ix_found, tx_found) = both_ways(torn, BASE, GOOD_IX, tx(ts(2), ts(4)))
    assert clean and not ix_found and not tx_found
    clean, (_, tx_found) = both_ways(torn, BASE, GOOD_IX, GOOD_TX)
    assert not clean and {f.kind for f in tx_found} == {F.TIME_PAST_END}


def test_not_buffers_and_large_mappings_go_to_python(monkeypatch):
    assert _speedups.index_clean(LOG, len(LOG), BASE, GOOD_IX, None) is True
    assert _speedups.index_clean(LOG, len(LOG), BASE, object(), None) is False
    assert _speedups.index_clean(object(), 0, BASE, None, None) is False
    assert _speedups.index_clean(LOG, len(LOG), 1 << 70, GOOD_IX, None) is False
    monkeypatch.setattr(forward_pass, "C_PROOF_BYTES", 10)
    scan = scan_segment(LOG, base_offset=BASE)
    assert forward_pass._proved_clean(LOG, BASE, scan.valid_bytes, GOOD_IX, GOOD_TX)        # bytes: no pages to drop
    assert not forward_pass._proved_clean(memoryview(LOG), BASE, scan.valid_bytes, GOOD_IX, GOOD_TX)
