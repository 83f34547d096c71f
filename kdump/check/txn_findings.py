"""The ``.txnindex`` against the log: the aborted transactions a broker's recovery would index.

``aborted_transactions`` replays each producer's open transaction across a partition's
segments (what ``ProducerStateManager`` does at recovery) and ``txn_index_findings`` holds a
``.txnindex`` against that list. ``verify`` (``kdump.check.partition``) and the recovery plan
(``kdump.check.loader_rule``) both use it.
"""

from __future__ import annotations

from kdump import findings as F
from kdump.check.capped import Capped
from kdump.check.scan import ScanReport
from kdump.errors import KdumpError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.format.control import ABORT, COMMIT
from kdump.format.txnindex import ENTRY_SIZE, txnindex_entries
from kdump.format.walk import record_slices
from kdump.model import Finding
from kdump.storage.mapped import MappedFile
from kdump.storage.slice_reader import SliceReader


def aborted_transactions(scans, limits: Limits = DEFAULT_LIMITS) -> dict[int, list[tuple[int, int | None, int, int]]]:
    """Per segment base, the aborted transactions that complete in it, in marker order:
    (producer id, first offset, ABORT marker offset, last stable offset), replaying each
    producer's open transaction across the ``(LogFile, ScanReport)`` pairs given in order.

    This is what recovery writes to the ``.txnindex`` (``AbortedTxn``): the last stable
    offset is the first offset of the earliest transaction still open then (another
    producer's), or the marker's offset + 1 (``ProducerStateManager.lastStableOffset``).
    """
    out: dict[int, list[tuple[int, int | None, int, int]]] = {}
    open_txns: dict[int, int | None] = {}
    if not any(s.txn_events for _, s in scans):
        return out
    for f, s in scans:
        if not s.txn_events:
            continue
        per = out.setdefault(f.base_offset, [])
        markers = _marker_types(f.path, [b for _, _, b in s.txn_events if b is not None], limits)
        for first, pid, batch in s.txn_events:
            if batch is None:
                open_txns.setdefault(pid, first)
                continue
            mtype = markers.get(batch.position)
            if mtype == ABORT and pid in open_txns:
                others = [o for p, o in open_txns.items() if p != pid and o is not None]
                per.append((pid, open_txns[pid], batch.last_offset, min(others, default=batch.last_offset + 1)))
            if mtype in (ABORT, COMMIT):
                open_txns.pop(pid, None)
    return out


def _marker_types(path: str, batches, limits: Limits) -> dict[int, int]:
    """Control type of each control batch (by position), decoding only those batches."""
    out: dict[int, int] = {}
    if not batches:
        return out
    with MappedFile(path, stream=True) as m:       # (record_slices asks a chunked one for each batch)
        for b in batches:
            try:
                records = next(record_slices(m.buf, b, limits))     # the first slice holds the marker
            except KdumpError:
                continue
            if records and records[0].control is not None:
                out[b.position] = records[0].control.type
    return out


def txn_file_findings(path: str, base: int, scan: ScanReport,
                      expected: dict[tuple[int, int], int | None]) -> list[Finding]:
    """``txn_index_findings`` of the ``.txnindex`` at ``path``, read a slice at a time."""
    from kdump.check.side_file_views import SIDE_FILE_LIMIT

    with SliceReader(path, SIDE_FILE_LIMIT) as data:
        return txn_index_findings(data, base, scan, expected)


def txn_index_findings(data, base: int, scan: ScanReport,
                       expected: dict[tuple[int, int], int | None]) -> list[Finding]:
    """``data``: the file's bytes, or anything sliced like them (``SliceReader``): the entries
    are walked a chunk at a time, and only those the log expects are remembered."""
    t = txnindex_entries(data, lazy=True)
    out = Capped()          # a 100 MB .txnindex of bad entries: the first 50 of each kind, the rest counted
    if t.partial_bytes:
        out.append(Finding(F.TXNINDEX_SIZE, t.size - t.partial_bytes, None,
                           f"{t.partial_bytes} bytes of a partial entry at the end"))
    prev = None
    seen = set()
    for i, e in enumerate(t.entries):
        at = i * ENTRY_SIZE
        key = (e.producer_id, e.last_offset)
        if key in expected:
            seen.add(key)
        if e.last_offset < base or e.first_offset > e.last_offset:
            if _full(out, F.TXNINDEX_OFFSET):
                prev = e
                continue
            out.append(Finding(F.TXNINDEX_OFFSET, at, e.last_offset,
                               f"entry {i}: aborted transaction {e.first_offset}..{e.last_offset} of producer "
                               f"{e.producer_id} does not fit the segment (base {base})"))
        elif prev is not None and e.last_offset <= prev.last_offset:
            if _full(out, F.TXNINDEX_ORDER):
                prev = e
                continue
            out.append(Finding(F.TXNINDEX_ORDER, at, e.last_offset,
                               f"entry {i}: last offset {e.last_offset} does not follow {prev.last_offset}"))
        elif scan.last_offset is None or e.last_offset > scan.last_offset:
            if _full(out, F.TXNINDEX_PAST_END):
                prev = e
                continue
            out.append(Finding(F.TXNINDEX_PAST_END, at, e.last_offset,
                               f"entry {i}: the ABORT marker at offset {e.last_offset} is past the last offset kept "
                               f"({scan.last_offset if scan.last_offset is not None else 'none'})"))
        elif key not in expected:
            if _full(out, F.TXNINDEX_MARKER):
                prev = e
                continue
            out.append(Finding(F.TXNINDEX_MARKER, at, e.last_offset,
                               f"entry {i}: no ABORT marker of producer {e.producer_id} closing an open transaction "
                               f"at offset {e.last_offset}"))
        else:
            first = expected[(e.producer_id, e.last_offset)]
            if first is not None and first != e.first_offset:
                out.append(Finding(F.TXNINDEX_MARKER, at, e.last_offset,
                                   f"entry {i}: the transaction of producer {e.producer_id} aborted at "
                                   f"{e.last_offset} began at offset {first}, not {e.first_offset}"))
        prev = e
    for (pid, last), _ in sorted(expected.items(), key=lambda kv: kv[0][1]):
        if (pid, last) not in seen:
            out.append(Finding(F.TXNINDEX_MARKER, None, last,
                               f"the ABORT marker of producer {pid} at offset {last} has no entry"))
    return out


def _full(out: Capped, kind: str) -> bool:
    """Is there no room for another ``kind``? Then it is counted here, its message never made."""
    if out.room(kind) > 0:
        return False
    out.skip(kind, 1)
    return True
