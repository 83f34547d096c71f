"""The ``kdump index`` / ``kdump timeindex`` run: each index file listed, verified against
its segment or sanity-checked (a partition at a time, here or in the workers of ``-j``), or
rebuilt from the log; reports drawn by ``kdump.render.index``, faults on stderr.

The exit status follows the findings' classes (``kdump.findings``), as ``verify``'s does:
damage 1, anomalies 0 unless ``--strict``, info 0; a fault that counts is an error line on
stderr, one that does not a note.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES
from kdump.check.indexes.targets import Item, items_for, segments_for
from kdump.errors import ExitStatus, InputError, KdumpError, UsageError
from kdump.findings import findings_status
from kdump.render.diagnostics import report_error, say
from kdump.storage import fs
from kdump.storage.logdir import INDEX, TIMEINDEX, TXNINDEX
from kdump.storage.mapped import file_size

DEFAULT_INTERVAL = DEFAULT_INDEX_INTERVAL_BYTES
MISSING_TEXT = {
    INDEX: "no offset index for segment {log} (a broker rebuilds a missing .index at startup)",
    TIMEINDEX: "no time index for segment {log} (a broker creates it empty and rebuilds it at startup)",
}


class Mode(NamedTuple):
    """What to do with each index file."""

    verify: bool = False            # --verify or --verify-index-only
    verify_only: bool = False       # --verify-index-only: no listing
    sanity: bool = False
    interval_bytes: int | None = None
    strict: bool = False            # anomalies count as damage
    quiet: bool = False             # no notes on stderr


def _renderer(out):
    from kdump.render import index as r

    if out.format == "json":
        return r.JsonIndex(out.stream)
    if out.format == "table":
        return r.TableIndex(out.console())
    return r.TextIndex(out.stream)


def run(kind: str, paths, mode: Mode, out, *, rebuild: bool = False, time_offset: str | None = None,
        no_backup: bool = False, force: bool = False, jobs: int = 1) -> int:
    if rebuild and (mode.verify or mode.sanity):
        raise UsageError("--rebuild cannot be combined with --verify, --verify-index-only or --sanity")
    if not rebuild and (no_backup or time_offset or force):
        raise UsageError("--no-backup, --time-offset and --force apply only with --rebuild")
    if rebuild and mode.strict:
        raise UsageError("--strict applies only when reading, not with --rebuild")
    if rebuild:
        renderer = _renderer(out)
        try:
            return int(_rebuild_all(paths, mode.interval_bytes, time_offset, not no_backup, renderer, force))
        finally:
            renderer.finish()
    from kdump.jobs.fanout import in_process
    from kdump.jobs.ordered_output import ordered_output
    from kdump.render.progress import Progress

    units = _units(paths, kind, jobs)

    def run_unit(unit, out) -> int:
        if isinstance(unit, KdumpError):
            report_error(unit)
            return unit.exit_code
        status = ExitStatus.OK
        renderer = _renderer(out)
        try:
            for item in unit:
                status = max(status, _one(item, mode, renderer))
        finally:
            renderer.finish()
        return status

    def logs(unit):
        """The unit's segments, for the bar (looked at only when there is one)."""
        return (i.log for i in unit if i.log and fs.isfile(i.log)) if isinstance(unit, list) else ()

    status = ExitStatus.OK
    with Progress.for_output(out, (lambda: sum(file_size(p) for p in {p for u in units for p in logs(u)}))
                             if mode.verify else 0, f"{kind} --verify") as progress:
        here = in_process(units, jobs)
        # A worker counts what it reads for the bar as it goes, and hands the count back.
        work = run_unit if here or not mode.verify else progress.counted(run_unit)
        for unit, result in zip(units, ordered_output(work, units, jobs, out)):
            unit_status, counted = (result, 0) if work is run_unit else result
            status = max(status, unit_status)
            if mode.verify:
                progress.unit_done(logs(unit), counted)
    return int(status)


