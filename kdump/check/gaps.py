"""Offsets that do not follow one another, and the ones the log cleaner explains.

One rule, two reports. ``follow`` finds the gaps (offset A followed by B > A + 1); the
text view prints them all as DumpLogSegments does (per file, from -1: render/text.py).
kdump's own views (table, JSON) report, on stderr after all files, only what an operator
has to look at: ``PartitionGaps`` follows one partition's live segments in offset order and
leaves out

- the start of the log: the first record at the first segment's base offset (what
  retention or the log start offset left), or anywhere when --start-offset chose the start;
- gaps the cleaner explains: the log dir's cleaner-offset-checkpoint says the partition is
  cleaned past A, so compaction (or the cleanup of transaction markers and aborted data)
  may have removed what was between. These are counted, one line per partition.

Leftover files (.deleted, .cleaned, .swap) are not the log and are not followed. With a
time range the records shown are a selection, so there is no report at all. The report is
a note, as DumpLogSegments' is: it does not change the exit status. ``PartitionGaps.report``
returns the data; ``kdump.render.gaps`` words it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple, cast

from kdump.errors import KdumpError
from kdump.format.checkpoint import CLEANER_OFFSET_CHECKPOINT, parse_checkpoint
from kdump.storage import fs
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import read_small


class GapReport(NamedTuple):
    """kdump's gap report for one partition (``kdump.render.gaps`` words it)."""

    shown: list[tuple[str, list[tuple[int, int]], int]]   # (file, the first gaps to list, how many) per file
    explained: int                                  # gaps the cleaner-offset-checkpoint explains
    directory: str                                  # the partition directory
    cleaned: int | None                             # the checkpoint's offset


# Gaps kept per file for kdump's report (it lists fewer); the rest are counted. A batch of
# millions of records all at one offset is millions of gaps.
KEPT_PER_FILE = 100


def follow(records: Iterable, last: int, gaps: list[tuple[int, int]] | _FileGaps) -> int:
    """Append (previous offset, offset) to ``gaps`` for each record that does not follow
    ``last`` + 1; return the last offset seen."""
    for r in records:
        offset = r.offset
        if offset != last + 1:
            gaps.append((last, offset))
        last = offset
    return last


def cleaned_up_to(log_dir: str, topic: str | None, partition: int | None) -> int | None:
    """The partition's offset in the log dir's cleaner-offset-checkpoint (None: not cleaned,
    or no readable checkpoint: then nothing is explained)."""
    if topic is None or partition is None:
        return None
    try:
        entries = parse_checkpoint(read_small(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)),
                                   CLEANER_OFFSET_CHECKPOINT)
    except (OSError, KdumpError):
        return None
    return next((e.offset for e in entries if e.topic == topic and e.partition == partition), None)


