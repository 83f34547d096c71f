"""Records the files show were written but no ``.log`` holds: the ``records_missing`` rule.

A broker starting on a partition dir reads the segments it finds; what is gone it does not
miss (it deletes orphan indexes, stale snapshots and epoch entries, and carries on). But
the other files remember how far the log reached:

- a segment's ``.index``/``.timeindex``/``.txnindex`` without its ``.log``: a broker deletes a
  segment's files together (``LocalLog.deleteSegmentFiles`` renames them all to
  ``.deleted`` first), so that ``.log`` was lost (``orphan_bases``, which ``groups`` and
  ``txn`` share);
- a producer snapshot is named by the log end offset when it was taken, a leader-epoch entry
  by the offset its epoch started at, and the log dir's checkpoints (recovery point, log
  start, high watermark, cleaner) by offsets the log had reached: one past the log end, or
  inside the span between two segments, names records that were there;
- an ``.index``/``.timeindex`` entry past the data kept names a record that was there, in a
  file whose entries inside the data are the broker's (not ``GARBLED``);
- a segment is named by its first offset: between the last record of one segment and the
  next segment's base every offset was written, unless the cleaner-offset-checkpoint says
  compaction went over it (the gap rule of ``kdump.check.gaps``).

A span the segments do not cover, with evidence that it was written, is one ``records_missing``
finding (damage): the offsets lost and the files that show it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from kdump import findings as F
from kdump.check.logdir_checkpoints import LOG_DIR_CHECKPOINTS, logdir_offsets, reading
from kdump.errors import KdumpError
from kdump.format.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from kdump.model import Finding
from kdump.storage import fs
from kdump.storage.logdir import INDEX, LOG, OFFSET_CHECKPOINT, PRODUCER_SNAPSHOT, TIMEINDEX, TXNINDEX, LogFile
from kdump.storage.logdir import LEADER_EPOCH as LEADER_EPOCH_KIND
from kdump.storage.names import CORRUPT_INFIX, DELETED_SUFFIX

ORPHAN_KINDS = (INDEX, TIMEINDEX, TXNINDEX)
_CLEANER = [name for name, _ in LOG_DIR_CHECKPOINTS].index(CLEANER_OFFSET_CHECKPOINT)
_LOG_START = [name for name, _ in LOG_DIR_CHECKPOINTS].index(LOG_START_OFFSET_CHECKPOINT)
SHOWN = 3       # evidence named per finding; the rest counted
# An index file whose entries inside the data are out of order, inside a batch or name an
# offset the batch there does not hold was not written by a broker for this log (garbage,
# another log's file): its entries past the data are no evidence of records written.
GARBLED = frozenset({F.INDEX_ORDER, F.INDEX_MID_BATCH, F.INDEX_MISMATCH, F.INDEX_BELOW_BASE, F.INDEX_AFTER_TAIL,
                     F.TIME_ORDER, F.TIME_BACKWARDS, F.TIME_MISMATCH, F.TIME_BELOW_BASE, F.TIME_AFTER_TAIL})


def orphan_bases(files: Iterable[LogFile]) -> dict[int, list[str]]:
    """Base offset -> the names of its live ``.index``/``.timeindex``/``.txnindex``, for the
    segments that have those but no ``.log`` (live or a leftover being swapped, cleaned or
    deleted): the one rule of a lost segment."""
    files = list(files)
    logs = {f.base_offset for f in files if f.kind == LOG}
    out: dict[int, list[str]] = {}
    for f in files:
        if f.kind in ORPHAN_KINDS and f.leftover is None and f.base_offset is not None and f.base_offset not in logs:
            out.setdefault(f.base_offset, []).append(f.name)
    return dict(sorted(out.items()))


class Evidence(NamedTuple):
    reached: int            # the log held every offset below this one
    what: str               # how it shows it, for the message
    file: str | None        # the file that shows it (None: a log-dir checkpoint)
    orphan: int | None = None   # the base offset of a segment whose .log is gone
    segment: int | None = None  # the base offset of the segment whose own index names it
    began: int | None = None    # the log began at or below this offset (its log start was never moved past it)


class Segment(NamedTuple):
    path: str
    base: int
    end: int                # one past its last record (its base if it holds none)
    damaged: bool           # cut by the broker's recovery: the loss is that finding's


def evidence(directory: str, files: list[LogFile], index_past_end: dict[str, int],
             cache: dict | None = None, _logdir_offsets: tuple | None = None) -> list[Evidence]:
    """Everything in (and beside) the partition dir that says how far the log reached;
    ``index_past_end``: index file -> the highest offset its entries name past the data
    (``_logdir_offsets``: ``logdir_offsets`` of the dir, when the caller has them)."""
    out = []
    for base, names in orphan_bases(files).items():
        if not any(_size(os.path.join(directory, n)) for n in names):
            continue        # empty files: the segment held nothing they show
        last = _last_index_offset(os.path.join(directory, names[0]), base) if names[0].endswith(".index") else None
        out.append(Evidence(base if last is None else max(base, last + 1),
                            f"{base:020d}.log is gone, its {_listed([n[20:] for n in names])} "
                            f"remain{'s' if len(names) == 1 else ''}"
                            + (f" (last index entry: offset {last})" if last is not None else ""),
                            os.path.join(directory, names[0]), base))
    for f in files:
        if f.kind == PRODUCER_SNAPSHOT and f.leftover is None and f.base_offset is not None:
            out.append(Evidence(f.base_offset, f"the producer snapshot {f.name} was taken at log end {f.base_offset}",
                                f.path))
        elif f.kind == LEADER_EPOCH_KIND and f.leftover is None:
            first_start, last_start = _epoch_starts(f.path)
            if last_start is not None:
                out.append(Evidence(last_start, f"the leader-epoch-checkpoint has an epoch starting at {last_start}",
                                    f.path))
            if first_start is not None:
                # Retention and DeleteRecords move the first epoch's start with the log start
                # offset (truncateFromStart); a partition whose log start is not in the
                # log-start-offset-checkpoint starts at its first segment (LogManager writes
                # it only past that, or for a tiered log).
                out.append(Evidence(first_start, f"the leader-epoch-checkpoint's first epoch starts at {first_start} "
                                                 f"(a broker moves it with the log start offset)", f.path,
                                    began=first_start))
    for path, offset in index_past_end.items():
        name = os.path.basename(path)
        out.append(Evidence(offset + 1, f"{name} has an entry for offset {offset}", path,
                            segment=int(name[:20]) if name[:20].isdigit() else None))
    offsets = _logdir_offsets if _logdir_offsets is not None else logdir_offsets(directory, cache)
    if offsets and offsets[_LOG_START] is not None:
        out = [e._replace(began=None) for e in out]     # the log start is known: not judged from the epochs
    for (name, what), v in zip(LOG_DIR_CHECKPOINTS, offsets or ()):
        if v is not None:
            out.append(Evidence(v, f"{what} in {name} is {v}", None))
    return out


def records_missing(segments: list[Segment], found: list[Evidence], cleaned: int | None, compacted: bool = False,
                    repaired: bool = False, deleting: Iterable[int] = ()) -> list[tuple[list[str | None], Finding]]:
    """(the files to carry it, in order of preference; the finding) per span of offsets the
    segments (in offset order) do not hold but ``found`` shows were written. A span between
    two segments that nothing else shows is not judged where compaction may explain it:
    ``cleaned`` (the cleaner-offset-checkpoint) covers it, or ``compacted`` (the segments
    show the cleaner's work: offsets missing inside one, a cleaning under way), or a deletion
    under way (``deleting``: the base offsets of its ``.deleted`` files); past the log end,
    nothing is judged where a repair ``repaired`` it (and kept the cut)."""
    deleting = sorted(deleting)
    out: list[tuple[list[str | None], Finding]] = []
    if not segments:                # no log at all: from the first lost segment (if known) to the last evidence
        if found:
            start = min((e.orphan for e in found if e.orphan is not None), default=None)
            reached = max(e.reached for e in found)
            shown = [e for e in found if e.orphan is not None or start is None or e.reached > start]
            if start is None or reached > start:
                out.append(_finding(start, reached, shown, "no .log holds them", [e.file for e in found]))
        return out
    for a, b in zip(segments, segments[1:]):
        if a.damaged or a.end >= b.base:
            continue
        inside = [e for e in found if a.end < e.reached < b.base
                  or (e.orphan is not None and a.base < e.orphan < b.base)
                  or (e.segment == a.base and e.reached > a.end)]     # (up to b.base: its own records)
        if not inside and (compacted or deleting or a.end == a.base or cleaned is not None and a.end - 1 < cleaned):
            continue        # compaction may have removed them (kdump.check.gaps' rule); a broker rolls
            #                 only by appending to the next segment, so an inactive segment holding no
            #                 record is what the cleaner leaves of a segment it emptied
        why = (f"{os.path.basename(a.path)} ends at {a.end - 1}, {os.path.basename(b.path)} starts at {b.base}"
               if a.end > a.base else f"{os.path.basename(a.path)} holds no record, "
                                      f"{os.path.basename(b.path)} starts at {b.base}")
        out.append(_finding(a.end, b.base, inside, why, [e.file for e in inside] + [b.path]))
    head = segments[0]
    # (the cleaner may leave the head segment out of a cleaning: a compacted log's start is not judged)
    # UnifiedLog.deleteSegments moves the log start (and the first epoch's start with it,
    # truncateFromStartAsyncFlush: written by a scheduler task) before it renames the segments
    # to .deleted, which go file.delete.delay.ms later. A kill before that write leaves the
    # epoch at the old start, the segments from it on still .deleted; segments deleted by
    # hand after a deletion lie past the .deleted ones, above the start the epoch was moved to.
    before = [e for e in found if e.orphan is not None and e.orphan < head.base
              or e.began is not None and e.began < head.base and not compacted and cleaned is None
              and not any(e.began <= b < head.base for b in deleting)]
    if before:
        start = min(e.orphan if e.orphan is not None else e.began for e in before)  # type: ignore[type-var]
        out.append(_finding(start, head.base, before, f"the first segment, {os.path.basename(head.path)}, starts at "
                                                      f"{head.base}", [e.file for e in before if e.orphan is not None]
                            + [head.path] + [e.file for e in before]))
    last = segments[-1]
    if not last.damaged and not repaired:
        past = [e for e in found if e.reached > last.end]
        if past:
            reached = max(e.reached for e in past)
            out.append(_finding(last.end, reached, past, f"the log ends at {last.end}",
                                [e.file for e in past] + [last.path]))
    return out


def _finding(start: int | None, stop: int, shown: list[Evidence], why: str, carriers: list[str | None]
             ) -> tuple[list[str | None], Finding]:
    """``start`` None: the first offset lost is not known (no segment says where the log began)."""
    if start is None:
        span = f"offsets below {stop} are missing"
    else:
        n = stop - start
        span = f"offsets {start}..{stop - 1} are missing ({n} offset{'s' if n != 1 else ''})"
    said = "; ".join(e.what for e in shown[:SHOWN]) + (f"; and {len(shown) - SHOWN} more" if len(shown) > SHOWN
                                                       else "")
    return carriers, Finding(F.RECORDS_MISSING, None, start,
                             f"{span}: {why}" + (f"; {said}" if said else "")
                             + ": a broker starts without them and no reader will see these records")


def _listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def _size(path: str) -> int:
    try:
        return fs.getsize(path)
    except (OSError, KdumpError):
        return 0


def _last_index_offset(path: str, base: int) -> int | None:
    """The offset of the last entry of an ``.index`` (preallocated zero slots skipped), or None.
    Read from the end a chunk at a time: a 100 MB index is not held."""
    from kdump.check.side_file_views import SIDE_FILE_LIMIT
    from kdump.storage.slice_reader import SliceReader
    try:
        with SliceReader(path, SIDE_FILE_LIMIT) as data:
            end = len(data)
            while end > 0:
                start = max(0, end - (1 << 20))
                used = start + len(data[start:end].rstrip(b"\0"))
                if used > start:
                    slot = (used - 1) // 8 * 8
                    if slot + 8 > len(data):
                        return None
                    return base + int.from_bytes(data[slot:slot + 4], "big")
                end = start
    except (KdumpError, OSError):
        return None
    return None


def _epoch_starts(path: str) -> tuple[int | None, int | None]:
    """The start offset of a leader-epoch-checkpoint's first entry, and the highest (None, None:
    no entry, or the file does not parse: reported on the file itself)."""
    from kdump.check.side_file_views import checkpoint_entries
    first = last = None
    try:
        for e in checkpoint_entries(path, LEADER_EPOCH):
            if first is None:
                first = e.start_offset
            last = e.start_offset if last is None else max(last, e.start_offset)
    except (KdumpError, OSError):
        return None, None
    return first, last


def add_partitions_gone(directory: str, reports: list, cache: dict | None) -> None:
    """A partition the log dir's checkpoints list without its directory (nor one being deleted,
    moved or set aside): ``records_missing`` below the highest offset they give it, on the
    report of the recovery-point-offset-checkpoint."""
    carrier = next((r for r in reports if r.kind == OFFSET_CHECKPOINT
                    and os.path.basename(r.file) == RECOVERY_POINT_CHECKPOINT), None)
    if carrier is None or cache is None:
        return
    # (the cleaner's checkpoint keeps what it cleaned for a while: not evidence of a log here)
    named = [(name, what, reading(os.path.join(directory, name), cache).absent)
             for name, what in LOG_DIR_CHECKPOINTS if name != CLEANER_OFFSET_CHECKPOINT]
    # LogManager rewrites the recovery points and log starts from the logs it still holds right
    # after a deletion renames a partition's dir (asyncDelete), so an entry there names a log
    # this broker had. The high watermarks are ReplicaManager's, written on their own clock
    # (replica.high.watermark.checkpoint.interval.ms): a partition deleted since the last one
    # is still listed, its dir gone once file.delete.delay.ms has passed. They only add reach.
    kept = set().union(*(absent for name, _, absent in named if name != REPLICATION_OFFSET_CHECKPOINT))
    for topic, partition in sorted(kept):
        shown = [Evidence(v, f"{what} in {name} is {v}", None) for name, what, absent in named
                 if (v := absent.get((topic, partition))) is not None]
        reached = max(e.reached for e in shown)
        if reached > 0:
            carrier.findings.append(_finding(None, reached, shown, f"the log dir has no {topic}-{partition} "
                                                                     f"directory", [])[1])


def add_records_missing(directory: str, files: list[LogFile], live: list | None, reports: list,
                        cache: dict | None = None) -> list:
    """``reports`` (of files of one partition dir listing ``files``), with each span of lost
    records on the first report among its carriers; ``live``: the live segments' (LogFile,
    ScanReport) in offset order when every one was scanned (else None: nothing is judged)."""
    if live is None:
        return reports
    by_path = {r.file: r for r in reports}
    past_end: dict[str, int] = {}
    for r in reports:
        if any(x.kind in GARBLED for x in r.findings):
            continue        # its entries inside the data are not the broker's: nor are those past it
        for x in r.findings:
            if x.kind in (F.INDEX_PAST_END, F.TIME_PAST_END) and x.offset is not None:
                past_end[r.file] = max(past_end.get(r.file, x.offset), x.offset)
        if r.file in past_end and r.kind == INDEX and F.INDEX_PAST_END in r.not_listed:   # (only 50 are kept)
            last = _last_index_offset(r.file, int(os.path.basename(r.file)[:20]))
            past_end[r.file] = max(past_end[r.file], last if last is not None else -1)
    if len(live) == 1 and not past_end and _one_segment(files, live[0][0].base_offset):
        # The usual partition: one segment and its own index files. Only the log dir's
        # checkpoints are evidence then, and they show a loss only past the log end.
        f, s = live[0]
        end = s.next_offset if s.next_offset is not None else f.base_offset
        if all(v is None or v <= end for v in logdir_offsets(directory, cache) or ()):
            return reports
    segments = [Segment(f.path, f.base_offset, s.next_offset if s.next_offset is not None else f.base_offset,
                        s.cut is not None) for f, s in live]
    compacted = any(s.first_offset is not None and looks_compacted(f.base_offset, s.first_offset, s.last_offset,
                                                                   s.records) for f, s in live)
    for carriers, finding in lost_spans(directory, files, segments, compacted, past_end, cache):
        r = next((by_path[c] for c in carriers if c is not None and c in by_path), None)
        if r is not None:
            r.findings.append(finding)
    return reports


def _one_segment(files: list[LogFile], base: int) -> bool:
    """Does the dir hold only the live files of the segment at ``base`` (its .log and index
    files): no orphan index, snapshot, leader-epoch file or leftover to show more?"""
    return all(f.base_offset == base and f.leftover is None and f.kind in _SEGMENT_KINDS for f in files)


_SEGMENT_KINDS = (LOG, INDEX, TIMEINDEX, TXNINDEX)


def looks_compacted(base: int, first: int, last: int, records: int) -> bool:
    """Does a segment show the cleaner's work: offsets missing at its start or inside it?"""
    return first > base or records < last - first + 1