def _units(paths, kind: str, jobs: int) -> list:
    """A partition's items at a time; an unreadable PATH is a unit of its own, so its error
    line comes where -j 1 prints it."""
    units: list = []
    last = None             # the directory of the unit being filled
    for path in paths:
        unlisted: list[KdumpError] = []       # partition dirs that cannot be listed: the rest is covered
        try:
            items = items_for(path, kind, jobs, unlisted)
        except KdumpError as e:
            units.append(e)
            last = None
            continue
        units += unlisted
        last = None if unlisted else last
        for item in items:
            directory = item.path.rpartition("/")[0]    # (what dirname gives for these joined paths)
            if directory == last:
                units[-1].append(item)
            else:
                units.append([item])
                last = directory
    return units


def _one(item: Item, mode: Mode, renderer) -> int:
    from kdump.render.index import FileReport

    rep = FileReport(item.path, item.kind, item.log if item.kind != TXNINDEX else None)
    if not fs.exists(item.path):
        rep.status = "missing"
        rep.message = MISSING_TEXT.get(item.kind, "no such file").format(log=item.log)
        renderer.missing(rep)
        return ExitStatus.OK
    try:
        if item.kind == TXNINDEX:
            _txnindex(item, rep, mode, renderer)
        else:
            _index(item, rep, mode, renderer)
    except KdumpError as e:
        renderer.finish()
        report_error(e.located(item.path))
        return e.exit_code
    if rep.status == "unverified":
        return ExitStatus.INCOMPLETE
    return findings_status(rep.findings, mode.strict)


def _index(item: Item, rep, mode: Mode, renderer) -> None:
    from kdump.check.indexes.index_file import opened_index_file

    with opened_index_file(item.path, item.kind, item.base_offset) as parsed:     # walked, never held
        _index_of(item, parsed, rep, mode, renderer)


def _index_of(item: Item, parsed, rep, mode: Mode, renderer) -> None:
    from kdump.check.indexes.forward_pass import check_against_log
    from kdump.check.indexes.index_file import file_findings, live_entries, sanity_findings

    entries, tail = live_entries(parsed)
    rep.size, rep.slots, rep.entries = parsed.size, parsed.slots, len(entries)
    if tail is not None:
        end = parsed.nonzero_after_tail if parsed.nonzero_after_tail is not None else parsed.slots
        rep.zero_tail = (tail, end - tail)
    renderer.begin(rep)
    if mode.sanity:
        if item.kind == INDEX and parsed.slots == 0:
            rep.empty = True            # DumpLogSegments stops here, before the check
        else:
            found = sanity_findings(parsed, fs.abspath(item.path))
            rep.sanity = "failed" if found else "passed"
            rep.findings += found
            if found and item.kind == TIMEINDEX and tail is not None:
                rep.notes.append("Kafka's check reads the last slot, here a zero of the preallocated tail: a known "
                                 "false positive on an active segment")
    elif not mode.verify_only:
        renderer.entries(rep, entries)
        rep.empty = parsed.slots == 0
    if mode.verify:
        if not item.log or not fs.exists(item.log):
            rep.findings += file_findings(parsed)
            rep.status = "unverified"
            rep.message = f"cannot verify: the segment {item.log} is missing"
            _finish(rep, mode, renderer)
            report_error(InputError(rep.message, file=item.path))
            return
        check = check_against_log(item.log, item.kind, item.base_offset, parsed, mode.interval_bytes)
        rep.check = check
        rep.findings += check.findings
        rep.notes += check.notes
        _not_listed(rep, check.findings)
    elif not mode.sanity:
        rep.findings += file_findings(parsed)
    _finish(rep, mode, renderer)


def _txnindex(item: Item, rep, mode: Mode, renderer) -> None:
    from kdump.check.indexes.index_file import INDEX_LIMIT
    from kdump.format.txnindex import txnindex_entries
    from kdump.storage.slice_reader import SliceReader

    with SliceReader(item.path, INDEX_LIMIT) as data:       # entries walked a slice at a time, never held
        _txnindex_of(item, txnindex_entries(data.data(), lazy=True), rep, mode, renderer)


