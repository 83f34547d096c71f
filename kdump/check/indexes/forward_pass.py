"""Offset and time indexes against their log: verification in one forward pass, and rebuild.

API (``kdump index``/``kdump timeindex`` and ``kdump verify`` call these):

``verify_offset_index(log_buf, base_offset, index, *, interval_bytes=None) -> IndexCheck``
``verify_time_index(log_buf, base_offset, timeindex) -> IndexCheck``
``verify_indexes(log_buf, base_offset, index=None, timeindex=None, ...) -> (IndexCheck|None, IndexCheck|None)``
    Both checks in a single walk of the log (what ``kdump verify`` wants).

- ``log_buf``: the whole ``.log`` as a buffer (``MappedFile(...).buf``, or bytes);
  ``base_offset``: the segment's base offset (from its name); ``index``/``timeindex``: the
  parsed file (``format.index.parse_index`` / ``format.timeindex.parse_timeindex``).
- ``IndexCheck.findings``: ``model.Finding(kind, position, offset, message)``. ``kind`` is
  one of the ``INDEX_*``/``TIME_*`` constants below (values prefixed ``index_``/``timeindex_``);
  ``position`` is the byte position *in the index file* of the slot at fault (None for
  whole-file findings); ``offset`` is the entry's offset. Log positions are in the message.
- ``IndexCheck.convention``: which offset the entries hold. Offset index: "last" (the
  batch's last offset, Kafka 2.0+), "base" (its base offset, before 2.0), "either" (no
  entry tells them apart), "mixed", "other" or None (no entries). Time index: "last" (the
  batch's last offset), "record" (the record carrying the max timestamp, a leader's append
  path), "either", "mixed" or None.
- ``IndexCheck.interval``: (lo, hi) index.interval.bytes values the gaps fit (hi None: no
  upper bound), None when no single value does (a note then says why that can be normal).
- Cost: O(log size + entries); records are decoded only for batches that time index
  entries point at (and only to tell the two time-index conventions apart).

What the index file alone shows (``file_findings``, ``sanity_findings``) is in
``kdump.check.indexes.index_file``; the verify functions include it. The two passes are
``kdump.check.indexes.offset_index`` and ``kdump.check.indexes.time_index``. The rebuild is
``kdump.repair.indexes.rebuild_indexes``.
"""

from __future__ import annotations

import os
from itertools import islice

from kdump import _accel
from kdump.check.indexes.index_file import IndexCheck
from kdump.check.indexes.offset_index import OffsetIndexCheck
from kdump.check.indexes.time_index import TimeIndexCheck
from kdump.check.scan import ScanReport
from kdump.check.side_file_views import SIDE_FILE_LIMIT
from kdump.errors import KdumpError, UsageError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.index import IndexFile, index_entries
from kdump.format.timeindex import TimeIndexFile, timeindex_entries
from kdump.format.walk import SCAN_CHUNK, Walker, need_of
from kdump.model import Finding
from kdump.storage import fs
from kdump.storage import names as N
from kdump.storage.mapped import MappedFile
from kdump.storage.slice_reader import SliceReader

WALK_RUN = 4096     # batches held at once while both indexes are checked
C_PROOF_BYTES = 64 << 20    # the most of a mapped log C walks without dropping pages behind (mapped.TRIM_ABOVE)


def verify_indexes(log_buf, base_offset: int, index: IndexFile | None = None, timeindex: TimeIndexFile | None = None,
                   *, interval_bytes: int | None = None, limits: Limits = DEFAULT_LIMITS,
                   convention: bool = True) -> tuple[IndexCheck | None, IndexCheck | None]:
    """Check an offset index and/or a time index against ``log_buf`` in one forward walk.

    ``interval_bytes``: when given, entries closer than that are faults; otherwise the
    range of index.interval.bytes values the gaps fit is inferred (``IndexCheck.interval``).
    ``convention=False``: do not decode records only to tell the time index's convention
    apart (the findings are the same; ``IndexCheck.convention`` may say "either").
    """
    oc, tc, walker = _walked(log_buf, base_offset, index, timeindex, interval_bytes, limits, convention)
    size = len(log_buf)
    return (oc.finish(walker, size) if oc else None, tc.finish(walker, size) if tc else None)