class PartitionGaps:
    """kdump's gap report for the segments of one partition, fed as they are dumped: per file
    the first KEPT_PER_FILE gaps the cleaner does not explain, and how many there are.

    ``dump -j`` may cut a partition into pieces rendered apart (``run.pieces``): a piece after
    the first is ``resumed`` (what came before is unknown to it) and notes what it began
    with; ``absorb`` adds it to the report of the pieces before, in order, as if one report
    had followed them all.
    """

    def __init__(self, start_chosen: bool = False) -> None:
        self.start_chosen = start_chosen
        self._last: int | None = None          # None: no record of the log seen yet
        self._file: LogFile | None = None
        self._gaps = _FileGaps(self)
        self._by_file: list[tuple[LogFile, _FileGaps]] = []
        self._cleaned: tuple[int | None] | None = None     # (offset,) once read
        self._dir: str | None = None           # the partition directory
        self._where: tuple | None = None       # its log dir, topic and partition
        self.explained = 0
        self.resumed = False
        self.began_base: int | None = None     # resumed: the base of a file begun before any record
        self.first_offset: int | None = None   # resumed: the first record seen
        self._first_gaps: _FileGaps | None = None   # resumed: where that record's gap belongs

    def resume(self, f: LogFile | None = None) -> None:
        """A piece after the first: nothing before it is known; ``f``: it starts inside that
        (followed) file, whose beginning an earlier piece saw."""
        self.resumed = True
        if f is not None:
            self.begin_file(f)
            self.began_base = None

    def begin_file(self, f: LogFile) -> None:
        followed = f.kind == "log" and f.leftover is None
        self._file = f if followed else None
        self._gaps = _FileGaps(self)
        if followed and self._dir is None:
            self._dir = os.path.dirname(f.path)
            self._where = (os.path.dirname(os.path.dirname(fs.abspath(f.path))), f.topic, f.partition)
        if self.resumed:
            if followed and self.first_offset is None and self.began_base is None:
                self.began_base = f.base_offset
        elif followed and self._last is None and f.base_offset is not None and not self.start_chosen:
            self._last = f.base_offset - 1     # the log starts at its first segment's base offset

    def records(self, records: Iterable) -> None:
        if self._file is None:
            return
        if self._last is None:                 # the first record shown is where the log starts
            records = iter(records)
            first = next(records, None)
            if first is None:
                return
            if self.resumed and self.first_offset is None:
                self.first_offset, self._first_gaps = first.offset, self._gaps
            self._last = first.offset
        self._last = follow(records, self._last, self._gaps)

    def span(self, first: int | None, last: int | None) -> None:
        """``records`` for records whose offsets are ``first`` .. ``last``, one after another."""
        if self._file is None or first is None:
            return
        if self._last is None:
            if self.resumed and self.first_offset is None:
                self.first_offset, self._first_gaps = first, self._gaps
        elif first != self._last + 1:
            self._gaps.append((self._last, first))
        self._last = last

    def end_file(self) -> None:
        if self._file is not None:
            self._by_file.append((self._file, self._gaps))
        self._file = None
        self._gaps = _FileGaps(self)

    def absorb(self, q: PartitionGaps) -> None:
        """Add the report of the next piece ``q`` (resumed) of this partition, in order."""
        last = self._last
        if last is None and q.began_base is not None and not self.start_chosen:
            last = q.began_base - 1
        if q.first_offset is not None:
            if last is not None and q.first_offset != last + 1:
                cast(_FileGaps, q._first_gaps).prepend((last, q.first_offset))     # set with first_offset
            last = q._last
        self._last = last
        done = q._by_file
        if self._file is not None:      # this piece ended inside a file, which ``q`` goes on with
            if done:
                done = [(done[0][0], self._gaps.joined(done[0][1]))] + done[1:]
            else:
                q._gaps = self._gaps.joined(q._gaps)
        self._by_file += done
        self._file, self._gaps = q._file, q._gaps
        self.explained += q.explained
        self._where = self._where or q._where
        self._cleaned = self._cleaned or q._cleaned
        self._dir = self._dir or q._dir

    def cleaned(self) -> int | None:
        """The partition's cleaner-offset-checkpoint offset (read once, at the first gap)."""
        if self._cleaned is None:
            self._cleaned = (cleaned_up_to(*self._where) if self._where else None,)
        return self._cleaned[0]

    def report(self) -> GapReport | None:
        """The gaps to show, per followed file, and how many the cleaner explains (None: no gap)."""
        if not any(g.count for _, g in self._by_file) and not self.explained:
            return None
        shown = [(f.path, g.first, g.count) for f, g in self._by_file if g.count]
        return GapReport(shown, self.explained, self._dir or ".", self._cleaned[0] if self._cleaned else None)


class _FileGaps:
    """The gaps of one file as ``follow`` appends them: those the cleaner explains counted on
    the partition, the others counted here, the first KEPT_PER_FILE kept."""

    __slots__ = ("owner", "first", "count")
    first: list[tuple[int, int]]

    def __init__(self, owner: PartitionGaps) -> None:
        self.owner, self.first, self.count = owner, [], 0

    def append(self, gap: tuple[int, int]) -> None:
        owner = self.owner
        cleaned = owner.cleaned()
        if cleaned is not None and gap[0] < cleaned:
            owner.explained += 1
            return
        self.count += 1
        if len(self.first) < KEPT_PER_FILE:
            self.first.append(gap)

    def prepend(self, gap: tuple[int, int]) -> None:
        """A gap found before the ones here (at the start of a resumed piece)."""
        first, count = self.first, self.count
        self.first, self.count = [], 0
        self.append(gap)
        self.first = (self.first + first)[:KEPT_PER_FILE]
        self.count += count

    def joined(self, later: _FileGaps) -> _FileGaps:
        """These gaps, then ``later``'s: one file's, from two pieces."""
        self.first = (self.first + later.first)[:KEPT_PER_FILE]
        self.count += later.count
        return self
