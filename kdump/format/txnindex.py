"""The transaction index ``<base>.txnindex`` (``TransactionIndex.java``, ``AbortedTxn.java``).

34-byte entries, no header, one per aborted transaction that ended in the segment. The
file is created lazily (absent when nothing was aborted) and is never preallocated.
Kafka iterates whole entries and ignores a partial trailing one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import NamedTuple

from kdump.errors import InvalidFileError
from kdump.format.index import CHUNK_BYTES, Entries, SlotUnpack
from kdump.model import AbortedTxn

ENTRY = struct.Struct(
    ">h"   # version => int16 (0); Kafka reads only its first byte, see kafka_version()
    "q"    # producer_id => int64
    "q"    # first_offset => int64
    "q"    # last_offset => int64
    "q"    # last_stable_offset => int64
)
ENTRY_SIZE = ENTRY.size
assert ENTRY_SIZE == 34
CURRENT_VERSION = 0


class TxnIndexFile(NamedTuple):
    entries: Sequence[AbortedTxn]     # a list, or ``Entries`` read as walked (``txnindex_entries(lazy=True)``)
    partial_bytes: int       # bytes of a torn last entry (Kafka skips them silently)
    size: int


def txnindex_entries(data, lazy: bool = False) -> TxnIndexFile:
    """The ``.txnindex`` in ``data``; never raises on content. ``lazy``: entries are unpacked
    from ``data`` a chunk at a time as they are walked (``index.Entries``)."""
    size = len(data)
    new = tuple.__new__
    entries = Entries(data, size // ENTRY_SIZE, SlotUnpack(ENTRY, lambda raw: [new(AbortedTxn, t) for t in raw]))
    return TxnIndexFile(entries if lazy and size > CHUNK_BYTES else entries.listed(), size % ENTRY_SIZE, size)


def parse_txnindex(data) -> TxnIndexFile:
    """Parse the bytes of a ``.txnindex``; never raises on content."""
    return txnindex_entries(data)


def kafka_version(txn: AbortedTxn) -> int:
    """The version as Kafka reads it.

    Quirk: ``AbortedTxn.version()`` reads ONE signed byte at offset 0, the high byte of
    the int16 the writer put there. kdump keeps the int16 in ``AbortedTxn.version``; this
    is what the broker would see (0 for every int16 below 256).
    """
    high = (txn.version >> 8) & 0xFF
    return high - 256 if high >= 128 else high


def version_errors(entries: Iterable[AbortedTxn], file_name: str) -> list[str]:
    """The KafkaException text the broker's iterator throws for each entry of a future version."""
    return [f"Unexpected aborted transaction version {kafka_version(t)} in transaction index {file_name}, "
            f"current version is {CURRENT_VERSION}"
            for t in entries if kafka_version(t) > CURRENT_VERSION]


def _txn_str(t: AbortedTxn) -> str:
    return (f"AbortedTxn(version={kafka_version(t)}, producerId={t.producer_id}, firstOffset={t.first_offset}, "
            f"lastOffset={t.last_offset}, lastStableOffset={t.last_stable_offset})")


def sanity_check_txnindex(entries: Iterable[AbortedTxn], start_offset: int, file_name: str,
                          limit: int | None = None) -> list[str]:
    """``TransactionIndex.sanityCheck()``: one message per entry ending before the segment base
    (the first ``limit`` of them).

    Kafka throws ``CorruptIndexException`` with the first; this is the only index check
    a broker still runs at load (it triggers recovery of the segment).
    """
    bad = (t for t in entries if t.last_offset < start_offset)
    return [f"Last offset of aborted transaction {_txn_str(t)} in index {file_name} is less than start offset "
            f"{start_offset}"
            for t in (bad if limit is None else islice(bad, limit))]


def encode_txnindex(entries: Iterable[AbortedTxn | tuple[int, int, int, int, int]]) -> bytes:
    """The bytes of a ``.txnindex`` holding ``entries`` (version, producer id, first, last, LSO)."""
    out = bytearray()
    for entry in entries:
        try:
            out += ENTRY.pack(*entry)
        except struct.error as e:
            raise InvalidFileError(f"aborted transaction {tuple(entry)} does not fit the entry layout: {e}",
                                   position=len(out)) from None
    return bytes(out)
