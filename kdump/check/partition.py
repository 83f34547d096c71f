"""``verify``'s checks across the files of a partition directory, and the verify run itself.

The scanner (``kdump.check.scan``) judges one segment alone. Here each file of a directory gets
a ``FileReport``: segments their scan plus the checks that need a neighbour, the side files
their consistency with the segments: offsets continue across segments (gaps are normal, by
compaction; overlaps are not); ``.index`` / ``.timeindex`` against the part of the log the
broker keeps (``kdump.check.indexes.forward_pass``, ``kdump index --verify``'s checks), so an
entry into bytes recovery would cut counts as past the end; ``.txnindex`` entries against the
COMMIT/ABORT markers, each producer's open transaction replayed across segments; producer
``.snapshot`` CRC and structure; ``leader-epoch-checkpoint`` against the batches' epochs;
leftovers (``.cleaned``, ``.swap``, ``.deleted``) and orphan indexes, which the broker finishes
or deletes at startup: informational, not damage. Finding kinds: ``kdump.findings``.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from kdump import findings as F
from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.check.capped import Capped
from kdump.check.clean_load import kept_after_clean_shutdown
from kdump.check.clean_segment import clean_segment
from kdump.check.file_report import FileReport, file_size_or_none, unreadable
from kdump.check.foreign_dirs import add_foreign_dirs
from kdump.check.indexes.forward_pass import segment_index_findings
from kdump.check.logless import add_log_missing
from kdump.check.lost_records import add_partitions_gone, add_records_missing
from kdump.check.scan import ScanReport, scanned_file
from kdump.check.side_file_checks import log_start_findings
from kdump.errors import KdumpError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.model import Finding
from kdump.storage import logdir as K
from kdump.storage import names as N
from kdump.storage.logdir import LogFile
from kdump.storage.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    TXNINDEX_SUFFIX,
    offset_name,
)

LEFTOVER_NOTES = {
    DELETED_SUFFIX: "a segment file awaiting asynchronous deletion: the broker deletes it at startup",
    CLEANED_SUFFIX: "output of an interrupted log-cleaner run: the broker deletes it at startup",
    SWAP_SUFFIX: "a cleaned or split segment not yet swapped in: the broker completes the swap at startup",
}


@dataclass
class VerifyOptions:
    deep: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    limits: Limits = DEFAULT_LIMITS
    broker_cut: bool = False         # --truncate: cut only where the broker's recovery would
    # The run's reading of each log dir's checkpoints (check.logdir_checkpoints), once a log dir.
    offsets: dict = field(default_factory=dict, repr=False, compare=False)

    def scanned(self, f: LogFile) -> AbstractContextManager[tuple[ScanReport, Any]]:
        """``f``'s scan and its bytes, held until the block ends (bytes None: not at hand)."""
        base = f.base_offset if f.kind == K.LOG else None
        return scanned_file(f.path, base_offset=base, deep=self.deep, max_message_size=self.max_message_size,
                            index_interval_bytes=self.index_interval_bytes, limits=self.limits)

    def clean(self, f: LogFile, index: str | None = None,
              timeindex: str | None = None) -> tuple[ScanReport, dict[str, int]] | None:
        """``clean_segment`` of ``f`` when it is a live segment of known base offset checked
        without ``--deep``: the usual segment's report (and the ``index``/``timeindex`` sizes,
        proved clean) in one call; None: ``scanned`` does the work."""
        if f.kind != K.LOG or f.leftover is not None or self.deep or f.base_offset is None:
            return None
        return clean_segment(f.path, f.base_offset, index, timeindex, self.max_message_size,
                             self.index_interval_bytes)

    def scan(self, f: LogFile) -> ScanReport:
        got = self.clean(f)
        if got is not None:
            return got[0]
        with self.scanned(f) as (report, _):
            return report


# -- the run ------------------------------------------------------------------------------------

def directory_context(directory: str, requested: list[LogFile]) -> list[LogFile]:
    """Every file of ``directory`` plus the requested ones it does not list (e.g. leftovers)."""
    try:
        context = K.take_listing(directory) or (K.partition_files(directory) if directory else [])
    except KdumpError:
        context = []
    if requested == context:        # the usual unit: a whole directory as just listed
        return context
    known = {f.path for f in context}
    return context + [f for f in requested if f.path not in known]


