"""How each record's transaction ended, and what a read_committed consumer sees.

A transactional batch belongs to the transaction its producer ends with the next control
marker after it (COMMIT or ABORT, the EndTxnMarker the coordinator writes); with no marker
after it, the transaction is still open. A read_committed consumer gets records only below
the last stable offset (the first offset of the earliest transaction still open: the
broker's fetch stops there) and never the records of an aborted transaction (the fetch
response names them from the .txnindex, and the consumer drops them).

The markers are found in one pass over the batch headers of the partition, decoding only
the control batches' one record each, before the records themselves are read.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

from kdump.errors import KdumpError
from kdump.format.control import ABORT, COMMIT
from kdump.format.walk import Walker, decode_records
from kdump.model import Batch
from kdump.storage.levels import resolve
from kdump.storage.logdir import LOG, LogFile
from kdump.storage.mapped import MappedFile, file_size

COMMITTED, ABORTED, OPEN = "committed", "aborted", "open"
KEPT_PARTITIONS = 8         # of_partition's outcomes kept per process


class Outcomes:
    """The control markers of one partition, per producer id, and its last stable offset."""

    def __init__(self) -> None:
        self._offsets: dict[int, list[int]] = {}      # producer id -> marker offsets, ascending
        self._commits: dict[int, list[bool]] = {}     # the same markers: COMMIT (True) or ABORT
        self._open_since: dict[int, int] = {}         # producer id -> first offset of its open transaction
        self.log_end_offset: int | None = None

    @classmethod
    def of_segments(cls, segments: list[LogFile]) -> Outcomes:
        out = cls()
        for f in segments:
            mapped = MappedFile(f.path)
            try:
                for b in Walker(mapped.buf):
                    out._see(mapped.buf, b)
            except KdumpError:
                pass                    # the record reader reports the damage; markers before it count
            finally:
                mapped.close()
        out._order()
        return out

    def _order(self) -> None:
        """Each producer's markers by offset (stable): "the next marker after" a batch is the
        first of them past its last offset, whatever order a damaged log wrote them in."""
        for pid, offsets in self._offsets.items():
            pairs = sorted(zip(offsets, self._commits[pid]), key=lambda p: p[0])
            self._offsets[pid] = [o for o, _ in pairs]
            self._commits[pid] = [c for _, c in pairs]

    def table(self) -> array | None:
        """The markers as int64 (producer id, offset, commit) triples, by producer id then offset:
        what the C writer (jsonout.c flat_v2_run) looks a batch's outcome up in (None: an offset
        beyond int64, which only Python takes)."""
        out = array("q")
        try:
            for pid in sorted(self._offsets):
                for offset, commit in zip(self._offsets[pid], self._commits[pid]):
                    out.extend((pid, offset, int(commit)))
        except OverflowError:
            return None
        return out

    def _see(self, buf, b: Batch) -> None:
        self.log_end_offset = b.last_offset + 1
        if not b.is_transactional:
            return
        pid = b.producer_id
        if not b.is_control:
            self._open_since.setdefault(pid, b.base_offset if b.base_offset is not None else b.last_offset)
            return
        try:
            records = decode_records(buf, b)
        except KdumpError:
            return
        for r in records:
            if r.control is not None and r.control.type in (COMMIT, ABORT):
                self._offsets.setdefault(pid, []).append(r.offset)
                self._commits.setdefault(pid, []).append(r.control.type == COMMIT)
                self._open_since.pop(pid, None)

    def status(self, b: Batch) -> str | None:
        """committed | aborted | open for a transactional data batch; None otherwise."""
        if not b.is_transactional or b.is_control:
            return None
        offsets = self._offsets.get(b.producer_id)
        if not offsets:
            return OPEN
        i = bisect_right(offsets, b.last_offset)
        if i == len(offsets):
            return OPEN
        return COMMITTED if self._commits[b.producer_id][i] else ABORTED

    @property
    def last_stable_offset(self) -> int | None:
        """The first offset of the earliest open transaction, else the log end offset."""
        if self._open_since:
            return min(self._open_since.values())
        return self.log_end_offset

    def read_committed(self, b: Batch) -> bool:
        """Whether a read_committed consumer is served this data batch."""
        lso = self.last_stable_offset
        first = b.base_offset if b.base_offset is not None else b.last_offset
        if lso is not None and first >= lso:
            return False
        return self.status(b) != ABORTED


_kept: dict[tuple, Outcomes] = {}


def of_partition(f: LogFile) -> Outcomes:
    """The Outcomes of the live segments of ``f``'s partition directory (a marker may lie in a
    later segment than its batches), kept per process while those segments are as they were:
    an export reads a partition one slice at a time, and a Spark executor many of them."""
    directory = f.path.rsplit("/", 1)[0] if "/" in f.path else "."
    try:
        segments = [g for g in resolve([directory], kinds=(LOG,), errors=[], left_out=[])
                    if g.leftover is None and g.path.rsplit("/", 1)[0] == directory]
    except KdumpError:
        segments = []
    if not any(g.path == f.path for g in segments):
        segments = [f]              # a file named alone, or a directory that cannot be listed
    key = tuple((g.path, file_size(g.path)) for g in segments)
    out = _kept.get(key)
    if out is None:
        if len(_kept) >= KEPT_PARTITIONS:
            _kept.clear()
        out = _kept[key] = Outcomes.of_segments(segments)
    return out
