"""``format.walk.entry_at_or_after`` (where ``dump -j`` cuts a segment with no sane index)
and its C twin ``v2_hop``: the same position from both, and the position of the Walker's
own batch there, on real segments, on hostile bytes (all 256 values) and on damage."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel
from kdump.encode import build_legacy_wrapper, build_v2_batch
from kdump.format.walk import Walker, entry_at_or_after, last_offset_at
from support.run import fixture_logs

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOW = 1_700_000_000_000


def _both(buf: bytes, pos: int, target: int, end: int) -> int | None:
    with _accel.using(False):
        pure = entry_at_or_after(buf, pos, target, end)
    with _accel.using(True):
        fast = entry_at_or_after(buf, pos, target, end)
    assert fast == pure, (pos, target, end)
    return pure


def _walked(buf: bytes) -> tuple[list[int], int | None]:
    """The Walker's batch positions, and where it stopped on damage (None: it did not)."""
    w = Walker(buf)
    positions = [b.position for b in w]
    return positions, None if w.stop is None else w.stop_position


def _mixed() -> bytes:
    """v2 batches of every codec between v0 and v1 wrappers and plain messages."""
    rng = random.Random(5)
    out, offset = [], 0
    for n in range(60):
        k = rng.randrange(1, 6)
        if n % 7 == 3:
            inner = [(offset + i, NOW, b"k", rng.randbytes(rng.randrange(50))) for i in range(k)]
            out.append(build_legacy_wrapper(inner, magic=n % 2, codec=1 + n % 3))
        else:
            recs = [(offset + i, NOW, None, rng.randbytes(rng.randrange(300))) for i in range(k)]
            out.append(build_v2_batch(recs, base_offset=offset, codec=rng.choice([0, 1, 3, 4])))
        offset += k
    return b"".join(out)


MIXED = _mixed()


@pytest.mark.parametrize("rel", [p for p in fixture_logs() if p.startswith("real" + os.sep)][:40])
def test_real_segments_cut_where_the_walker_has_a_batch(rel):
    buf = open(os.path.join(ROOT, "fixtures", rel), "rb").read()
    positions, stopped = _walked(buf)
    for target in sorted({0, 1, len(buf) // 3, len(buf) // 2, len(buf) - 20, len(buf)} | set(positions[:50:7])):
        got = _both(buf, 0, target, len(buf))
        want = next((p for p in positions if p >= target), None)
        if stopped is None or (want is not None and want < stopped):
            assert got == want, target


def test_every_target_on_mixed_formats():
    positions, stopped = _walked(MIXED)
    assert stopped is None
    for target in range(0, len(MIXED), 97):
        got = _both(MIXED, 0, target, len(MIXED))
        assert got == next((p for p in positions if p >= target), None)
        if got is not None:
            assert last_offset_at(MIXED, got) == next(b.last_offset for b in Walker(MIXED, got))


def test_damage_stops_it_before_the_target():
    positions, _ = _walked(MIXED)
    bad = bytearray(MIXED)
    cut = positions[20]
    bad[cut + 8:cut + 12] = (5).to_bytes(4, "big")       # a size below every minimum
    assert _both(bytes(bad), 0, positions[30], len(bad)) is None
    assert _both(bytes(bad), 0, positions[10], len(bad)) == positions[10]
    bad[cut + 8:cut + 12] = (1 << 30).to_bytes(4, "big")    # past the end
    assert _both(bytes(bad), 0, cut + 1, len(bad)) is None
    bad[cut + 8:cut + 12] = MIXED[cut + 8:cut + 12]
    bad[cut + 16] = 7                                         # an unknown magic
    assert _both(bytes(bad), 0, cut + 1, len(bad)) is None
    assert _both(MIXED, 0, len(MIXED) + 5, len(MIXED)) is None    # past the end: no entry starts there


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hostile_bytes_give_the_same_position(data):
    buf = bytearray(MIXED)
    for _ in range(data.draw(st.integers(0, 6))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf += data.draw(st.binary(max_size=80))
    end = data.draw(st.integers(0, len(buf)))
    pos = data.draw(st.integers(0, len(buf)))
    target = data.draw(st.integers(0, len(buf) + 100))
    _both(bytes(buf), pos, target, end)


def _v2_hops(buf: bytes, entries: list[tuple[int, int]], pos: int, target: int) -> int:
    """Where v2_hop must stop: hopping the v2 entries from ``pos`` while before ``target``; at
    the first entry of another magic (``entries``: each entry's position and magic)."""
    for at, magic in entries:
        if at < pos:
            continue
        if at >= target or magic != 2:
            return at
    return len(buf)


def test_v2_hop_itself_hops_the_v2_entries():
    """The twin test above compares whole answers, which the Python hop would give alone if
    v2_hop hopped nothing: here C's own answer is the position the v2 runs lead to."""
    entries = [(b.position, b.magic) for b in Walker(MIXED)]
    hopped = 0
    for i, (pos, _) in enumerate(entries):
        for target in (pos + 1, entries[min(i + 3, len(entries) - 1)][0], len(MIXED)):
            got = _speedups.v2_hop(MIXED, pos, len(MIXED), target)
            assert got == _v2_hops(MIXED, entries, pos, target), (pos, target)
            hopped += got > pos
    assert hopped > len(entries)
