"""Producer-state snapshots ``<offset>.snapshot`` (``ProducerStateManager``, ProducerSnapshot.json).

Layout: a 10-byte header, then ``entry_count`` fixed 46-byte entries. The CRC-32C covers
everything after the CRC field, the count included. Kafka validates the structure
first, then the version, then the CRC, and discards the whole file on any failure
(``CorruptSnapshotException``); kdump keeps the entries of a file whose only fault is
its CRC so they can be inspected.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kdump.errors import InvalidFileError, TruncatedError
from kdump.format.crc import crc32c
from kdump.model import ProducerEntry

HEADER = struct.Struct(
    ">h"   # version => int16 (1 is the only version)
    "I"    # crc => uint32, CRC-32C of bytes [6, EOF)
    "i"    # producer_entries count => int32 (non-flexible array)
)
CRC_START = 6
ENTRY = struct.Struct(
    ">q"   # producer_id => int64
    "h"    # epoch => int16
    "i"    # last_sequence => int32
    "q"    # last_offset => int64 (< 0: no batch metadata)
    "i"    # offset_delta => int32
    "q"    # timestamp => int64
    "i"    # coordinator_epoch => int32
    "q"    # current_txn_first_offset => int64 (-1: no open transaction)
)
ENTRY_SIZE = ENTRY.size
assert HEADER.size == 10 and ENTRY_SIZE == 46
SNAPSHOT_VERSION = 1


class ProducerSnapshot(NamedTuple):
    version: int
    crc: int
    computed_crc: int
    crc_valid: bool
    entries: list[ProducerEntry]
    trailing_bytes: int          # bytes after the last entry (Kafka's schema read ignores them)

    @property
    def crc_error(self) -> str | None:
        """Kafka's CorruptSnapshotException text when the CRC does not match, else None."""
        if self.crc_valid:
            return None
        return (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {self.crc}. "
                f"Computed crc: {self.computed_crc}")


def snapshot_header(head, size: int) -> tuple[int, int, int, int]:
    """(version, stored crc, entry count, end of the entries) from the first HEADER.size
    bytes of a snapshot of ``size`` bytes: the structure is checked without the entries.

    Raises TruncatedError / InvalidFileError (with the byte position) when the header or
    the entries do not fit, or the version is not 1.
    """
    if size < 2:
        raise TruncatedError(f"Snapshot failed schema validation: {size} bytes is too short for the version field",
                             position=0)
    (version,) = struct.unpack_from(">h", head, 0)
    # Checked before the rest of the structure: a future version may lay it out differently.
    if version != SNAPSHOT_VERSION:
        raise InvalidFileError(f"Snapshot contained an unknown file version {version}", position=0)
    if size < HEADER.size:
        raise TruncatedError(f"Snapshot failed schema validation: {size} bytes is too short for the "
                             f"{HEADER.size}-byte header", position=size)
    _, crc, count = HEADER.unpack_from(head, 0)
    if count < 0:
        raise InvalidFileError(f"Snapshot failed schema validation: array size {count} cannot be negative",
                               position=CRC_START)
    room = (size - HEADER.size) // ENTRY_SIZE
    if count > room:
        # Checked before anything is built: the count never sizes an allocation.
        raise TruncatedError(f"Snapshot failed schema validation: {count} producer entries need "
                             f"{count * ENTRY_SIZE} bytes, only {size - HEADER.size} available",
                             position=HEADER.size + room * ENTRY_SIZE)
    return version, crc, count, HEADER.size + count * ENTRY_SIZE


def entries_of(data) -> list[ProducerEntry]:
    """The entries packed in ``data`` (a whole number of ENTRY_SIZE slots)."""
    return [ProducerEntry(*fields) for fields in ENTRY.iter_unpack(data)]


def parse_snapshot(data, *, strict: bool = False) -> ProducerSnapshot:
    """Parse a producer snapshot; ``strict`` also raises on a bad CRC, as the broker does.

    Raises as ``snapshot_header`` does when the structure does not fit.
    """
    data = bytes(data)
    size = len(data)
    version, crc, _, end = snapshot_header(data, size)
    computed = crc32c(data[CRC_START:])
    snap = ProducerSnapshot(version, crc, computed, crc == computed, entries_of(data[HEADER.size:end]), size - end)
    if strict and not snap.crc_valid:
        raise InvalidFileError(snap.crc_error or "", position=2)
    return snap
