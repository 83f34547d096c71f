"""Where a dump with a start offset or time begins: the ``.index``/``.timeindex`` beside the
segment, used only when they pass a sanity check, and the batch found there checked before it
is trusted (``SegmentReader``'s seek; ``verify`` is where an index's damage is reported).

An index is read a slice at a time (``SliceReader``): the sanity check walks it a chunk at a
time and the seek is a binary search of one slot a probe, so a 100 MB ``.index`` costs a
chunk of memory, not its 12 million entries as objects.
"""

from __future__ import annotations

import contextlib
import os
import sys
from array import array
from collections.abc import Iterable, Iterator
from itertools import islice
from operator import lt

from kdump.errors import KdumpError
from kdump.format.walk import HEADER_UP_TO_MAGIC, Walker
from kdump.storage import fs, views
from kdump.storage.logdir import LogFile
from kdump.storage.names import INDEX_SUFFIX, TIMEINDEX_SUFFIX, offset_path

INDEX_LIMIT = 256 << 20     # larger is not an index a seek trusts (a broker's is 10 MB by default)


def start_position(f: LogFile, buf, end: int, start_offset: int | None,
                   start_time: int | None) -> tuple[int, str | None]:
    """(position, note): where the walk may start for records at or after ``start_offset`` and
    ``start_time`` (0: the start of the segment), and how it was found (None: not seeked)."""
    if start_offset is None and start_time is None:
        return 0, None
    if f.kind != "log" or f.base_offset is None or f.leftover:
        return 0, None
    target = start_offset
    if start_time is not None:
        skip_to = _time_seek_offset(f, start_time)
        if skip_to is not None:
            target = skip_to if target is None else max(target, skip_to)
    if target is None:
        return 0, None
    with index_entries(f) as entries:
        if entries is None:
            return 0, None
        if not is_sane(entries, end):
            return 0, "offset index is not sane; read from the start"
        entry = _last_below(entries, target)
    if entry is None:
        return 0, None
    if not batch_starts_at(buf, entry.position, entry.offset, end):
        return 0, f"index entry for offset {entry.offset} does not point at its batch; read from the start"
    return entry.position, f"seeked to position {entry.position} with the offset index"


def _last_below(entries, target: int):
    """The last entry strictly below ``target`` (None: none is), one slot read a probe."""
    # The last entry strictly below the target: its batch ends before the target under
    # both conventions (entry = batch last offset since 2.0, base offset before).
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid].offset < target:
            lo = mid + 1
        else:
            hi = mid
    return entries[lo - 1] if lo else None


@contextlib.contextmanager
def _beside(f: LogFile, suffix: str, parse) -> Iterator:
    """The index file of this segment parsed, its entries read as walked while the block
    runs, or None: absent or unreadable, it is simply not used to seek."""
    from kdump.storage.slice_reader import SliceReader

    if f.base_offset is None:     # a .log not named by its offset has none beside it
        yield None
        return
    path: str | None = None
    if views.has(f.path):           # a layout's object: its layout says where its index is
        with contextlib.suppress(KdumpError):
            path = views.beside(f.path, suffix)
    else:
        path = offset_path(os.path.dirname(f.path), f.base_offset, suffix)
    reader = None
    try:
        if path is not None and (views.has(path) or fs.isfile(path)):
            reader = SliceReader(path, INDEX_LIMIT)
            parsed = parse(reader.data(), f.base_offset, lazy=True)
        else:
            parsed = None
    except (KdumpError, OSError):
        parsed = None
    try:
        yield parsed
    finally:
        if reader is not None:
            reader.close()


@contextlib.contextmanager
def index_entries(f: LogFile) -> Iterator:
    """The entries of the segment's ``.index`` while the block runs (a Sequence read a slot
    or a chunk at a time), or None: absent or unreadable."""
    from kdump.format.index import index_entries as parse  # (only a seek or a split needs it)

    with _beside(f, INDEX_SUFFIX, parse) as index:
        yield None if index is None else index.entries


def is_sane(entries, log_size: int) -> bool:
    """Offsets and positions strictly rising, every position inside the log: an index a seek
    or a split may trust. Walked a chunk of slots at a time, compared as machine integers."""
    from kdump.format.index import chunks

    data, live, base = getattr(entries, "data", None), len(entries), None
    if data is None:        # a list of entries (what a caller built itself)
        pieces: Iterable = (array("q", (v for e in entries for v in (e.offset, e.position))),)
        base = 0
    else:
        pieces = (_slots(piece) for piece in chunks(data, 8, 0, live))
        base = entries[0].offset - _slots(bytes(data[:8]))[0] if live else 0
    prev_off = prev_pos = -1
    for a in pieces:
        offs, poss = a[0::2], a[1::2]
        if not offs:
            continue
        if base + offs[0] <= prev_off or poss[0] <= prev_pos:
            return False
        if not (all(map(lt, offs, islice(offs, 1, None))) and all(map(lt, poss, islice(poss, 1, None)))):
            return False
        prev_off, prev_pos = base + offs[-1], poss[-1]
    return prev_pos < log_size


def _slots(piece: bytes) -> array:
    """Big-endian int32 pairs (relative offset, position) as machine integers."""
    a = array("i", piece)       # (4 bytes on every platform CPython builds for)
    if sys.byteorder == "little":
        a.byteswap()
    return a


def _time_seek_offset(f: LogFile, start_time: int) -> int | None:
    """First offset that can hold a timestamp >= start_time, from a sane time index."""
    from kdump.format.timeindex import timeindex_entries

    with _beside(f, TIMEINDEX_SUFFIX, timeindex_entries) as tidx:
        if tidx is None:
            return None
        best = None
        prev_ts = prev_off = -1
        for e in tidx.entries:
            if e.timestamp < prev_ts or e.offset < prev_off:
                return None          # not sane: never skip on an index that contradicts itself
            prev_ts, prev_off = e.timestamp, e.offset
            # Each entry is the max timestamp of everything up to its offset.
            if e.timestamp < start_time:
                best = e.offset + 1
        return best


def batch_starts_at(buf, position: int, entry_offset: int, end: int) -> bool:
    """Whether a whole batch with a valid CRC starts at ``position`` and holds ``entry_offset``
    (an index entry pointing at its batch)."""
    if position + HEADER_UP_TO_MAGIC.size > end:
        return False
    need = getattr(buf, "need", None)       # a remote file's lazy copy: fetch what is read here
    try:
        if need is not None:
            need(position, position + HEADER_UP_TO_MAGIC.size)
        first, size, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, position)
    except Exception:  # noqa: BLE001 - any failure means "do not trust the index"
        return False
    if magic not in (0, 1, 2) or size < 14 or position + 12 + size > end:
        return False
    if need is not None:
        need(position, position + 12 + size)
    walker = Walker(buf, position, position + 12 + size)
    batch = next(iter(walker), None)
    if batch is None or not batch.crc_valid:
        return False
    low = batch.base_offset if batch.base_offset is not None else batch.last_offset
    return low <= entry_offset <= batch.last_offset
