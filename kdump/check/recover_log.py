"""Which segments a broker's startup recovers after a crash, and which of their damage it cuts.

Kafka's ``LogLoader`` recovers a segment in two places:

- ``loadSegmentFiles``, whatever the recovery point and even after a clean shutdown: a segment
  opened without its ``.index`` (``NoSuchFileException``) or whose ``.txnindex`` fails
  ``TransactionIndex.sanityCheck`` (``CorruptIndexException``) goes through
  ``LogSegment.recover`` at once. Its damage is cut there; nothing else goes.
- ``recoverLog``, after a crash only: every segment from the one holding the recovery point
  (``recovery-point-offset-checkpoint``; 0 when the partition is not listed) to the log end.
  The first one whose recovery truncates bytes is cut and every later segment is deleted.
  A segment already cut at load recovers clean the second time: it truncates nothing then.

Damage in a segment neither place recovers stays as it is: the broker serves it.
``check.loader_rule`` (``kdump recover``'s plan) and ``check.loss`` (``verify``'s summary)
take the rule from here; ``tests/kafka/test_recovery_parity.py`` checks both against a broker.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kdump.check.side_file_views import SIDE_FILE_LIMIT
from kdump.errors import KdumpError


class RecoveryCut(NamedTuple):
    truncated_at: int | None    # the segment recoverLog cuts (every later one is deleted), if any
    cut_segments: set[int]      # every segment cut: load-recovered ones, and truncated_at
    unrecovered: list[int]      # damaged segments before the cut that no recovery looks at


def recovered_bases(bases: list[int], recovery_point: int, clean_shutdown: bool = False) -> set[int]:
    """The segments (base offsets, in offset order) that ``recoverLog`` recovers: from the
    one holding ``recovery_point`` on; none after a clean shutdown."""
    if clean_shutdown:
        return set()
    first = 0
    for i, b in enumerate(bases):
        if b <= recovery_point:
            first = i
    return set(bases[first:])


def recovery_cut(bases: list[int], damaged: set[int], recovered: set[int], load_recover: set[int]) -> RecoveryCut:
    """Where recovery cuts, given the segments (``bases``, in offset order) whose scan stops
    short of their end (``damaged``), those ``recoverLog`` recovers, and those recovered at load."""
    truncated_at: int | None = None
    cut: set[int] = set()
    unrecovered: list[int] = []
    for b in bases:
        if b not in damaged:
            continue
        if b in load_recover:
            cut.add(b)
        elif b in recovered:
            truncated_at = b
            cut.add(b)
            break
        else:
            unrecovered.append(b)
    return RecoveryCut(truncated_at, cut, unrecovered)


def recovered_at_load(directory: str, base: int) -> bool:
    """Is the segment at ``base`` of ``directory`` recovered where the broker opens it (no
    ``.index``, or a ``.txnindex`` failing its sanity check)?"""
    from kdump.storage import fs
    from kdump.storage.names import INDEX_SUFFIX, TXNINDEX_SUFFIX, offset_name

    if not fs.isfile(os.path.join(directory, offset_name(base, INDEX_SUFFIX))):
        return True
    txn = os.path.join(directory, offset_name(base, TXNINDEX_SUFFIX))
    return fs.isfile(txn) and txnindex_corrupt(txn, base)


def txnindex_corrupt(path: str | None, base: int) -> bool:
    """Does ``TransactionIndex.sanityCheck`` fail on the ``.txnindex`` at ``path`` (an entry
    ending below the segment base)? A missing or unreadable file does not."""
    if path is None:
        return False
    from kdump.format.txnindex import sanity_check_txnindex, txnindex_entries
    from kdump.storage.slice_reader import SliceReader

    try:
        with SliceReader(path, SIDE_FILE_LIMIT) as data:     # walked a chunk at a time, to the first
            return bool(sanity_check_txnindex(txnindex_entries(data, lazy=True).entries, base, path, limit=1))
    except KdumpError:
        return False
