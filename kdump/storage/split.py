"""Where a large segment is cut into ranges read separately: ``export``'s slices and
``dump -j``'s pieces of one segment.

Cuts fall on batch boundaries about ``split_bytes`` apart, taken from the ``.index`` when
it passes a sanity check (offsets and positions increasing, inside the log), each entry
used only where it points at a batch that parses, has a valid CRC and holds the entry's
offset, so that a lying index never splits a batch in two. Without a sane index a caller
may ask for a header walk (``format.walk.Walker``) instead.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kdump.errors import KdumpError
from kdump.format.index import parse_index
from kdump.format.walk import Walker
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import MappedFile, read_small
from kdump.storage.names import INDEX_SUFFIX, offset_path
from kdump.storage.reader import SegmentReader

DEFAULT_SPLIT_BYTES = 32 << 20       # a range: ~1-2 s of decoding per task


class Cut(NamedTuple):
    position: int               # where a batch starts
    offset: int                 # the index entry's offset there (a walk: the batch's last offset)
    before: int | None          # the offset of the index entry before it (a walk: None)


def cuts(f: LogFile, size: int, split_bytes: int, walk: bool = False) -> list[Cut]:
    """The cuts of a segment of ``size`` bytes, about ``split_bytes`` apart, none in its last
    quarter-range; none when it is not larger than ``split_bytes``, cannot be read, or has no
    sane index (unless ``walk``: then a walk of its batch headers gives them)."""
    if split_bytes <= 0 or size < split_bytes + split_bytes // 4:
        return []       # (a cut is split_bytes in at least, and a quarter of that from the end)
    entries = sane_entries(f, size)
    if entries is None and not walk:
        return []
    try:
        # a remote segment cut at its index: only the batches at the cuts are fetched
        mapped = MappedFile(f.path, lazy=entries is not None)
    except KdumpError:
        return []
    out: list[Cut] = []
    last = 0
    try:
        if entries is None:
            # boundaries only: a v1 gzip segment's wrappers are not inflated here, in the
            # parent, before any worker starts (that walk cost -j 2 more than it saved)
            for b in Walker(mapped.buf, 0, size, open_wrappers=False):
                if b.position - last >= split_bytes and size - b.position >= split_bytes // 4:
                    out.append(Cut(b.position, b.last_offset, None))
                    last = b.position
            return out
        for i, e in enumerate(entries):
            if e.position - last < split_bytes or size - e.position < split_bytes // 4:
                continue
            # Reuses the reader's own check of "does this index entry point at its batch".
            if SegmentReader._batch_starts_at(mapped.buf, e.position, e.offset, size):
                out.append(Cut(e.position, e.offset, entries[i - 1].offset if i else None))
                last = e.position
    finally:
        mapped.close()
    return out


def sane_entries(f: LogFile, log_size: int):
    """The segment's ``.index`` entries, or None: absent, unreadable or not sane."""
    if f.base_offset is None:       # a .log not named by its offset has none beside it
        return None
    path = offset_path(os.path.dirname(f.path), f.base_offset, INDEX_SUFFIX)
    try:
        entries = parse_index(read_small(path, 256 << 20), f.base_offset).entries
    except (KdumpError, OSError):
        return None
    prev_off = prev_pos = -1
    for e in entries:
        if e.offset <= prev_off or e.position <= prev_pos or e.position >= log_size:
            return None
        prev_off, prev_pos = e.offset, e.position
    return entries
