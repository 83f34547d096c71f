"""The offset index ``<base>.index`` (``OffsetIndex.java``, ``AbstractIndex.java``).

A flat array of 8-byte slots, no header. While a segment is active the broker
preallocates the file (``segment.index.bytes``) and fills it from the front, so an
active or crashed segment ends in a run of all-zero slots; a rolled segment is trimmed.
Kafka itself cannot tell a zero slot from an entry: it counts ``length // 8`` slots.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from kdump.errors import InvalidFileError
from kdump.model import IndexEntry

ENTRY = struct.Struct(
    ">i"   # relative_offset => int32 (offset - base offset)
    "i"    # position => int32 (byte position of a batch in the .log)
)
ENTRY_SIZE = ENTRY.size
assert ENTRY_SIZE == 8

INT32_MAX = 0x7FFFFFFF


class IndexFile(NamedTuple):
    """A parsed ``.index``: the real entries and what follows them."""

    entries: list[IndexEntry]          # absolute offsets; slots before the zero tail only
    zero_tail_start: int | None        # first slot of the zero-filled preallocated tail
    nonzero_after_tail: int | None     # first non-zero slot after that tail began (damage)
    partial_bytes: int                 # length % 8: bytes of a torn last slot
    size: int
    base_offset: int
    last_slot: tuple[int, int] | None  # raw (relative_offset, position) of the last whole slot

    @property
    def slots(self) -> int:
        """Whole slots, as Kafka counts entries (zero tail included)."""
        return self.size // ENTRY_SIZE

    def sanity_check(self, file_name: str, wording: str = "java") -> list[str]:
        last_rel = None if self.last_slot is None else self.last_slot[0]
        return sanity_check_index(self.size, last_rel, self.base_offset, file_name, wording)


def split_zero_tail(body: bytes, entry: struct.Struct, is_zero) -> tuple[list[tuple], int | None, int | None]:
    """Raw slots before the zero tail, the tail's first slot, and the first non-zero slot after it.

    ``body`` holds whole slots only. The tail begins at the first slot i > 0 for which
    ``is_zero(slot)``; slot 0 always counts as an entry, as in DumpLogSegments. Only the
    slots up to the last non-zero byte are unpacked, so a 10 MiB preallocated file costs
    one ``rstrip``.
    """
    size = entry.size
    n = len(body) // size
    # Slots [used, n) are all zero; slot 0 is always read, being an entry even when zero.
    used = min(n, max(1, -(-len(body.rstrip(b"\0")) // size)))
    raw = list(entry.iter_unpack(body[:used * size]))
    tail = None
    after = None
    for i in range(1, len(raw)):
        if is_zero(raw[i]):
            tail = i
            break
    if tail is not None:
        for i in range(tail + 1, len(raw)):
            if not is_zero(raw[i]):
                after = i
                break
        del raw[tail:]
    elif used < n:
        tail = used
    return raw, tail, after


def whole_slots(data, entry_size: int) -> tuple[bytes, int, int]:
    size = len(data)
    partial = size % entry_size
    return bytes(data[:size - partial]), partial, size


def parse_index(data, base_offset: int) -> IndexFile:
    """Parse the bytes of a ``.index`` whose segment starts at ``base_offset``; never raises on content."""
    body, partial, size = whole_slots(data, ENTRY_SIZE)
    raw, tail, after = split_zero_tail(body, ENTRY, lambda s: s[0] == 0 and s[1] == 0)
    new = tuple.__new__         # cheaper than the named constructor, per entry
    entries = [new(IndexEntry, (base_offset + rel, pos)) for rel, pos in raw]
    last = ENTRY.unpack_from(body, len(body) - ENTRY_SIZE) if body else None
    return IndexFile(entries, tail, after, partial, size, base_offset, last)


def sanity_check_index(size: int, last_relative_offset: int | None, base_offset: int, file_name: str,
                       wording: str = "java") -> list[str]:
    """``OffsetIndex.sanityCheck()``: the messages of every failing condition, in Kafka's order.

    Kafka throws ``CorruptIndexException`` with the first one. ``last_relative_offset`` is
    the last *slot* (zero tail included, so an untrimmed tail passes), None if no slot.
    ``wording="scala"`` gives the text of brokers before the Java port (path in parentheses).
    """
    out = []
    last_offset = base_offset if last_relative_offset is None else base_offset + last_relative_offset
    if size // ENTRY_SIZE != 0 and last_offset < base_offset:
        where = f"({file_name})" if wording == "scala" else file_name
        out.append(f"Corrupt index found, index file {where} has non-zero size but the last offset "
                   f"is {last_offset} which is less than the base offset {base_offset}")
    if size % ENTRY_SIZE != 0:
        out.append(f"Index file {file_name} is corrupt, found {size} bytes which is neither positive "
                   f"nor a multiple of {ENTRY_SIZE}")
    return out


def relative_offset(offset: int, base_offset: int, position: int) -> int:
    """``offset - base_offset`` if it fits an index slot, else InvalidFileError (IndexOffsetOverflowException)."""
    rel = offset - base_offset
    if not 0 <= rel <= INT32_MAX:
        raise InvalidFileError(f"Integer overflow for offset: {offset} (base offset {base_offset}): the relative "
                               f"offset {rel} does not fit in an index entry", position=position, offset=offset)
    return rel


def encode_index(entries: Iterable[IndexEntry | tuple[int, int]], base_offset: int) -> bytes:
    """The bytes of a trimmed ``.index`` holding ``entries`` (absolute offsets)."""
    out = bytearray()
    for offset, position in entries:
        at = len(out)
        rel = relative_offset(offset, base_offset, at)
        if not 0 <= position <= INT32_MAX:
            raise InvalidFileError(f"log position {position} does not fit in an index entry", position=at,
                                   offset=offset)
        out += ENTRY.pack(rel, position)
    return bytes(out)