def _walked(log_buf, base_offset: int, index: IndexFile | None, timeindex: TimeIndexFile | None,
            interval_bytes: int | None, limits: Limits,
            convention: bool, end: int | None = None) -> tuple[OffsetIndexCheck | None, TimeIndexCheck | None, Walker]:
    """The checks of ``verify_indexes``, fed the log (up to ``end``); the walker says where it stopped."""
    oc = OffsetIndexCheck(base_offset, index, interval_bytes) if index is not None else None
    tc = TimeIndexCheck(log_buf, base_offset, timeindex, limits) if timeindex is not None else None
    if tc is not None and not convention:
        tc.budget = 0
    # Every batch is wanted: the C scanner may take a full chunk from the first call.
    walker = Walker(log_buf, 0, end, limits=limits, first_chunk=SCAN_CHUNK)
    if oc is not None and tc is not None:
        # The two checks are independent: each takes a run of batches at a time (a call per
        # batch and check cost more than the checks of a small segment).
        batches = iter(walker)
        while run := list(islice(batches, WALK_RUN)):
            oc.run(run)
            tc.run(run)
            if len(run) < WALK_RUN:     # the walk has ended
                break
    elif oc is not None or tc is not None:
        (oc or tc).run(walker)  # type: ignore[union-attr]  # one of the two is given
    return oc, tc, walker


def verify_offset_index(log_buf, base_offset: int, index: IndexFile, *, interval_bytes: int | None = None,
                        limits: Limits = DEFAULT_LIMITS) -> IndexCheck:
    """Check a parsed ``.index`` against its log: every position a batch start holding the
    entry's offset (or, for a multi-batch append, a later batch holding it), entries strictly
    increasing, nothing past the end, gaps that fit an index.interval.bytes."""
    return verify_indexes(log_buf, base_offset, index, None, interval_bytes=interval_bytes, limits=limits)[0]  # type: ignore[return-value]  # index given: checked


def verify_time_index(log_buf, base_offset: int, timeindex: TimeIndexFile, *,
                      limits: Limits = DEFAULT_LIMITS) -> IndexCheck:
    """Check a parsed ``.timeindex`` against its log: timestamps never going back, each the
    largest one up to its offset and carried by the batch (or record) the offset names,
    nothing past the end, and the roll/close entry present in a trimmed file."""
    return verify_indexes(log_buf, base_offset, None, timeindex, limits=limits)[1]  # type: ignore[return-value]  # timeindex given: checked



def segment_log_path(path: str) -> str:
    """The ``.log`` a segment file belongs to (``00..42.index`` -> ``00..42.log``)."""
    stem, leftover = N.segment_stem(path)
    if leftover is not None:
        raise UsageError(f"{leftover} files are leftovers of the log cleaner or deletion, not live segments; "
                         f"rebuild works on live segments only", file=path)
    if path[len(stem):] not in N.SEGMENT_SUFFIXES:
        raise UsageError("not a segment file (.log, .index or .timeindex)", file=path)
    return N.segment_file(stem, N.LOG_SUFFIX)


def check_against_log(log_path: str, kind: str, base_offset: int, parsed: IndexFile | TimeIndexFile,
                      interval_bytes: int | None = None) -> IndexCheck:
    """One ``.index``/``.timeindex`` (``kind``) checked against its segment, as ``index --verify`` does."""
    with MappedFile(log_path) as mf:
        mf.advise_sequential()
        if kind == "index":
            # (``kind`` says which ``parsed`` is, and so which check comes back)
            return verify_indexes(mf.buf, base_offset, index=parsed, interval_bytes=interval_bytes)[0]  # type: ignore[arg-type, return-value]
        return verify_indexes(mf.buf, base_offset, timeindex=parsed)[1]  # type: ignore[arg-type, return-value]