def check_directory(directory: str, requested: list[LogFile], opts: VerifyOptions) -> list[FileReport]:
    """Reports for the ``requested`` files of one directory, checked against their neighbours."""
    context = directory_context(directory, requested)
    part = _Partition(directory, context, opts)
    wanted = {f.path for f in requested}
    whole = part.wants_all(wanted)
    # Scan the segments asked for, and those whose side files were asked for.
    for f in context:
        if f.kind in K.BATCH_KINDS and f.leftover in (None, SWAP_SUFFIX):
            if f.path in wanted or (f.leftover is None and part.siblings_wanted(f, wanted, whole)):
                part.scan(f, part.wants_indexes(f, wanted))
    reports = [part.report(f) for f in requested]
    add_foreign_dirs(directory, reports)
    add_partitions_gone(directory, reports, opts.offsets)
    if not part.logs:
        reports = add_log_missing(context, requested, reports)
    every = all(f.path in part.scans for f in part.logs.values())      # (a partial request judges no span)
    return add_records_missing(directory, context, part.live_scans() if every else None, reports, opts.offsets)


_INDEX_KINDS = (K.INDEX, K.TIMEINDEX, K.TXNINDEX)
_WHOLE_KINDS = (K.PRODUCER_SNAPSHOT, K.LEADER_EPOCH)      # side files needing every segment
_CHECKED_WITH_SCAN = (INDEX_SUFFIX, TIMEINDEX_SUFFIX)


