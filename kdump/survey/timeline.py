"""``kdump info --timeline``: a partition's segments placed on the offset and time axes.

Per segment: its offsets and times, bytes, batches and records (so a record rate), the
offsets missing inside it and before it (what compaction, retention or a lost segment left),
and the findings ``verify`` makes on it and its indexes, by class. Built from batch headers
(``format.walk``) and the verify check of the partition (``check.partition``); drawn by
``render.timeline`` on a terminal and ``render.timeline_html`` as a page.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from kdump import findings as F
from kdump.check.partition import VerifyOptions, check_directory, directory_context
from kdump.errors import KdumpError
from kdump.format.walk import Walker
from kdump.model import Finding
from kdump.storage.logdir import LOG, LogFile
from kdump.storage.mapped import MappedFile

# Gaps kept per segment for drawing: the widest ones (all are counted in ``missing``).
MAX_GAPS = 50


@dataclass
class SegmentSpan:
    file: str
    base_offset: int | None
    bytes: int
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_time: int | None = None       # ms: the smallest batch max timestamp
    last_time: int | None = None        # ms: the largest
    missing: int = 0                    # offsets missing between its batches
    gaps: list[tuple[int, int]] = field(default_factory=list)   # (first, last) missing offset
    findings: list[Finding] = field(default_factory=list)      # errors, damage, anomalies; its indexes' too
    # Where each finding is drawn: its offset, else the batch at or after its byte position
    # in the segment, else the segment's first offset.
    marks: list[tuple[int, Finding]] = field(default_factory=list)
    _starts: list[tuple[int, int]] = field(default_factory=list, repr=False)   # (position, first offset)

    def place(self, f: Finding, in_log: bool) -> None:
        self.findings.append(f)
        at = f.offset
        if at is None and in_log and f.position is not None and self._starts:
            i = bisect.bisect_left(self._starts, (f.position, -1))
            at = self._starts[i][1] if i < len(self._starts) else self.last_offset   # past the last batch: its end
        if at is None:
            at = self.first_offset
        if at is not None:
            self.marks.append((at, f))

    @property
    def status(self) -> str:
        classes = {f.cls for f in self.findings}
        for cls in (F.ERROR, F.DAMAGE, F.ANOMALY):
            if cls in classes:
                return cls
        return "ok"

    @property
    def rate(self) -> float | None:
        """Records per second between its first and last batch time (None: one instant)."""
        if self.first_time is None or self.last_time is None or self.last_time <= self.first_time:
            return None
        return self.records * 1000 / (self.last_time - self.first_time)

    def to_dict(self) -> dict:
        return {"file": self.file, "base_offset": self.base_offset, "bytes": self.bytes, "batches": self.batches,
                "records": self.records, "first_offset": self.first_offset, "last_offset": self.last_offset,
                "first_time": self.first_time, "last_time": self.last_time, "missing": self.missing,
                "gaps": [list(g) for g in self.gaps], "status": self.status,
                "records_per_second": None if self.rate is None else round(self.rate, 3),
                "findings": [dict(f.to_dict(), drawn_at_offset=at) for at, f in self.marks]}


@dataclass
class Timeline:
    path: str
    topic: str | None
    partition: int | None
    segments: list[SegmentSpan]
    between: list[tuple[int, int]]      # offsets missing between consecutive segments
    findings: list[Finding]             # of the partition's other files (checkpoints, snapshots)

    def to_dict(self) -> dict:
        return {"path": self.path, "topic": self.topic, "partition": self.partition,
                "segments": [s.to_dict() for s in self.segments], "between": [list(g) for g in self.between],
                "findings": [f.to_dict() for f in self.findings]}


def _span(f: LogFile) -> SegmentSpan:
    s = SegmentSpan(f.path, f.base_offset, 0)
    try:
        mapped = MappedFile(f.path)
    except KdumpError:
        return s        # verify's finding says why
    try:
        s.bytes = mapped.size
        gaps = []
        for b in Walker(mapped.buf):
            first = b.base_offset if b.base_offset is not None else b.last_offset
            if s.last_offset is not None and first > s.last_offset + 1:
                gaps.append((s.last_offset + 1, first - 1))
                s.missing += first - 1 - s.last_offset
            if s.first_offset is None:
                s.first_offset = first
            if s.last_offset is None or b.last_offset > s.last_offset:
                s.last_offset = b.last_offset
            s.batches += 1
            s._starts.append((b.position, first))
            s.records += b.count or 0
            if b.max_timestamp >= 0:
                s.first_time = b.max_timestamp if s.first_time is None else min(s.first_time, b.max_timestamp)
                s.last_time = b.max_timestamp if s.last_time is None else max(s.last_time, b.max_timestamp)
        widest = sorted(gaps, key=lambda g: g[0] - g[1])[:MAX_GAPS]
        s.gaps = sorted(widest)
    finally:
        mapped.close()
    return s


def build(directory: str, files: list[LogFile], opts: VerifyOptions | None = None) -> Timeline:
    """The timeline of one partition directory from its files (as ``resolve`` lists them);
    ``opts``: the run's, whose reading of the log dirs' checkpoints is kept across partitions."""
    logs = sorted((f for f in files if f.kind == LOG and f.leftover is None),
                  key=lambda f: (f.base_offset is None, f.base_offset or 0, f.path))
    segments = [_span(f) for f in logs]
    by_base = {s.base_offset: s for s in segments}
    rest: list[Finding] = []
    every = [f for f in directory_context(directory, files) if f.leftover is None]
    for report in check_directory(directory, every, opts or VerifyOptions()):
        shown = [x for x in report.findings if x.cls in (F.ERROR, F.DAMAGE, F.ANOMALY)]
        target = by_base.get(report.log.base_offset) if report.log is not None else None
        for f in shown:
            if target is not None:
                target.place(f, report.kind == LOG)
            else:
                rest.append(f)
    for s in segments:
        s._starts = []      # only needed to place the findings
    between = []
    for a, b in zip(segments, segments[1:]):
        if a.last_offset is not None and b.first_offset is not None and b.first_offset > a.last_offset + 1:
            between.append((a.last_offset + 1, b.first_offset - 1))
    first = logs[0] if logs else None
    return Timeline(directory, first.topic if first else None, first.partition if first else None, segments,
                    between, rest)


def partition_dirs(files: list[LogFile]) -> list[tuple[str, list[LogFile]]]:
    """(directory, its files) for each directory holding a segment, in the order they come."""
    out: dict[str, list[LogFile]] = {}
    for f in files:
        out.setdefault(os.path.dirname(f.path), []).append(f)
    return [(d, fs) for d, fs in out.items() if any(f.kind == LOG for f in fs)]