def lost_spans(directory: str, files: list[LogFile], segments: list[Segment], compacted: bool,
               past_end: dict[str, int] | None = None, cache: dict | None = None
               ) -> list[tuple[list[str | None], Finding]]:
    """``records_missing`` for one partition dir: its ``files``, its live ``segments`` in offset
    order, whether they look ``compacted``, its index files' entries past the data."""
    offsets = logdir_offsets(directory, cache)
    if offsets is None:
        return []           # (only in a <topic>-<partition> directory is a log expected)
    found = evidence(directory, files, past_end or {}, cache, offsets)
    if not segments and not any(e.file is not None for e in found):
        return []           # nothing of a log here (only a log dir's checkpoint names it)
    cleaned = offsets[_CLEANER]
    compacted = compacted or any(f.leftover not in (None, DELETED_SUFFIX) for f in files)     # a cleaning under way
    deleting = [f.base_offset for f in files if f.leftover == DELETED_SUFFIX and f.base_offset is not None]
    # (a repair matters only to evidence past the log end: the dir is listed again only then)
    past = bool(segments) and any(e.reached > segments[-1].end for e in found)
    return records_missing(segments, found, cleaned, compacted, repaired=past and _repaired(directory),
                           deleting=deleting)


def _repaired(directory: str) -> bool:
    """Does the dir keep what a kdump repair cut (``.corrupt-*`` bytes, a quarantine folder)?
    Then the files past the log end name records that repair took out and kept, not lost ones."""
    from kdump.storage.safewrite import QUARANTINE_PREFIX
    try:
        return any(CORRUPT_INFIX in e.name or e.name.startswith(QUARANTINE_PREFIX) for e in fs.scandir(directory))
    except (OSError, KdumpError):
        return False
