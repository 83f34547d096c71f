"""What a broker's recovery would remove from each partition, read off verify's reports.

Recovery (``LogLoader.recoverLog``, kafka-reference.md 5.2; which segments, in
``check.recover_log``) cuts the first damaged segment it recovers at its ``valid_bytes`` and
deletes every later segment whole; a segment recovered at load is only cut. So the loss of a
partition is: the bytes cut, the later segments (their count and bytes), and the offsets from
the new log end to the last offset those bytes held. Damage before the recovery point is no
loss: the broker keeps it (``Loss.unrecovered`` counts those segments). This is what ``kdump
recover`` plans; ``verify --truncate`` cuts from the first damaged segment whatever the
recovery point (``as_broker=False``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from kdump import findings as F
from kdump.check.clean_load import clean_verdict
from kdump.check.logdir_checkpoints import LOG_DIR_CHECKPOINTS, logdir_offsets
from kdump.check.recover_log import recovered_at_load, recovered_bases, recovery_cut
from kdump.format.checkpoint import RECOVERY_POINT_CHECKPOINT
from kdump.storage import fs
from kdump.storage.names import INDEX_SUFFIX, LOG_SUFFIX, filename_offset, offset_name

if TYPE_CHECKING:
    from kdump.check.scan import ScanReport


_RECOVERY_POINT = [name for name, _ in LOG_DIR_CHECKPOINTS].index(RECOVERY_POINT_CHECKPOINT)


class Loss(NamedTuple):
    directory: str
    cut_bytes: int              # from the first damaged segment
    deleted_segments: int       # later segments, deleted whole
    deleted_bytes: int
    first_offset: int | None    # the new log end: the first offset lost
    last_offset: int | None     # the last offset known among the bytes removed (None: none readable)
    # After a clean shutdown (check.clean_load): the broker recovers none of it, keeping the log
    # end offset it reads; or its load fails with this exception.
    clean: bool = False
    log_end_offset: int | None = None
    load_failure: str | None = None
    trusted_damaged_indexes: int = 0     # damaged .index/.timeindex files the clean load trusts as they are
    unrecovered: int = 0        # damaged segments before the recovery point, which the broker keeps


def losses(reports, cache: dict | None = None, as_broker: bool = True) -> list[Loss]:
    """One Loss per directory whose segments a recovery would cut, in the order first seen
    (``as_broker``: from the recovery point on, as a broker; else from the first segment, as
    ``verify --truncate``; ``cache``: the run's reading of the log dirs' checkpoints)."""
    by_dir: dict[str, list[tuple[int, ScanReport]]] = {}
    bad_indexes: dict[str, int] = {}
    for r in reports:
        # (an entry past the CRC-checked end still points into the file the broker serves whole)
        if r.findings and r.kind in ("index", "timeindex") and any(
                f.cls == F.DAMAGE and f.kind not in (F.INDEX_PAST_END, F.TIME_PAST_END) for f in r.findings):
            d = os.path.dirname(r.file)
            bad_indexes[d] = bad_indexes.get(d, 0) + 1
        s = r.scan
        base = filename_offset(r.file, LOG_SUFFIX) if s is not None else None
        if base is not None:
            by_dir.setdefault(os.path.dirname(r.file), []).append((base, s))

    out = []
    shut_down: dict[str, bool] = {}     # (a -j worker's range: many partitions of one log dir)
    for directory, segments in by_dir.items():
        segments.sort(key=lambda bs: bs[0])
        verdict = clean_verdict(directory, shut_down)
        cut, load_cuts, unrecovered = _cut(directory, segments, cache, as_broker and verdict is None)
        if verdict is not None and verdict.failure is not None:
            out.append(Loss(directory, 0, 0, 0, None, None, True, None, str(verdict.failure)))
        elif cut is None and verdict is None and (load_cuts or unrecovered):
            out.extend(load_cut(directory, s) for s in load_cuts)
            if unrecovered:
                out.append(Loss(directory, 0, 0, 0, None, None, unrecovered=unrecovered))
        elif cut is not None:
            out.extend(load_cut(directory, s) for s in load_cuts)
            loss = partition_loss(directory, segments, cut)._replace(unrecovered=unrecovered)
            if verdict is not None and fs.isfile(os.path.join(directory, offset_name(segments[cut][0],
                                                                                      INDEX_SUFFIX))):
                loss = loss._replace(clean=True, log_end_offset=verdict.log_end_offset,
                                     trusted_damaged_indexes=bad_indexes.get(directory, 0))
            out.append(loss)
        elif verdict is not None and verdict.log_end_offset is not None:
            last = segments[-1][1].next_offset
            if last is not None and verdict.log_end_offset != last:
                # No damage to cut, but a trusted index moves the end the broker reads (readNextOffset).
                out.append(Loss(directory, 0, 0, 0, min(verdict.log_end_offset, last),
                                max(verdict.log_end_offset, last) - 1, True, verdict.log_end_offset, None,
                                bad_indexes.get(directory, 0)))
    return out


def _cut(directory: str, segments: list[tuple[int, ScanReport]], cache: dict | None, as_broker: bool
         ) -> tuple[int | None, list[ScanReport], int]:
    """(index into ``segments`` of the segment recoverLog cuts, the damaged segments cut at load
    before it, the count of damaged ones no recovery looks at): check.recover_log's rule, or
    the first damaged segment when not ``as_broker``."""
    damaged = {b for b, s in segments if s.cut is not None and s.valid_bytes < s.size}
    if not damaged:
        return None, [], 0
    bases = [b for b, _ in segments]
    if not as_broker:
        return bases.index(min(damaged)), [], 0
    offsets = logdir_offsets(directory, cache)
    rp = (offsets[_RECOVERY_POINT] if offsets else None) or 0      # a missing checkpoint means 0
    load_recover = {b for b in damaged if recovered_at_load(directory, b)}
    cut = recovery_cut(bases, damaged, recovered_bases(bases, rp), load_recover)
    at = None if cut.truncated_at is None else bases.index(cut.truncated_at)
    return at, [s for b, s in segments if b in cut.cut_segments and b != cut.truncated_at], len(cut.unrecovered)


def load_cut(directory: str, s: ScanReport) -> Loss:
    """A segment cut where the broker opens it (no .index, a failing .txnindex): its tail only."""
    known = [o[4] for o in s.intact_beyond if o[4] is not None]
    if s.cut is not None and s.cut.offset is not None:
        known.append(s.cut.offset)
    first = s.next_offset if s.next_offset is not None else s.first_offset
    last = max(known, default=None)
    return Loss(directory, s.cut_bytes, 0, 0, first, last if last is not None and first is not None
                and last >= first else None)


def partition_loss(directory: str, segments: list[tuple[int, ScanReport]], cut: int) -> Loss:
    """The Loss of cutting ``segments[cut]`` (base offset, scan; in offset order) and deleting
    every later one (``recover``'s plan says which is cut, by the recovery point)."""
    base, s = segments[cut]
    later = [x for _, x in segments[cut + 1:]]
    known = [e for x in later for e in (x.last_offset, *(o[4] for o in x.intact_beyond)) if e is not None]
    known += [o[4] for o in s.intact_beyond if o[4] is not None]
    if s.cut is not None and s.cut.offset is not None:
        known.append(s.cut.offset)
    first = s.next_offset if s.next_offset is not None else base
    last = max(known, default=None)
    return Loss(directory, s.cut_bytes, len(later), sum(x.size for x in later), first,
                last if last is not None and last >= first else None)


def summary_counts(reports, cache: dict | None = None, as_broker: bool = True) -> dict:
    """The summary's counts (added up over directories: a list is joined), and what a broker's
    recovery would remove (``losses``: the first damaged segment it recovers cut, the later ones
    deleted)."""
    reports = list(reports)
    every = losses(reports, cache, as_broker)
    found = [x for x in every if not x.clean and (x.cut_bytes or x.deleted_segments)]
    counts: dict[str, Any]
    counts = {"files": 0, "ok": 0, "damaged": 0, "torn_tail": 0, "unreadable": 0, "segments": 0, "bytes": 0,
              "cut_bytes": sum(x.cut_bytes for x in found), "cut_segments": len(found),
              "deleted_segments": sum(x.deleted_segments for x in found),
              "deleted_bytes": sum(x.deleted_bytes for x in found), "anomalies": 0, "losses": found,
              "unrecovered": sum(x.unrecovered for x in every),
              "clean": [x for x in every if x.clean]}
    for r in reports:
        counts["files"] += 1
        counts[r.status] += 1
        if r.findings:
            counts["anomalies"] += sum(1 for f in r.findings if f.cls == F.ANOMALY)
        counts["anomalies"] += sum(n for k, n in r.not_listed.items() if F.class_of(k) == F.ANOMALY)
        s = r.scan
        if s is not None:
            counts["segments"] += 1
            counts["bytes"] += s.size
    return counts