def _txnindex_of(item: Item, parsed, rep, mode: Mode, renderer) -> None:
    from kdump.check.capped import MAX_PER_KIND, Capped
    from kdump.findings import TXN_PARTIAL, TXN_SANITY, TXN_VERSION
    from kdump.format.txnindex import CURRENT_VERSION, kafka_version, sanity_check_txnindex, version_errors
    from kdump.model import Finding

    rep.size, rep.slots, rep.entries = parsed.size, len(parsed.entries), len(parsed.entries)
    renderer.begin(rep)
    if not (mode.verify_only or mode.sanity):
        renderer.entries(rep, parsed.entries)
        rep.empty = parsed.size == 0
    found = Capped()        # a 100 MB file of bad entries: the first of each kind, the rest counted
    if parsed.partial_bytes:
        found.append(Finding(TXN_PARTIAL, parsed.size - parsed.partial_bytes, None,
                             f"file size {parsed.size} is not a multiple of 34: the last "
                             f"{parsed.partial_bytes} bytes are a truncated entry (Kafka skips them)"))
    for i, t in enumerate(parsed.entries):
        if kafka_version(t) > CURRENT_VERSION:
            if found.room(TXN_VERSION) > 0:
                found.append(Finding(TXN_VERSION, i * 34, t.last_offset, version_errors([t], fs.abspath(item.path))[0]))
            else:
                found.skip(TXN_VERSION, 1)
    if mode.sanity:
        failed = sanity_check_txnindex(parsed.entries, item.base_offset, fs.abspath(item.path), limit=MAX_PER_KIND)
        rep.sanity = "failed" if failed else "passed"
        found.extend(Finding(TXN_SANITY, None, None, m) for m in failed)
        if len(failed) == MAX_PER_KIND:
            found.skip(TXN_SANITY, sum(t.last_offset < item.base_offset for t in parsed.entries) - MAX_PER_KIND)
    rep.findings += found
    _not_listed(rep, found)
    if mode.verify:
        rep.notes.append("aborted transactions are checked against the log's control markers by kdump verify")
    _finish(rep, mode, renderer)


def _not_listed(rep, findings) -> None:
    from kdump.check.capped import not_listed

    rep.notes += [f"{kind}: {n} more faults not listed (the first 50 of each kind are)"
                  for kind, n in not_listed(findings).items()]


def _finish(rep, mode: Mode, renderer) -> None:
    """The report drawn, with its status from its findings' classes; each run of findings of
    one kind on stderr as one line: an error if it counts for the exit status, else a note."""
    if rep.findings and rep.status != "unverified":
        rep.status = "damaged" if findings_status(rep.findings) else "ok"
    renderer.end(rep)
    if not rep.findings:
        return
    renderer.finish()
    from kdump.render.collapse import more_like_it, runs
    from kdump.render.escape import printable

    for run in runs(rep.findings):      # a run of one kind: one line (the JSON lists each)
        message = run[0].message if len(run) == 1 else f"{len(run)} {run[0].kind} faults from here: " \
                                                        f"{more_like_it(run)}"
        e = KdumpError(message, file=rep.path, position=run[0].position)
        if findings_status(run, mode.strict):
            report_error(e)
        elif not mode.quiet:
            say(printable(f"kdump: note: {e} ({run[0].cls})"))


def _rebuild_all(paths, interval_bytes: int | None, time_offset: str | None, backup: bool, renderer,
                 force: bool = False) -> int:
    from itertools import groupby

    from kdump.repair.indexes import rebuild_indexes
    from kdump.storage.writelock import PartitionLock

    status = ExitStatus.OK
    interval = DEFAULT_INTERVAL if interval_bytes is None else interval_bytes
    for path in paths:
        try:
            logs = segments_for(path)
        except KdumpError as e:
            renderer.finish()
            report_error(e)
            status = max(status, e.exit_code)
            continue
        for directory, group in groupby(logs, key=os.path.dirname):
            try:
                lock = PartitionLock(directory, force).acquire()
            except KdumpError as e:
                renderer.finish()
                report_error(e)
                status = max(status, e.exit_code)
                continue
            try:
                for log in group:
                    try:
                        result = rebuild_indexes(log, interval, time_offset, backup)
                    except KdumpError as e:
                        renderer.finish()
                        report_error(e.located(log))
                        status = max(status, e.exit_code)
                        continue
                    renderer.rebuilt(result)
            finally:
                lock.release()
    return status
