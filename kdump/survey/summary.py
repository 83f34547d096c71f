"""``kdump info``: the first picture of a log dir, one summary per partition.

Built from batch headers only (no record decoding): segments, bytes, batches, records,
offset and time ranges, codecs, producers, the transactional and control share, and a
histogram of batch sizes in powers of two.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kdump import _accel
from kdump.errors import ExitStatus, KdumpError
from kdump.format.walk import SCAN_SPAN, Walker
from kdump.model import compression_name
from kdump.storage.logdir import BATCH_KINDS, LOG, LogFile
from kdump.storage.mapped import MappedFile

SIZE_BUCKETS = (128, 512, 2048, 8192, 32768, 131072, 524288, 1 << 21)
# Batches per call of the C summer: a call holds the GIL, so it stays short.
RUN_BATCHES = 1 << 16


def bucket_label(limit: int | None) -> str:
    if limit is None:
        return f">{_human(SIZE_BUCKETS[-1])}"
    return f"≤{_human(limit)}"


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:g}{unit}"
        n //= 1024
    return f"{n}TiB"


@dataclass
class PartitionSummary:
    path: str
    topic: str | None
    partition: int | None
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    codecs: Counter = field(default_factory=Counter)
    magics: Counter = field(default_factory=Counter)
    producers: set = field(default_factory=set)
    transactional_batches: int = 0
    control_batches: int = 0
    invalid_batches: int = 0
    trailing_bytes: int = 0
    size_histogram: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    # The exit status the problems call for: a file that could not be read (gone, cut short
    # after it was listed, an I/O error) is INCOMPLETE, not damage.
    status: ExitStatus = ExitStatus.OK
    # The live segments read whole, for ``records_missing`` (None: one could not be read).
    live: list | None = field(default_factory=list, repr=False)
    compacted: bool = False

    def add_file(self, f: LogFile) -> None:
        try:
            mapped = MappedFile(f.path)
        except KdumpError as e:
            self._problem(str(e.located(f.path)), e.exit_code)
            self.live = None
            return
        try:
            self.segments += 1
            self.bytes += mapped.size
            before = (self.records, self.last_offset, self.first_offset)
            self.first_offset = None        # this file's, for _segment (then the smallest again)
            walker = self._walk(mapped.buf)
            self.trailing_bytes += walker.trailing_bytes
            if walker.stop is not None:
                self._problem(f"{f.path}:{walker.stop.position}: {walker.stop.message}", ExitStatus.DAMAGE)
            self._segment(f, before, walker.stop is not None)
        except KdumpError as e:         # a read that failed part-way (a remote object cut short)
            self._problem(str(e.located(f.path)), e.exit_code)
            self.live = None
        finally:
            mapped.close()

    def _problem(self, text: str, status: ExitStatus) -> None:
        self.problems.append(text)
        self.status = max(self.status, status)

    def _segment(self, f: LogFile, before: tuple, damaged: bool) -> None:
        """One live segment's extent (its offsets follow the ones before: ``last_offset`` is its last)."""
        from kdump.check.lost_records import Segment, looks_compacted

        records, last, first = before
        own_first, self.first_offset = self.first_offset, (
            first if self.first_offset is None or (first is not None and first < self.first_offset)
            else self.first_offset)
        if self.live is None or f.kind != LOG or f.leftover is not None or f.base_offset is None:
            return
        end = f.base_offset
        if own_first is not None and self.last_offset is not None and self.last_offset != last:
            end = self.last_offset + 1
            self.compacted = self.compacted or looks_compacted(f.base_offset, own_first, self.last_offset,
                                                               self.records - records)
        self.live.append(Segment(f.path, f.base_offset, end, damaged))

    def lost(self, cache: dict | None = None) -> None:
        """Each span of records the partition's files show were written but no ``.log`` holds, as a problem."""
        from kdump.check.lost_records import lost_spans
        from kdump.storage.logdir import partition_files

        if self.live is None or not self.live:
            return
        try:
            files = partition_files(self.path)
        except KdumpError:
            return
        for carriers, finding in lost_spans(self.path, files, sorted(self.live, key=lambda s: s.base),
                                            self.compacted, None, cache):
            where = next((c for c in carriers if c is not None), self.path)
            self._problem(f"{where}: {finding.kind}: {finding.message}", ExitStatus.DAMAGE)

    def _walk(self, buf) -> Walker:
        """Every batch of ``buf`` into the sums; returns the Walker that ended the walk (its
        stop, its trailing bytes). With the C accelerator, runs of v2 batches are summed
        without a Batch object each (summarize_v2, the twin of _add_batch); each entry it
        leaves (legacy, or where the walk stops) goes through the Walker and _add_batch."""
        c = _accel.native()
        if c is None:
            walker = Walker(buf)
            for b in walker:
                self._add_batch(b)
            return walker
        pos, end = 0, len(buf)
        follow = getattr(buf, "follow", None)     # a large mapping drops pages behind the walk
        while True:
            # A bounded span, as the Walker's: a batch crossing it is left to the Walker below.
            span_end = min(end, pos + SCAN_SPAN)
            pos = self._add_run(c.summarize_v2(buf, pos, span_end, RUN_BATCHES, SIZE_BUCKETS, self.producers))
            if follow is not None:
                follow(pos)
            walker = Walker(buf, pos, end, first_chunk=1)
            b = next(iter(walker), None)
            if b is None:
                return walker
            self._add_batch(b)
            pos = walker.stop_position

    def _add_run(self, run) -> int:
        pos, n, records, first, last, low, high, txn, ctl, invalid, codecs, sizes = run
        if n:
            self.batches += n
            self.records += records
            self.magics[2] += n
            if self.first_offset is None or first < self.first_offset:
                self.first_offset = first
            if self.last_offset is None or last > self.last_offset:
                self.last_offset = last
            if high is not None:
                if self.max_timestamp is None or high > self.max_timestamp:
                    self.max_timestamp = high
                if self.min_timestamp is None or low < self.min_timestamp:
                    self.min_timestamp = low
            for codec, k in enumerate(codecs):
                if k:
                    self.codecs[compression_name(codec)] += k
            self.transactional_batches += txn
            self.control_batches += ctl
            self.invalid_batches += invalid
            for limit, k in zip((*SIZE_BUCKETS, None), sizes):
                if k:
                    self.size_histogram[limit] += k
        return pos

    def _add_batch(self, b) -> None:
        self.batches += 1
        self.records += b.count or 0
        first = b.base_offset if b.base_offset is not None else b.last_offset
        if self.first_offset is None or first < self.first_offset:
            self.first_offset = first
        if self.last_offset is None or b.last_offset > self.last_offset:
            self.last_offset = b.last_offset
        if b.max_timestamp >= 0:
            if self.max_timestamp is None or b.max_timestamp > self.max_timestamp:
                self.max_timestamp = b.max_timestamp
            low = b.base_timestamp if 0 <= b.base_timestamp <= b.max_timestamp and b.delete_horizon_ms is None \
                else b.max_timestamp
            if self.min_timestamp is None or low < self.min_timestamp:
                self.min_timestamp = low
        self.codecs[compression_name(b.compression)] += 1
        self.magics[b.magic] += 1
        if b.producer_id >= 0:
            self.producers.add(b.producer_id)
        if b.is_transactional:
            self.transactional_batches += 1
        if b.is_control:
            self.control_batches += 1
        if not b.crc_valid:
            self.invalid_batches += 1
        self.size_histogram[next((s for s in SIZE_BUCKETS if b.size <= s), None)] += 1

    def to_dict(self) -> dict[str, Any]:
        hist = [{"max_size": limit, "batches": self.size_histogram[limit]}
                for limit in (*SIZE_BUCKETS, None) if self.size_histogram[limit]]
        return {
            "object": "partition", "path": self.path, "topic": self.topic, "partition": self.partition,
            "segments": self.segments,
            "bytes": self.bytes, "batches": self.batches, "records": self.records,
            "first_offset": self.first_offset, "last_offset": self.last_offset,
            "min_timestamp": self.min_timestamp, "max_timestamp": self.max_timestamp,
            "codecs": dict(sorted(self.codecs.items())), "magic": {str(k): v for k, v in sorted(self.magics.items())},
            "producers": len(self.producers),
            "transactional_share": _share(self.transactional_batches, self.batches),
            "control_share": _share(self.control_batches, self.batches),
            "invalid_batches": self.invalid_batches, "trailing_bytes": self.trailing_bytes,
            "batch_size_histogram": hist, "problems": self.problems,
        }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def partition_summaries(files: list[LogFile], cache: dict | None = None) -> Iterator[PartitionSummary]:
    """One summary per directory holding batch files, in the order the files come (``cache``:
    the log dirs' checkpoints as read so far, kept across calls by a run of many partitions)."""
    current: PartitionSummary | None = None
    cache = {} if cache is None else cache
    for f in files:
        if f.kind not in BATCH_KINDS:
            continue
        directory = os.path.dirname(f.path)
        if current is None or current.path != directory:
            if current is not None:
                current.lost(cache)
                yield current
            current = PartitionSummary(directory, f.topic, f.partition)
        current.add_file(f)
    if current is not None:
        current.lost(cache)
        yield current