def index_findings(log_path: str, base: int, scan: ScanReport, index=None,
                   timeindex=None, limits: Limits = DEFAULT_LIMITS,
                   log_buf=None, whole: bool = False) -> tuple[list[Finding], list[Finding]]:
    """``.index`` and ``.timeindex`` against the part of the log the broker keeps.

    ``verify_indexes`` (the checks of ``kdump index --verify``) does the work, in one walk,
    over the log cut at ``scan.valid_bytes``: an entry pointing into bytes the broker's
    recovery would cut is an ``index_past_end`` like one past the end of the file.
    ``log_buf``: the segment's bytes as the scan had them (None: the file is read again).
    ``index``/``timeindex``: the file's bytes, or anything sliced like them (``SliceReader``):
    their entries are walked from it a chunk at a time, never all held.
    ``whole``: the next broker start keeps the segment as it is (no recovery), so the indexes
    are judged against the whole file as its readers walk it (batch headers, no CRC), not the
    CRC-checked part.
    """
    end = scan.size if whole else scan.valid_bytes
    if log_buf is not None and _proved_clean(log_buf, base, end, index, timeindex):
        return [], []
    idx = index_entries(index, base, lazy=True) if index is not None else None
    tix = timeindex_entries(timeindex, base, lazy=True) if timeindex is not None else None
    if idx is None and tix is None:
        return [], []
    if log_buf is None:
        with MappedFile(log_path, stream=True) as m:
            m.reading_to(None)
            return _kept_findings(m.buf, base, end, idx, tix, limits)
    return _kept_findings(log_buf, base, end, idx, tix, limits)


def _proved_clean(log_buf, base: int, end: int, index, timeindex) -> bool:
    """Does C prove that neither file has a finding (``native.index_clean``: every entry the
    usual one, which the walk below takes without a finding)? False: the walk decides. A
    large mapping, or a buffer filled as asked (its ``need``), is left to the walk, which drops
    its pages behind it."""
    native = _accel.native()
    if native is None or (end > C_PROOF_BYTES and type(log_buf) is not bytes) or need_of(log_buf) is not None:
        return False
    return native.index_clean(log_buf, end, base, index, timeindex)


def _kept_findings(buf, base: int, end: int, idx: IndexFile | None, tix: TimeIndexFile | None,
                   limits: Limits) -> tuple[list[Finding], list[Finding]]:
    end = min(end, len(buf))
    if end == len(buf) and isinstance(buf, bytes):     # a small segment, nothing cut: no views
        return _closed(buf, base, idx, tix, limits)
    if hasattr(buf, "follow"):      # a large file's mapping: walked to the cut, its pages dropped behind
        return _closed(buf, base, idx, tix, limits, end)
    whole = memoryview(buf)
    kept = whole[:end]
    try:
        return _closed(kept, base, idx, tix, limits)
    finally:
        for v in (kept, whole):
            try:
                v.release()
            except BufferError:      # pragma: no cover - a view still in use; the GC releases it
                pass


def _closed(buf, base: int, idx: IndexFile | None, tix: TimeIndexFile | None,
            limits: Limits, end: int | None = None) -> tuple[list[Finding], list[Finding]]:
    """Findings only: neither the time index's convention (which costs decoding records) nor
    the notes and interval of an IndexCheck are reported. ``end``: where the log is cut."""
    oc, tc, walker = _walked(buf, base, idx, tix, None, limits, False, end)
    size = len(buf) if end is None else end
    return (oc.close(walker, size) if oc else []), (tc.close(walker, size) if tc else [])


def segment_index_findings(log_path: str, base: int, scan: ScanReport, listed: set[str],
                           limits: Limits = DEFAULT_LIMITS, log_buf=None,
                           whole: bool = False) -> tuple[tuple[list[Finding], list[Finding]],
                                                         list[KdumpError | None], dict[str, int]]:
    """A segment's ``.index`` and ``.timeindex`` (``index_findings``), read if there (``listed``: the
    directory's file names). One that cannot be read (too large, say) is not checked, and its
    error is returned in its place: the other is checked alone. Last, the size of each read."""
    data: list[SliceReader | None] = [None, None]
    errors: list[KdumpError | None] = [None, None]
    sizes: dict[str, int] = {}
    cut = len(log_path) - len(os.path.basename(log_path))     # p[cut:]: the sibling's name
    try:
        for i, suffix in enumerate((N.INDEX_SUFFIX, N.TIMEINDEX_SUFFIX)):
            p = N.sibling(log_path, suffix)
            try:        # listed, or there after all: a stat only for one the listing lacks
                if p[cut:] in listed or fs.isfile(p):
                    d = data[i] = SliceReader(p, SIDE_FILE_LIMIT)
                    sizes[p] = len(d)
            except KdumpError as e:
                errors[i] = e
        index, timeindex = (None if d is None else d.data() for d in data)
        return (index_findings(log_path, base, scan, index, timeindex, limits=limits, log_buf=log_buf, whole=whole),
                errors, sizes)
    finally:
        for opened in data:
            if opened is not None:
                opened.close()
