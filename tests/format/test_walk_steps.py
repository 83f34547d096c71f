"""The stepped walk (``Walker.span``, ``resume``, ``take``) against the iterated one.

A caller with its own reader of some entries steps the walk instead of iterating it; taking
the batches a few at a time, or skipping whole entries with ``resume``, must give the same
batches, the same stop and the same stop position as iterating, in C and in Python.
"""

from __future__ import annotations

import random

import pytest

from kdump import _accel
from kdump.format.walk import Walker
from support.run import FIXTURES, fixture_logs

LOGS = [p for p in fixture_logs() if (FIXTURES / p).stat().st_size <= (4 << 20)]


def _stepped(buf: bytes, rnd: random.Random, skipping: bool) -> tuple[list, list[int], Walker]:
    """The batches ``take`` gives in random amounts, and the positions ``resume`` skipped to."""
    w = Walker(buf)
    got: list = []
    skipped: list[int] = []
    while True:
        span = w.span()
        if skipping and span is not None and rnd.random() < 0.3:
            # a consumer's reader taking the next entry whole: where iterating says it ends
            nxt = next(iter(Walker(buf, span[0], len(buf))), None)
            if nxt is not None and nxt.position + nxt.size <= span[1]:
                w.resume(nxt.position + nxt.size)
                skipped.append(nxt.position)
                continue
        batches = w.take(rnd.choice((1, 2, 5, 64)))
        if not batches:
            break
        got.extend(batches)
    w.close()
    return got, skipped, w


@pytest.mark.parametrize("accel", [True, False], ids=["C", "python"])
@pytest.mark.parametrize("rel", LOGS)
def test_stepping_gives_what_iterating_does(rel: str, accel: bool) -> None:
    if accel and _accel.native() is None:
        pytest.skip("no C accelerator")
    buf = (FIXTURES / rel).read_bytes()
    rnd = random.Random(rel)
    with _accel.using(accel):
        it = Walker(buf)
        every = list(it)
        got, _, w = _stepped(buf, rnd, skipping=False)
        assert got == every
        assert (w.stop, w.stop_position, w.ended) == (it.stop, it.stop_position, True)
        assert w.take(5) == [] and w.span() is None
        got, skipped, w = _stepped(buf, rnd, skipping=True)
        assert sorted([b.position for b in got] + skipped) == [b.position for b in every]
        assert (w.stop, w.stop_position) == (it.stop, it.stop_position)


def test_resume_only_forward_and_inside() -> None:
    buf = (FIXTURES / LOGS[0]).read_bytes()
    w = Walker(buf, 0, len(buf))
    with pytest.raises(ValueError):
        w.resume(len(buf) + 1)
    w.resume(len(buf))
    with pytest.raises(ValueError):
        w.resume(0)
    assert w.span() is None and w.take(1) == [] and w.stop is None
