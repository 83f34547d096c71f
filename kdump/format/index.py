"""The offset index ``<base>.index`` (``OffsetIndex.java``, ``AbstractIndex.java``).

A flat array of 8-byte slots, no header. While a segment is active the broker
preallocates the file (``segment.index.bytes``) and fills it from the front, so an
active or crashed segment ends in a run of all-zero slots; a rolled segment is trimmed.
Kafka itself cannot tell a zero slot from an entry: it counts ``length // 8`` slots.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
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

    entries: Sequence[IndexEntry]      # absolute offsets; slots before the zero tail only (a list, or
                                       # ``Entries`` read as walked: ``index_entries(lazy=True)``)
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


CHUNK_BYTES = 1 << 19     # bytes of slots read at a time (a multiple of 8, 12 and 34 is not needed: see chunks)


def chunks(data, size: int, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
    """Whole slots ``[start, stop)`` of ``data`` as bytes, about ``CHUNK_BYTES`` at a time.

    ``data`` is anything with ``len`` and slicing (bytes, a map, ``storage.slice_reader.SliceReader``):
    a 100 MB index is walked without holding it, or its entries as objects."""
    n = len(data) // size if stop is None else stop
    step = max(1, CHUNK_BYTES // size) * size
    if (n - start) * size <= step:      # the usual small file: one piece
        return iter((bytes(data[start * size:n * size]),) if n > start else ())
    return (bytes(data[a:min(a + step, n * size)]) for a in range(start * size, n * size, step))


class SlotLayout(NamedTuple):
    """Where a slot file's entries end: what ``split_zero_tail`` used to return, without the slots."""

    live: int                       # slots before the zero tail (the entries)
    zero_tail_start: int | None     # first slot of the zero-filled preallocated tail
    nonzero_after_tail: int | None  # first non-zero slot after that tail began (damage)


def slot_layout(data, size: int) -> SlotLayout:
    """The zero tail of a slot file: it begins at the first all-zero slot i > 0 (slot 0 always
    counts as an entry, as in DumpLogSegments). Found with ``bytes.find`` a chunk at a time,
    never unpacking a slot."""
    n = len(data) // size
    zero = bytes(size)
    if isinstance(data, bytes) and n * size <= CHUNK_BYTES:
        return _small_layout(data, size, n, zero)
    tail = None
    for first_slot, piece in zip(range(0, n, max(1, CHUNK_BYTES // size)), chunks(data, size)):
        at = size if first_slot == 0 else 0          # slot 0 is an entry even when zero
        while (i := piece.find(zero, at)) != -1:
            if i % size == 0:
                tail = first_slot + i // size
                break
            at = (i // size + 1) * size              # a zero run across two slots: search on from the next
        if tail is not None:
            break
    if tail is None:
        return SlotLayout(n, None, None)
    after = None
    for first_slot, piece in zip(range(tail + 1, n, max(1, CHUNK_BYTES // size)), chunks(data, size, tail + 1)):
        rest = piece.lstrip(b"\0")
        if rest:
            after = first_slot + (len(piece) - len(rest)) // size
            break
    return SlotLayout(tail, tail, after)


def _small_layout(data: bytes, size: int, n: int, zero: bytes) -> SlotLayout:
    """``slot_layout`` of a file of one chunk (the usual index), searched in place."""
    end = n * size
    at = size
    while (i := data.find(zero, at, end)) != -1:
        if i % size == 0:
            break
        at = (i // size + 1) * size
    else:
        return SlotLayout(n, None, None)
    tail = i // size
    piece = data[(tail + 1) * size:end]
    rest = piece.lstrip(b"\0")
    return SlotLayout(tail, tail, tail + 1 + (len(piece) - len(rest)) // size if rest else None)


class Entries(Sequence):
    """The entries of a slot file, unpacked from ``data`` as they are iterated: each walk reads
    the file again, a chunk at a time, so a 100 MB index is never held as objects."""

    def __init__(self, data, live: int, unpack) -> None:
        self.data, self.live, self.unpack = data, live, unpack     # unpack(chunk) -> list of entries

    def __len__(self) -> int:
        return self.live

    def __iter__(self) -> Iterator:
        for piece in chunks(self.data, self.unpack.size, 0, self.live):
            yield from self.unpack(piece)

    def listed(self) -> list:
        """Every entry, as a list (a small file's, or ``parse_*``'s)."""
        data, size = self.data, self.unpack.size
        if isinstance(data, bytes) and self.live * size <= CHUNK_BYTES:     # one chunk: no pieces
            return self.unpack(data[:self.live * size]) if self.live else []
        return [e for piece in chunks(self.data, self.unpack.size, 0, self.live) for e in self.unpack(piece)]

    def __getitem__(self, i):       # (a slice or an index: the rare lookups, one slot each)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.live))]
        if i < 0:
            i += self.live
        if not 0 <= i < self.live:
            raise IndexError(i)
        size = self.unpack.size
        return self.unpack(bytes(self.data[i * size:(i + 1) * size]))[0]


class SlotUnpack:
    """``chunk -> entries`` for one file's base offset (what ``Entries`` and the parsers share)."""

    def __init__(self, entry: struct.Struct, make) -> None:
        self.size, self.iter_unpack, self.make = entry.size, entry.iter_unpack, make

    def __call__(self, piece: bytes) -> list:
        return self.make(self.iter_unpack(piece))


def whole_slots(data, entry_size: int) -> tuple[int, int]:
    """(bytes of a torn last slot, size)."""
    size = len(data)
    return size % entry_size, size


def last_whole_slot(data, entry: struct.Struct) -> tuple | None:
    n = len(data) // entry.size
    return entry.unpack(bytes(data[(n - 1) * entry.size:n * entry.size])) if n else None


def index_entries(data, base_offset: int, lazy: bool = False) -> IndexFile:
    """The ``.index`` in ``data`` whose segment starts at ``base_offset``; never raises on content.
    ``lazy``: entries are read from ``data`` as they are walked (it must stay readable)."""
    partial, size = whole_slots(data, ENTRY_SIZE)
    layout = slot_layout(data, ENTRY_SIZE)
    new = tuple.__new__         # cheaper than the named constructor, per entry
    unpack = SlotUnpack(ENTRY, lambda raw: [new(IndexEntry, (base_offset + rel, pos)) for rel, pos in raw])
    lazy_entries = Entries(data, layout.live, unpack)
    entries = lazy_entries if lazy and size > CHUNK_BYTES else lazy_entries.listed()    # (small: a list is faster)
    return IndexFile(entries, layout.zero_tail_start, layout.nonzero_after_tail, partial, size, base_offset,
                     last_whole_slot(data, ENTRY))


def parse_index(data, base_offset: int) -> IndexFile:
    """Parse the bytes of a ``.index`` whose segment starts at ``base_offset``; never raises on content."""
    return index_entries(data, base_offset)


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
