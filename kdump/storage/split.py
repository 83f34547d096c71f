"""Where a large segment is cut into ranges read separately: ``export``'s slices and
``dump -j``'s pieces of one segment.

Cuts fall on batch boundaries about ``split_bytes`` apart, taken from the ``.index`` when
it passes a sanity check (offsets and positions increasing, inside the log), each entry
used only where it points at a batch that parses, has a valid CRC and holds the entry's
offset, so that a lying index never splits a batch in two. Without a sane index a caller
may ask for a walk of the entry headers instead (``format.walk.entry_at_or_after``: framing
only, the boundaries the Walker would reach).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

from kdump.errors import KdumpError
from kdump.format.walk import entry_at_or_after, last_offset_at
from kdump.storage.index_seek import batch_starts_at, index_entries, is_sane
from kdump.storage.logdir import LogFile
from kdump.storage.mapped import MappedFile

DEFAULT_SPLIT_BYTES = 32 << 20       # export's: a range is ~1-2 s of decoding per task
# dump --json's: its ranges are rendered at hundreds of MB/s, and a -j worker holds a range's
# output until its turn (up to ordered_output's SPILL_AT, 16 MiB): a range of 32 MiB makes
# ~45 MB of NDJSON, and the next worker waited. 268 MB at -j 2 on 2 cores: 0.37 s cut at
# 32 MiB, 0.31 s at 8 MiB (-j 1: 0.34 s); 1 GiB: 0.95 s / 0.90 s (-j 1: 1.08 s).
DUMP_SPLIT_BYTES = 8 << 20


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
    with sane_entries(f, size) as entries:
        return [] if entries is None and not walk else _cuts(f, size, split_bytes, entries)


def _cuts(f: LogFile, size: int, split_bytes: int, entries) -> list[Cut]:
    try:
        # a remote segment cut at its index: only the batches at the cuts are fetched
        mapped = MappedFile(f.path, lazy=entries is not None)
    except KdumpError:
        return []
    out: list[Cut] = []
    last = 0
    try:
        if entries is None:
            # where entries start, by their framing alone (no CRC, no wrapper inflated, no
            # object): in the parent, before any worker starts, a full walk cost -j 2 more
            # than it saved (a 1 GiB segment's CRCs, a v1 gzip segment's inflating)
            pos = 0
            if hasattr(mapped.buf, "counting"):
                mapped.buf.counting = False     # hopping header to header is not reading (--io-limit)
            while size - (last + split_bytes) >= split_bytes // 4:
                found = entry_at_or_after(mapped.buf, pos, last + split_bytes, size)
                if found is None or size - found < split_bytes // 4:
                    break
                out.append(Cut(found, last_offset_at(mapped.buf, found), None))
                pos = last = found
            return out
        # a chunked object's (storage.aiven_chunks): cuts just past a chunk's start, so that a
        # range's reader decompresses the chunk after its own only as far as its last batch
        chunk = getattr(mapped.buf, "chunk_bytes", 0)
        chunk = chunk if 0 < 2 * chunk <= split_bytes else 1
        for i, e in enumerate(entries):
            if e.position < (last + split_bytes) // chunk * chunk or size - e.position < split_bytes // 4:
                continue
            # Reuses the reader's own check of "does this index entry point at its batch".
            if batch_starts_at(mapped.buf, e.position, e.offset, size):
                out.append(Cut(e.position, e.offset, entries[i - 1].offset if i else None))
                last = e.position
    finally:
        mapped.close()
    return out


@contextlib.contextmanager
def sane_entries(f: LogFile, log_size: int) -> Iterator:
    """The segment's ``.index`` entries while the block runs, or None: absent, unreadable or
    not sane."""
    with index_entries(f) as entries:
        yield entries if entries is not None and is_sane(entries, log_size) else None