class _Partition:
    def __init__(self, directory: str, files: list[LogFile], opts: VerifyOptions) -> None:
        self.dir = directory
        self.files = files
        self.opts = opts
        self.scans: dict[str, ScanReport] = {}
        self.errors: dict[str, KdumpError] = {}
        self.logs: dict[int, LogFile] = {}
        self.names: set[str] = set()
        self._txn_expected: dict[int, dict[tuple[int, int], int | None]] | None = None
        self._index_checks: dict[str, tuple | KdumpError] = {}
        self.sizes: dict[str, int] = {}      # of the files read whole (index files): no stat for their reports
        self._live: tuple | None = None
        # For siblings_wanted: each base offset's index files, and the side files needing every segment.
        self._indexed: dict[int | None, list[str]] = {}
        self._whole: list[str] = []
        for f in files:         # (one pass: a partition's cost is per call here, not per byte)
            path, kind = f.path, f.kind
            self.names.add(path[path.rfind("/") + 1:])      # (os.path.basename)
            if kind == K.LOG:
                if f.leftover is None and f.base_offset is not None:
                    self.logs[f.base_offset] = f
            elif kind in _INDEX_KINDS:
                self._indexed.setdefault(f.base_offset, []).append(path)
            elif kind in _WHOLE_KINDS:
                self._whole.append(path)

    def siblings_wanted(self, log: LogFile, wanted: set[str], whole: bool) -> bool:
        """Is a file needing this segment's scan wanted? (``whole``: ``wants_all(wanted)``.)"""
        return whole or any(p in wanted for p in self._indexed.get(log.base_offset, ()))

    def wants_all(self, wanted: set[str]) -> bool:
        return any(p in wanted for p in self._whole)

    def scan(self, f: LogFile, indexes: bool = False) -> None:   # indexes: checked on the scan's bytes
        if self._clean(f, indexes):
            return
        try:
            with self.opts.scanned(f) as (report, buf):
                if indexes and buf is not None:
                    self.index_checks(f, report, buf)
            self.scans[f.path] = report
        except KdumpError as e:
            self.errors[f.path] = e

    def _clean(self, f: LogFile, indexes: bool) -> bool:
        """The usual segment's scan and (``indexes``) index checks in one call
        (``clean_segment``); False: not the usual segment, ``scan`` does the work."""
        paths: list[str | None] = [None, None]
        if indexes and f.kind == K.LOG:
            for i, suffix in enumerate(_CHECKED_WITH_SCAN):
                p = paths[i] = N.sibling(f.path, suffix)
                if p[p.rfind("/") + 1:] not in self.names:
                    return False        # (not listed: the Python path looks for it)
        got = self.opts.clean(f, paths[0], paths[1])
        if got is None:
            return False
        self.scans[f.path], sizes = got
        if indexes:
            self._index_checks[f.path] = (([], []), [None, None], sizes)
            self.sizes.update(sizes)
        return True

    def live_scans(self) -> list[tuple[LogFile, ScanReport]]:
        """The scanned live segments in offset order (computed again only after a new scan:
        verify asks once per segment, and a partition may hold 100,000 of them)."""
        if self._live is None or self._live[0] != len(self.scans):
            live = in_offset_order(self.logs, self.scans)
            prev: dict[str, tuple[LogFile, ScanReport]] = {}
            last = None
            leo = None
            for g, s in live:
                if last is not None:
                    prev[g.path] = last
                if s.last_offset is not None:
                    last = (g, s)
                if s.next_offset is not None:
                    leo = s.next_offset
            self._live = (len(self.scans), live, prev, leo)
        return self._live[1]

    def previous(self, f: LogFile) -> tuple[LogFile, ScanReport] | None:
        """The last scanned live segment before ``f`` that holds an offset."""
        self.live_scans()
        return self._live[2].get(f.path)  # type: ignore[index]  # live_scans() made it

    def log_end_offset(self) -> int | None:
        self.live_scans()
        return self._live[3]  # type: ignore[index]  # live_scans() made it

    # -- one report per file ------------------------------------------------------------------

    def report(self, f: LogFile) -> FileReport:
        if f.path in self.errors:
            return unreadable(f, self.errors[f.path])
        try:
            return self._report(f)
        except KdumpError as e:
            return unreadable(f, e)

    def _report(self, f: LogFile) -> FileReport:
        path, kind = f.path, f.kind
        scanned = self.scans.get(path)        # a scanned segment's size is its scan's: no stat
        size = scanned.size if scanned is not None else self.sizes.get(path) or file_size_or_none(path)
        if size is None:
            return FileReport(path, kind, None, [Finding(F.UNREADABLE, None, None, "cannot read: no such file")],
                              log=f)
        findings: list[Finding] = Capped()
        if f.leftover is not None:
            findings.append(Finding(F.LEFTOVER, None, f.base_offset, LEFTOVER_NOTES[f.leftover]))
            if f.leftover != SWAP_SUFFIX or kind not in K.BATCH_KINDS:
                return FileReport(path, kind, size, findings, log=f)
        if kind in K.BATCH_KINDS:
            scan = self.scans.get(path)
            if scan is None:
                self.scan(f)
                if path in self.errors:
                    return unreadable(f, self.errors[path])
                scan = self.scans[path]
            if scan.findings:       # (plain lists: an empty one adds nothing)
                findings.extend(scan.findings)
            if kind == K.LOG and f.leftover is None and (more := self._segment_checks(f, scan)):
                findings.extend(more)
            return FileReport(path, kind, size, findings, scan, log=f)
        if kind in (K.INDEX, K.TIMEINDEX, K.TXNINDEX):
            log = self.logs.get(f.base_offset)  # type: ignore[arg-type]  # None: no segment, as wanted
            if log is None:
                findings.append(Finding(F.ORPHAN_INDEX, None, f.base_offset,
                                        "no segment has this base offset: the broker deletes orphan indexes at "
                                        "startup"))
            elif log.path in self.errors:
                pass
            else:
                scan = self.scans.get(log.path)
                if scan is None:
                    self.scan(log)
                    scan = self.scans.get(log.path)
                if scan is not None and kind == K.TXNINDEX:
                    # Side-file checks are imported when such a file is met: verify of a lone
                    # segment starts faster without them.
                    from kdump.check.txn_findings import txn_file_findings

                    findings.extend(txn_file_findings(path, f.base_offset or 0, scan,
                                                      self.txn_expected().get(f.base_offset or 0, {})))
                elif scan is not None:
                    i = 0 if kind == K.INDEX else 1
                    if isinstance(got := self.index_checks(log, scan), KdumpError):
                        raise got
                    found, errors, _ = got
                    if errors[i] is not None:
                        raise errors[i]
                    findings.extend(found[i])
        elif kind == K.PRODUCER_SNAPSHOT:
            findings.extend(self._snapshot(f))
        elif kind == K.LEADER_EPOCH:
            findings.extend(self._leader_epochs(f))
        else:
            from kdump.check.side_file_checks import side_file_findings

            findings.extend(side_file_findings(f, self.opts.offsets))
        return FileReport(path, kind, size, findings, log=f)

    def index_checks(self, log: LogFile, scan: ScanReport, log_buf=None) -> tuple | KdumpError:
        """Both index files of a segment checked in one walk, cached (each is reported apart;
        ``log_buf``: the scan's bytes, not read again): (findings, the error reading each), or
        the error that stopped the check (each index file's report raises it)."""
        got: tuple | KdumpError | None = self._index_checks.get(log.path)
        if got is None:
            base = log.base_offset or 0
            whole = scan.cut is not None and kept_after_clean_shutdown(log.path, base)
            try:
                got = segment_index_findings(log.path, base, scan, self.names, self.opts.limits, log_buf, whole)
                self.sizes.update(got[2])
            except KdumpError as e:
                got = e
            self._index_checks[log.path] = got
        return got

    def wants_indexes(self, log: LogFile, wanted: set[str]) -> bool:
        """Is this live segment's .index or .timeindex wanted? (Checked while its scan holds the bytes.)"""
        paths = self._indexed.get(log.base_offset, ()) if self.logs.get(log.base_offset) is log else ()  # type: ignore[arg-type]  # None: no segment
        return any(p in wanted and p.endswith(_CHECKED_WITH_SCAN) for p in paths)

    # -- segments ---------------------------------------------------------------------------

    def _segment_checks(self, f: LogFile, scan: ScanReport) -> list[Finding]:
        out = []
        prev = self.previous(f)
        if prev is not None and f.base_offset is not None:
            g, s = prev
            first = scan.first_offset if scan.first_offset is not None else f.base_offset
            if min(f.base_offset, first) <= s.last_offset:  # type: ignore[operator]  # previous() holds an offset
                out.append(Finding(F.OFFSET_OVERLAP, 0, first,
                                   f"segment overlaps the previous one: it starts at offset {min(f.base_offset, first)}"
                                   f" but {os.path.basename(g.path)} ends at {s.last_offset}"))
        if scan.valid_bytes > 0 and f.base_offset is not None:
            for ext in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                name = offset_name(f.base_offset, ext)
                if name not in self.names:
                    out.append(Finding(F.INDEX_MISSING, None, f.base_offset,
                                       f"{name} is missing: the broker rebuilds it at startup"))
        live = self.live_scans()
        if live and live[-1][0].path == f.path:        # the last segment: the log start against the log end
            leo = scan.next_offset if scan.next_offset is not None else f.base_offset
            out.extend(log_start_findings(self.dir, leo, self.opts.offsets))
        expected = self.txn_expected().get(f.base_offset or 0, {})
        if expected and f.base_offset is not None and offset_name(f.base_offset, TXNINDEX_SUFFIX) not in self.names:
            (pid, last), _ = next(iter(expected.items()))
            out.append(Finding(F.TXNINDEX_MISSING, None, last,
                               f"{len(expected)} aborted transaction(s) end in this segment (e.g. producer {pid} at "
                               f"offset {last}) but it has no .txnindex: read_committed consumers would see "
                               f"aborted records"))
        return out

    # -- transactions -----------------------------------------------------------------------

    def txn_expected(self) -> dict[int, dict[tuple[int, int], int | None]]:
        """Per segment base: {(producer id, ABORT marker offset): first offset of the transaction}.

        The first offset is None when the transaction began before the first scanned
        segment. Markers with no open transaction are not expected in the index (the
        coordinator also writes them to partitions that got no data).
        """
        if self._txn_expected is None and not any(s.txn_events for s in self.scans.values()):
            self._txn_expected = {}         # no transactional batch: nothing aborted, nothing to import
        if self._txn_expected is None:
            from kdump.check.txn_findings import aborted_transactions
            aborted = aborted_transactions(self.live_scans(), self.opts.limits)
            self._txn_expected = {base: {(pid, last): first for pid, first, last, _ in entries}
                                  for base, entries in aborted.items()}
        return self._txn_expected

    # -- side files -------------------------------------------------------------------------

    def _snapshot(self, f: LogFile) -> list[Finding]:
        from kdump.check.side_file_checks import snapshot_findings
        leo = self.log_end_offset() if self.logs and len(self.scans) >= len(self.logs) else None
        return snapshot_findings(f, leo)

    def _leader_epochs(self, f: LogFile) -> list[Finding]:
        """The checkpoint's order, then (every segment scanned) its entries against the batches."""
        from kdump.check.side_file_checks import at_line, leader_epoch_order, leader_epochs_against_log
        try:
            out, first, last = leader_epoch_order(f.path)
        except KdumpError as e:
            return [Finding(F.LEADER_EPOCH_INVALID, None, None, at_line(e))]
        if first is None or last is None:       # (both or neither)
            return out
        for log in self.logs.values():
            if log.path not in self.scans and log.path not in self.errors:
                self.scan(log)
        scans = self.live_scans()
        leo = self.log_end_offset()
        check_late = leo is not None and scans and len(scans) == len(self.logs)
        return out + leader_epochs_against_log(f.path, first.epoch, last.epoch, scans, leo if check_late else None)


def in_offset_order(logs: dict[int, LogFile], scans: dict[str, ScanReport]) -> list[tuple[LogFile, ScanReport]]:
    """The scanned segments of ``logs`` (by base offset) in offset order: the one sort."""
    return [(f, scans[f.path]) for _, f in sorted(logs.items()) if f.path in scans]


def index_damage(report: FileReport) -> bool:
    """Does this index/timeindex/txnindex report show something a rebuild or trim fixes?"""
    return any(f.kind.startswith(("index_", "timeindex_", "txnindex_")) and f.cls == F.DAMAGE
               and f.kind != F.TXNINDEX_MISSING for f in report.findings)


