"""Where a dump with a start offset or time begins: the ``.index``/``.timeindex`` beside the
segment, used only when they pass a sanity check, and the batch found there checked before it
is trusted (``SegmentReader``'s seek; ``verify`` is where an index's damage is reported)."""

from __future__ import annotations

import os

from kdump.errors import KdumpError
from kdump.format.walk import HEADER_UP_TO_MAGIC, Walker
from kdump.storage import fs, views
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import read_small
from kdump.storage.names import INDEX_SUFFIX, TIMEINDEX_SUFFIX, offset_path


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
    entries = index_entries(f)
    if entries is None:
        return 0, None
    if not is_sane(entries, end):
        return 0, "offset index is not sane; read from the start"
    # The last entry strictly below the target: its batch ends before the target under
    # both conventions (entry = batch last offset since 2.0, base offset before).
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid].offset < target:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return 0, None
    entry = entries[lo - 1]
    if not batch_starts_at(buf, entry.position, entry.offset, end):
        return 0, f"index entry for offset {entry.offset} does not point at its batch; read from the start"
    return entry.position, f"seeked to position {entry.position} with the offset index"


def _beside(f: LogFile, suffix: str, parse):
    """The index file of this segment parsed, or None: absent or unreadable, it is simply
    not used to seek."""
    if f.base_offset is None:     # a .log not named by its offset has none beside it
        return None
    if views.has(f.path):           # a layout's object: its layout says where its index is
        try:
            path = views.beside(f.path, suffix)
        except KdumpError:
            return None
        if path is None:
            return None
    else:
        path = offset_path(os.path.dirname(f.path), f.base_offset, suffix)
        if not fs.isfile(path):
            return None
    try:
        return parse(read_small(path, 256 << 20), f.base_offset)
    except (KdumpError, OSError):
        return None


def index_entries(f: LogFile):
    """The entries of the segment's ``.index``, or None: absent or unreadable."""
    from kdump.format.index import parse_index  # (only a seek or a split needs it: the start-up stays lean)

    index = _beside(f, INDEX_SUFFIX, parse_index)
    return None if index is None else index.entries


def is_sane(entries, log_size: int) -> bool:
    """Offsets and positions strictly rising, every position inside the log: an index a seek
    or a split may trust."""
    prev_off = prev_pos = -1
    for e in entries:
        if e.offset <= prev_off or e.position <= prev_pos or e.position >= log_size:
            return False
        prev_off, prev_pos = e.offset, e.position
    return True


def _time_seek_offset(f: LogFile, start_time: int) -> int | None:
    """First offset that can hold a timestamp >= start_time, from a sane time index."""
    from kdump.format.timeindex import parse_timeindex

    tidx = _beside(f, TIMEINDEX_SUFFIX, parse_timeindex)
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
