"""Flood control for the human views: one line for each run of findings of one kind.

One flipped byte can leave every later index entry pointing past the end of the log:
hundreds of findings of one kind, one after the other, in one file. The text and table
views show each such run as one line with the count and the byte and offset ranges; the
JSON view keeps every finding. Keyed on the finding's kind string only, so it holds for
any kind, present or future.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from kdump.model import Finding


def runs(findings: Iterable[Finding]) -> Iterator[list[Finding]]:
    """Consecutive findings of the same kind, each with a byte position (a finding with no
    position, such as a "not listed" note, is a run of its own)."""
    run: list[Finding] = []
    for f in findings:
        if run and (f.kind != run[-1].kind or f.position is None or run[-1].position is None):
            yield run
            run = []
        run.append(f)
    if run:
        yield run


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}..{hi}"


def where(run: list[Finding]) -> str:
    """'bytes 0..1984, offsets 32..7721' for a run (offsets only when its findings have them)."""
    positions = [f.position for f in run if f.position is not None]
    offsets = [f.offset for f in run if f.offset is not None]
    parts = [f"bytes {_span(positions)}"] if positions else []
    if offsets:
        parts.append(f"offsets {_span(offsets)}")
    return ", ".join(parts)


def collapsed(findings: Iterable[Finding], one: Callable[[Finding], str],
              many: Callable[[list[Finding]], str]) -> list[str]:
    """The display lines: ``one(f)`` for a lone finding, ``many(run)`` for a run of two or more."""
    return [one(run[0]) if len(run) == 1 else many(run) for run in runs(findings)]


def more_like_it(run: list[Finding]) -> str:
    """The first message of a run and how many follow it."""
    n = len(run) - 1
    return f"{run[0].message}; {n} more like it"
