"""``dump`` of one big segment over every core: the segment cut into ranges, rendered apart.

A partition (the unit of ``-j``) whose segment is larger than ``--split-bytes`` becomes
several pieces: the files before it with its first range, then each later range alone, then
the files after it. The cuts are batch boundaries (``storage.split``: the ``.index`` when it
passes a sanity check, else a walk of the batch headers). Each piece has a renderer of its
own; the output is written in order (``ordered_output``), the same bytes as one renderer
reading the whole partition. What a renderer carries from one batch to the next, the gap
reports, is joined here in order (``Joiner``). A range whose walk ends before the next range
(damage, or a cut that was not a boundary of its walk, which it then reads past) ends the
segment there, as ``-j 1`` does, and cuts the segment's later pieces: they write nothing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kdump.storage.logdir import LOG, LogFile
from kdump.storage.mapped import file_size
from kdump.storage.split import cuts


class Range(NamedTuple):
    start: int              # a batch boundary
    stop: int | None        # where the next range starts (None: the end of the file)
    first: bool             # the file's first range: it begins the file
    last_piece: int         # the index of the file's last piece: what an early end cuts through


class Piece(NamedTuple):
    entries: list[tuple[LogFile, bool, Range | None]]     # (file, named itself, range or whole)
    partition: int          # which unit of ``-j`` (partition) it is part of
    resumed: bool           # not the partition's first piece


class Result(NamedTuple):
    status: int
    matched: int            # batches shown
    summary: list           # DumpLogSegments' closing report blocks
    gaps: Any               # the piece's PartitionGaps (JSON, table), or None
    cut_through: int | None  # the last piece this one cuts, or None


def plan(units: list[list[tuple[LogFile, bool]]], split_bytes: int) -> list[Piece]:
    """The pieces of ``units`` (a partition's files each), segments larger than
    ``split_bytes`` cut into ranges; ``split_bytes`` 0: none cut."""
    pieces: list[Piece] = []
    for u, unit in enumerate(units):
        current: list = []
        resumed = False
        for f, explicit in unit:
            positions = _cut_positions(f, split_bytes)
            if not positions:
                current.append((f, explicit, None))
                continue
            starts = [0] + positions
            last_piece = len(pieces) + len(starts) - 1
            for k, (start, stop) in enumerate(zip(starts, positions + [None])):
                current.append((f, explicit, Range(start, stop, k == 0, last_piece)))
                pieces.append(Piece(current, u, resumed))
                current, resumed = [], True
        if current or not pieces or pieces[-1].partition != u:
            pieces.append(Piece(current, u, resumed))
    return pieces


def _cut_positions(f: LogFile, split_bytes: int) -> list[int]:
    if split_bytes <= 0 or f.kind != LOG or f.leftover is not None or f.base_offset is None:
        return []
    try:
        size = file_size(f.path)
    except OSError:
        return []
    return [c.position for c in cuts(f, size, split_bytes, walk=True)]


def cut_of(result: Result | None) -> int | None:
    return None if result is None else result.cut_through


class Joiner:
    """The pieces' results in order, their gap reports joined: what one renderer per
    partition would have reported."""

    def __init__(self) -> None:
        self.partition: int | None = None
        self.gaps = None                # the partition's PartitionGaps so far

    def add(self, piece: Piece, result: Result | None) -> list:
        """The closing report blocks due once this piece is in (None: a cut piece)."""
        blocks = self._partition_done() if piece.partition != self.partition else []
        self.partition = piece.partition
        if result is None:
            return blocks
        if result.gaps is not None:
            if self.gaps is None:
                self.gaps = result.gaps
            else:
                self.gaps.absorb(result.gaps)
        return blocks + list(result.summary)

    def finish(self) -> list:
        return self._partition_done()

    def _partition_done(self) -> list:
        if self.gaps is None:
            return []
        from kdump.render.gaps import gap_summary

        gaps, self.gaps = self.gaps, None
        return gap_summary(gaps)
