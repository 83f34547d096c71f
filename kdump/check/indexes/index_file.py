"""What an ``.index``/``.timeindex`` file shows alone, and the result of checking it against its log.

``IndexCheck`` is what ``kdump.check.indexes.forward_pass`` returns (its fields are described there).
``file_findings(parsed)``: a torn last slot, non-zero slots after the zero tail.
``sanity_findings(parsed, file_name)``: Kafka's ``sanityCheck`` conditions and messages,
verbatim. ``live_entries(parsed)``: the entries before the zero tail.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple, overload

from kdump.findings import INDEX_AFTER_TAIL, INDEX_PARTIAL, INDEX_SANITY, TIME_AFTER_TAIL, TIME_PARTIAL, TIME_SANITY
from kdump.format.index import ENTRY_SIZE as INDEX_SLOT
from kdump.format.index import IndexFile, index_entries
from kdump.format.timeindex import ENTRY_SIZE as TIME_SLOT
from kdump.format.timeindex import TimeIndexFile, timeindex_entries
from kdump.model import B_BASE_OFFSET, B_LAST_OFFSET, B_MAGIC, B_MAX_TIMESTAMP, B_POSITION, B_SIZE, Finding, IndexEntry
from kdump.storage.slice_reader import SliceReader
from kdump.words import plural

INF = float("inf")
Target = tuple[Any, int, Any]      # (key, slot, value): (position, slot, offset) or (offset, slot, timestamp)
END: Target = (INF, -1, None)      # the target after the last, never reached
RUN = 1 << 18               # targets sorted at a time when the entries are out of order
SORTED_AT_MOST = 1 << 20    # out-of-order targets sorted (16 MiB of packed arrays); more are walked unsorted
_SLOT_BITS = 28             # slots of a 2 GiB index (INDEX_LIMIT) fit in 28 bits
_BIAS = 1 << 63             # a signed int64 value stored unsigned
# Batch fields the checks read in their hot loops (a NamedTuple's attribute access costs more).
POS, BASE, LAST, SIZE, MAGIC, MAX_TS = B_POSITION, B_BASE_OFFSET, B_LAST_OFFSET, B_SIZE, B_MAGIC, B_MAX_TIMESTAMP


class IndexCheck(NamedTuple):
    """The result of checking one index file against its log."""

    kind: str                                # "index" | "timeindex"
    findings: list[Finding]
    convention: str | None                   # see the module docstring
    entries: int                             # entries checked (zero tail excluded)
    interval: tuple[int, int | None] | None  # index.interval.bytes range the gaps fit (lo, hi; hi None = any)
    notes: list[str]
    log_bytes: int                           # bytes of whole batches walked
    log_size: int

    @property
    def ok(self) -> bool:
        return not self.findings


def live_entries(parsed: IndexFile | TimeIndexFile) -> tuple[Sequence, int | None]:
    """(entries, first slot of the zero tail): a file of zeros only is all tail, slot 0 included."""
    tail = parsed.zero_tail_start
    entries = parsed.entries
    if tail == 1 and len(entries) == 1 and parsed.nonzero_after_tail is None:
        first = entries[0]
        zero = (first.offset == parsed.base_offset and
                (first.position == 0 if isinstance(first, IndexEntry) else first.timestamp == 0))
        if zero:
            return [], 0
    return entries, tail


class Targets(NamedTuple):
    """How a check walks its targets: ``walk()`` yields them in key order, again and again;
    ``left_out``: targets it never yields (a huge index out of order, walked unsorted)."""

    walk: Callable[[], Iterator[tuple[int, int, int]]]
    left_out: int

    def note(self) -> list[str]:
        """What ``finish`` says of the targets left out."""
        if not self.left_out:
            return []
        return [f"{plural(self.left_out, 'entry')} after an entry out of order not checked against the log: an "
                f"index of {SORTED_AT_MOST:,} entries or more is not sorted, the entries that rise are checked"]


def target_walk(entries, in_order: bool, walk: Callable[[], Iterator[tuple[int, int, int]]],
                relative: Callable[[tuple[int, int, int]], tuple[int, int, int]],
                absolute: Callable[[tuple[int, int, int]], tuple[int, int, int]], total: int) -> Targets:
    """How a check walks its targets (``walk``: in slot order) again and again: a small file's
    listed once, a large one in order streamed from the file, one out of order sorted
    (``relative``/``absolute``: a target as ``sorted_targets`` keys it, and back) when it has
    fewer than ``SORTED_AT_MOST`` entries. A larger one is already damage (its order findings);
    sorting it would cost 16 bytes an entry (4 GiB for a 2 GiB index), so it is streamed as it
    is, each target that does not follow the largest key so far left out (``total``: the targets
    ``walk`` yields)."""
    if in_order and isinstance(entries, list):
        listed = list(walk())
        return Targets(lambda: iter(listed), 0)
    if in_order:
        return Targets(walk, 0)
    if len(entries) < SORTED_AT_MOST:
        merged = sorted_targets(relative(t) for t in walk())
        return Targets(lambda: (absolute(t) for t in merged()), 0)
    return Targets(lambda: _rising(walk()), total - sum(1 for _ in _rising(walk())))


def _rising(targets: Iterator[tuple[int, int, int]]) -> Iterator[tuple[int, int, int]]:
    """The targets whose key is at least the largest before them: a sorted walk, without sorting."""
    top = -INF
    for t in targets:
        if t[0] >= top:
            top = t[0]
            yield t


def sorted_targets(targets: Iterable[tuple[int, int, int]]) -> Callable[[], Iterator[tuple[int, int, int]]]:
    """The targets (key, slot, value) of out-of-order entries, sorted by (key, slot), re-iterable.

    Entries in order are streamed from the file as they are; these are sorted a run at a time
    into packed arrays (16 bytes a target instead of Python tuples), then merged on each walk.
    ``key`` (a position or relative offset) is non-negative; ``value`` a signed int64."""
    runs = []
    it = iter(targets)
    while True:
        packed = sorted(((k << _SLOT_BITS | i) << 64) | (v + _BIAS) for k, i, v in _take(it, RUN))
        if not packed:
            break
        mask = (1 << 64) - 1
        runs.append((array("q", [p >> 64 for p in packed]), array("Q", [p & mask for p in packed])))
    slot_mask = (1 << _SLOT_BITS) - 1

    def walk() -> Iterator[tuple[int, int, int]]:
        for key, v in heapq.merge(*(zip(keys, vals) for keys, vals in runs)):
            yield key >> _SLOT_BITS, key & slot_mask, v - _BIAS
    return walk


def _take(it: Iterator, n: int) -> Iterator:
    for _, x in zip(range(n), it):
        yield x


def convention_of(counts: dict[str, int], other: str, neither: str) -> str:
    """Which offset the entries hold, from how many fit only "last" or only ``other``
    ("base" for the offset index, "record" for the time index); ``neither``: none told them apart."""
    if counts["last"] and counts[other]:
        return "mixed"
    if counts["last"]:
        return "last"
    return other if counts[other] else neither


def _slot(parsed) -> int:
    return INDEX_SLOT if isinstance(parsed, IndexFile) else TIME_SLOT


def file_findings(parsed: IndexFile | TimeIndexFile) -> list[Finding]:
    """Faults visible in the index file itself: a torn last slot, data after the zero tail."""
    slot = _slot(parsed)
    is_index = slot == INDEX_SLOT
    out = []
    if parsed.nonzero_after_tail is not None:
        out.append(Finding(INDEX_AFTER_TAIL if is_index else TIME_AFTER_TAIL, parsed.nonzero_after_tail * slot, None,
                           f"non-zero slot {parsed.nonzero_after_tail} after the zero-filled tail that starts at "
                           f"slot {parsed.zero_tail_start}: entries were lost or the file was overwritten"))
    if parsed.partial_bytes:
        out.append(Finding(INDEX_PARTIAL if is_index else TIME_PARTIAL, parsed.size - parsed.partial_bytes, None,
                           f"file size {parsed.size} is not a multiple of {slot}: the last {parsed.partial_bytes} "
                           f"bytes are a truncated entry"))
    return out


def sanity_findings(parsed: IndexFile | TimeIndexFile, file_name: str) -> list[Finding]:
    """Kafka's ``OffsetIndex``/``TimeIndex.sanityCheck()`` failures, Kafka's messages verbatim.

    ``file_name`` goes into the messages (Kafka uses the absolute path). Kafka throws
    with the first; all failing conditions are returned, in Kafka's order.
    """
    slot = _slot(parsed)
    kind = INDEX_SANITY if slot == INDEX_SLOT else TIME_SANITY
    last_slot_at = (parsed.size // slot - 1) * slot if parsed.size >= slot else None
    out = []
    for message in parsed.sanity_check(file_name):
        position = parsed.size - parsed.partial_bytes if "neither positive" in message else last_slot_at
        out.append(Finding(kind, position, None, message))
    return out


INDEX_LIMIT = 1 << 31       # no index Kafka writes is larger (its slots are addressed by an int32)


@overload
def read_index_file(path: str, kind: Literal["index"], base_offset: int) -> IndexFile: ...
@overload
def read_index_file(path: str, kind: str, base_offset: int) -> IndexFile | TimeIndexFile: ...
def read_index_file(path: str, kind: str, base_offset: int) -> IndexFile | TimeIndexFile:
    """Parse an ``.index``/``.timeindex`` whole, its entries listed (a small file's)."""
    with opened_index_file(path, kind, base_offset) as parsed:
        return parsed._replace(entries=[*parsed.entries])


@contextmanager
def opened_index_file(path: str, kind: str, base_offset: int) -> Iterator[IndexFile | TimeIndexFile]:
    """An ``.index``/``.timeindex`` whose entries are read a slice at a time as they are walked,
    while the block runs: a 100 MB index costs a chunk of memory, not the file."""
    with SliceReader(path, INDEX_LIMIT) as data:
        yield (index_entries if kind == "index" else timeindex_entries)(data.data(), base_offset, lazy=True)
