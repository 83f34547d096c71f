"""The time index ``<base>.timeindex`` (``TimeIndex.java``).

12-byte slots, no header, preallocated and trimmed like the offset index (see
``index.py``). Each entry is (max timestamp so far, the offset it belongs to); the
broker appends one only when the timestamp grows, so the timestamps strictly increase
and an all-v0 segment has an empty time index.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kdump.errors import InvalidFileError
from kdump.format.index import (
    CHUNK_BYTES,
    Entries,
    SlotUnpack,
    last_whole_slot,
    relative_offset,
    slot_layout,
    whole_slots,
)
from kdump.model import TimeIndexEntry

ENTRY = struct.Struct(
    ">q"   # timestamp => int64 (max timestamp so far, ms)
    "i"    # relative_offset => int32 (offset - base offset)
)
ENTRY_SIZE = ENTRY.size
assert ENTRY_SIZE == 12

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class TimeIndexFile(NamedTuple):
    """A parsed ``.timeindex``: the real entries and what follows them."""

    entries: Sequence[TimeIndexEntry]      # a list, or ``Entries`` (``timeindex_entries(lazy=True)``)
    zero_tail_start: int | None
    nonzero_after_tail: int | None
    partial_bytes: int
    size: int
    base_offset: int
    first_slot: tuple[int, int] | None   # raw (timestamp, relative_offset) of slot 0
    last_slot: tuple[int, int] | None    # raw last whole slot, zero tail included

    @property
    def slots(self) -> int:
        return self.size // ENTRY_SIZE

    def sanity_check(self, file_name: str, wording: str = "java") -> list[str]:
        if self.first_slot is None or self.last_slot is None:
            return sanity_check_timeindex(self.size, None, None, None, self.base_offset, file_name, wording)
        return sanity_check_timeindex(self.size, self.first_slot[0], self.last_slot[0], self.last_slot[1],
                                      self.base_offset, file_name, wording)


def timeindex_entries(data, base_offset: int, lazy: bool = False) -> TimeIndexFile:
    """The ``.timeindex`` in ``data``; never raises on content. The zero tail begins at the first
    slot i > 0 with timestamp 0 and relative offset 0 (``index.slot_layout``). ``lazy``: entries
    are read from ``data`` as they are walked."""
    partial, size = whole_slots(data, ENTRY_SIZE)
    layout = slot_layout(data, ENTRY_SIZE)
    new = tuple.__new__
    unpack = SlotUnpack(ENTRY, lambda raw: [new(TimeIndexEntry, (ts, base_offset + rel)) for ts, rel in raw])
    lazy_entries = Entries(data, layout.live, unpack)
    first = ENTRY.unpack(bytes(data[:ENTRY_SIZE])) if size >= ENTRY_SIZE else None
    return TimeIndexFile(lazy_entries if lazy and size > CHUNK_BYTES else lazy_entries.listed(), layout.zero_tail_start,
                         layout.nonzero_after_tail, partial, size, base_offset, first, last_whole_slot(data, ENTRY))


def parse_timeindex(data, base_offset: int) -> TimeIndexFile:
    """Parse the bytes of a ``.timeindex``; never raises on content."""
    return timeindex_entries(data, base_offset)


def sanity_check_timeindex(size: int, first_timestamp: int | None, last_timestamp: int | None,
                           last_relative_offset: int | None, base_offset: int, file_name: str,
                           wording: str = "java") -> list[str]:
    """``TimeIndex.sanityCheck()``: the messages of every failing condition, in Kafka's order.

    Kafka throws with the first. Faithful to Kafka, the last *slot* is used, so an
    untrimmed zero tail (timestamp 0) fails the first check on any live segment: a known
    false positive that kdump's own verification does not share. ``wording="scala"`` adds
    the trailing period the Scala broker put on the size message.
    """
    out = []
    if size // ENTRY_SIZE != 0 and first_timestamp is not None and last_timestamp is not None:
        if last_timestamp < first_timestamp:
            out.append(f"Corrupt time index found, time index file ({file_name}) has non-zero size but the last "
                       f"timestamp is {last_timestamp} which is less than the first timestamp {first_timestamp}")
        last_offset = base_offset + (last_relative_offset or 0)
        if last_offset < base_offset:
            out.append(f"Corrupt time index found, time index file ({file_name}) has non-zero size but the last "
                       f"offset is {last_offset} which is less than the first offset {base_offset}")
    if size % ENTRY_SIZE != 0:
        dot = "." if wording == "scala" else ""
        out.append(f"Time index file {file_name} is corrupt, found {size} bytes which is neither positive "
                   f"nor a multiple of {ENTRY_SIZE}{dot}")
    return out


def encode_timeindex(entries: Iterable[TimeIndexEntry | tuple[int, int]], base_offset: int) -> bytes:
    """The bytes of a trimmed ``.timeindex`` holding ``entries`` (timestamp, absolute offset)."""
    out = bytearray()
    for timestamp, offset in entries:
        at = len(out)
        if not INT64_MIN <= timestamp <= INT64_MAX:
            raise InvalidFileError(f"timestamp {timestamp} does not fit in int64", position=at, offset=offset)
        out += ENTRY.pack(timestamp, relative_offset(offset, base_offset, at))
    return bytes(out)
