"""``kdump index`` and ``kdump timeindex``: list, verify, sanity-check or rebuild segment indexes.

Read-only unless ``--rebuild`` is given: index files are opened through read-only maps
and a missing one is reported, never created (DumpLogSegments creates it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

import click

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES
from kdump.errors import ExitStatus, InputError, KdumpError, NothingToDoError, UnknownFileKindError, UsageError
from kdump.storage.logdir import INDEX, LOG, TIMEINDEX, TXNINDEX, LogFile, expand
from kdump.storage.names import CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX
from kdump.storage.segment import file_size
from kdump.cli.options import Output, force_option, jobs_option, jobs_or_default, output_options, paths_argument

DEFAULT_INTERVAL = DEFAULT_INDEX_INTERVAL_BYTES
EXT = {INDEX: INDEX_SUFFIX, TIMEINDEX: TIMEINDEX_SUFFIX, TXNINDEX: TXNINDEX_SUFFIX, LOG: LOG_SUFFIX}
MISSING_TEXT = {
    INDEX: "no offset index for segment {log} (a broker rebuilds a missing .index at startup)",
    TIMEINDEX: "no time index for segment {log} (a broker creates it empty and rebuilds it at startup)",
}


class Item(NamedTuple):
    """One index file to work on (it may be missing) and the segment it belongs to."""

    kind: str
    path: str
    log: str | None          # the .log it indexes; None for a .txnindex listing
    base_offset: int
    explicit: bool


# -- which files ----------------------------------------------------------------------------------

def _stem(f: LogFile) -> tuple[str, str]:
    """(directory, name without extension and leftover suffix)."""
    directory, name = os.path.split(f.path)
    if f.leftover:
        name = name[: -len(f.leftover)]
    return directory, os.path.splitext(name)[0]


def _sibling(f: LogFile, kind: str) -> str:
    directory, stem = _stem(f)
    return os.path.join(directory, stem + EXT[kind] + (f.leftover or ""))


def _log_of(f: LogFile) -> str:
    """The .log an index belongs to; a cleaner leftover may sit beside a .log.swap or .log.cleaned."""
    first = _sibling(f, LOG)
    if f.leftover in (CLEANED_SUFFIX, SWAP_SUFFIX) and not os.path.exists(first):
        directory, stem = _stem(f)
        candidates = (os.path.join(directory, stem + LOG_SUFFIX + other) for other in (SWAP_SUFFIX, CLEANED_SUFFIX))
        return next((c for c in candidates if os.path.exists(c)), first)
    return first


def _item(f: LogFile, kind: str, explicit: bool) -> Item:
    base = f.base_offset if f.base_offset is not None else 0
    if kind == TXNINDEX:
        return Item(kind, f.path, _log_of(f), base, explicit)
    if f.kind == LOG:
        return Item(kind, _sibling(f, kind), f.path, base, explicit)
    return Item(kind, f.path, _log_of(f), base, explicit)


def items_for(path: str, kind: str) -> list[Item]:
    """The index files of ``kind`` a PATH stands for (txnindex too for ``kdump index``)."""
    files = expand(path)
    if not os.path.isdir(path):
        f = files[0]
        if f.kind in (kind, LOG):
            return [_item(f, kind, True)]
        if f.kind == TXNINDEX and kind == INDEX:
            return [_item(f, TXNINDEX, True)]
        other = "kdump timeindex" if f.kind == TIMEINDEX else "kdump index" if f.kind in (INDEX, TXNINDEX) else None
        hint = f"use {other} for it" if other else None
        raise UnknownFileKindError(f"kdump {kind} does not read {f.kind.replace('_', ' ')} files", file=path,
                                   hint=hint)
    out: list[Item] = []
    seen: set[str] = set()
    for f in files:
        item = None
        if f.kind == LOG:
            sibling = _sibling(f, kind)
            if f.leftover is None or os.path.exists(sibling):
                item = _item(f, kind, False)
        elif f.kind == kind or (f.kind == TXNINDEX and kind == INDEX):
            item = _item(f, f.kind, False)
        if item is not None and item.path not in seen:
            seen.add(item.path)
            out.append(item)
    if not out:
        raise NothingToDoError(f"no log segments or {EXT[kind]} files found here", file=path)
    return out


def segments_for(path: str) -> list[str]:
    """The live ``.log`` files a PATH stands for (what --rebuild works on)."""
    from kdump.check.indexes import segment_log_path

    files = expand(path)
    if not os.path.isdir(path):
        f = files[0]
        if f.kind not in (LOG, INDEX, TIMEINDEX, TXNINDEX):
            raise UnknownFileKindError(f"cannot rebuild indexes from a {f.kind.replace('_', ' ')} file", file=path)
        return [segment_log_path(f.path)]
    logs = [f.path for f in files if f.kind == LOG and f.leftover is None]
    if not logs:
        raise NothingToDoError("no live log segments found here", file=path)
    return logs


# -- the commands ---------------------------------------------------------------------------------

def index_options(f: Callable) -> Callable:
    f = force_option(f)
    f = click.option("--no-backup", is_flag=True, help="With --rebuild: do not keep the old files as .bak.")(f)
    f = click.option("--time-offset", type=click.Choice(["last", "record"]),
                     help="With --rebuild: which offset a time index entry holds, the last offset of the batch "
                          "with the max timestamp (recovery, followers) or the record carrying it (a leader's "
                          "append path). Default: the convention of the existing .timeindex, else last.")(f)
    f = click.option("--interval-bytes", type=click.IntRange(min=0), metavar="N",
                     help=f"index.interval.bytes. --rebuild: the interval to index at [default: {DEFAULT_INTERVAL}]. "
                          "--verify: entries closer than N are faults (default: infer the range that fits).")(f)
    f = click.option("--rebuild", is_flag=True,
                     help="Write fresh .index and .timeindex files from the log, as a broker's recovery does "
                          "(atomically; old files kept as .bak).")(f)
    f = click.option("--sanity", "--index-sanity-check", "sanity", is_flag=True,
                     help="Run Kafka's own OffsetIndex/TimeIndex sanityCheck (its conditions and messages).")(f)
    f = click.option("--verify-index-only", is_flag=True, help="Verify against the log without listing entries.")(f)
    f = click.option("--verify", is_flag=True, help="Check every entry against the log in one pass.")(f)
    return f


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@index_options
@jobs_option
@output_options
def index(paths, verify, verify_index_only, sanity, rebuild, interval_bytes, time_offset, no_backup, force, jobs,
          json_flag, fmt, color, quiet):
    """List, verify, sanity-check or rebuild offset indexes (.index).

    PATHS are .index files, their segments (.log), partition directories or log
    directories. A directory also lists its .txnindex files. Nothing is written unless
    --rebuild is given; a missing .index is reported, never created.
    """
    return run(INDEX, paths, verify or verify_index_only, verify_index_only, sanity, rebuild, interval_bytes,
               time_offset, no_backup, Output(json_flag, fmt, color, quiet), force, jobs_or_default(jobs))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@index_options
@jobs_option
@output_options
def timeindex(paths, verify, verify_index_only, sanity, rebuild, interval_bytes, time_offset, no_backup, force, jobs,
              json_flag, fmt, color, quiet):
    """List, verify, sanity-check or rebuild time indexes (.timeindex).

    PATHS are .timeindex files, their segments (.log), partition directories or log
    directories. Nothing is written unless --rebuild is given; a missing .timeindex is
    reported, never created.
    """
    return run(TIMEINDEX, paths, verify or verify_index_only, verify_index_only, sanity, rebuild, interval_bytes,
               time_offset, no_backup, Output(json_flag, fmt, color, quiet), force, jobs_or_default(jobs))


def _renderer(out: Output):
    from kdump.render import index as r

    if out.format == "json":
        return r.JsonIndex(out.stream)
    if out.format == "table":
        return r.TableIndex(out.console())
    return r.TextIndex(out.stream)


def run(kind: str, paths, verify: bool, verify_only: bool, sanity: bool, rebuild: bool, interval_bytes: int | None,
        time_offset: str | None, no_backup: bool, out: Output, force: bool = False, jobs: int = 1) -> int:
    if rebuild and (verify or sanity):
        raise UsageError("--rebuild cannot be combined with --verify, --verify-index-only or --sanity")
    if not rebuild and (no_backup or time_offset or force):
        raise UsageError("--no-backup, --time-offset and --force apply only with --rebuild")
    if rebuild:
        renderer = _renderer(out)
        try:
            return int(_rebuild_all(paths, interval_bytes, time_offset, not no_backup, renderer, force))
        finally:
            renderer.finish()
    from kdump.parallel import ordered_output
    from kdump.cli.progress import Progress

    # A partition's items at a time (an unreadable PATH is a unit of its own, so its error
    # line comes where -j 1 prints it), each unit with its own renderer.
    units: list = []
    for path in paths:
        try:
            items = items_for(path, kind)
        except KdumpError as e:
            units.append(e)
            continue
        for item in items:
            if units and isinstance(units[-1], list) and \
                    os.path.dirname(units[-1][-1].path) == os.path.dirname(item.path):
                units[-1].append(item)
            else:
                units.append([item])

    def run_unit(unit, out: Output) -> int:
        if isinstance(unit, KdumpError):
            _error(unit)
            return unit.exit_code
        status = ExitStatus.OK
        renderer = _renderer(out)
        try:
            for item in unit:
                status = max(status, _one(item, verify, verify_only, sanity, interval_bytes, renderer))
        finally:
            renderer.finish()
        return status

    def logs() -> list[str]:
        return [p for p in {i.log for u in units if isinstance(u, list) for i in u if i.log} if os.path.isfile(p)]

    status = ExitStatus.OK
    with Progress.for_output(out, (lambda: sum(file_size(p) for p in logs())) if verify else 0,
                             f"{kind} --verify") as progress:
        for unit, unit_status in zip(units, ordered_output(run_unit, units, jobs, out)):
            status = max(status, unit_status)
            if verify and progress.enabled and isinstance(unit, list):
                for item in unit:       # a worker's reads are not seen here
                    if item.log and os.path.isfile(item.log):
                        progress.done(item.log)
    return int(status)


def _one(item: Item, verify: bool, verify_only: bool, sanity: bool, interval_bytes: int | None, renderer) -> int:
    from kdump.render.index import FileReport

    rep = FileReport(item.path, item.kind, item.log if item.kind != TXNINDEX else None)
    if not os.path.exists(item.path):
        rep.status = "missing"
        rep.message = MISSING_TEXT.get(item.kind, "no such file").format(log=item.log)
        renderer.missing(rep)
        return ExitStatus.OK
    try:
        if item.kind == TXNINDEX:
            return _txnindex(item, rep, verify, verify_only, sanity, renderer)
        return _index(item, rep, verify, verify_only, sanity, interval_bytes, renderer)
    except KdumpError as e:
        renderer.finish()
        _error(e.located(item.path))
        return e.exit_code


def _index(item: Item, rep, verify: bool, verify_only: bool, sanity: bool, interval_bytes: int | None,
           renderer) -> int:
    from kdump.check.indexes import file_findings, live_entries, read_index_file, sanity_findings

    parsed = read_index_file(item.path, item.kind, item.base_offset)
    entries, tail = live_entries(parsed)
    rep.size, rep.slots, rep.entries = parsed.size, parsed.slots, len(entries)
    if tail is not None:
        end = parsed.nonzero_after_tail if parsed.nonzero_after_tail is not None else parsed.slots
        rep.zero_tail = (tail, end - tail)
    renderer.begin(rep)
    status = ExitStatus.OK
    if sanity:
        if item.kind == INDEX and parsed.slots == 0:
            rep.empty = True            # DumpLogSegments stops here, before the check
        else:
            found = sanity_findings(parsed, os.path.abspath(item.path))
            rep.sanity = "failed" if found else "passed"
            rep.findings += found
            if found and item.kind == TIMEINDEX and tail is not None:
                rep.notes.append("Kafka's check reads the last slot, here a zero of the preallocated tail: a known "
                                 "false positive on an active segment")
    elif not verify_only:
        renderer.entries(rep, entries)
        rep.empty = parsed.slots == 0
    if verify:
        if not item.log or not os.path.exists(item.log):
            rep.findings += file_findings(parsed)
            rep.status = "unverified"
            rep.message = f"cannot verify: the segment {item.log} is missing"
            _finish(rep, renderer)
            _error(InputError(rep.message, file=item.path))
            return ExitStatus.INCOMPLETE
        from kdump.check.indexes import check_against_log

        check = check_against_log(item.log, item.kind, item.base_offset, parsed, interval_bytes)
        rep.check = check
        rep.findings += check.findings
        rep.notes += check.notes
    elif not sanity:
        rep.findings += file_findings(parsed)
    if rep.findings:
        rep.status = "damaged"
        status = ExitStatus.DAMAGE
    _finish(rep, renderer)
    return status


def _txnindex(item: Item, rep, verify: bool, verify_only: bool, sanity: bool, renderer) -> int:
    from kdump.findings import TXN_PARTIAL, TXN_SANITY, TXN_VERSION
    from kdump.format.txnindex import CURRENT_VERSION, kafka_version, parse_txnindex, sanity_check_txnindex, version_errors
    from kdump.model import Finding
    from kdump.storage.segment import MappedFile

    with MappedFile(item.path) as mf:
        parsed = parse_txnindex(mf.buf)
    rep.size, rep.slots, rep.entries = parsed.size, len(parsed.entries), len(parsed.entries)
    renderer.begin(rep)
    if not (verify_only or sanity):
        renderer.entries(rep, parsed.entries)
        rep.empty = parsed.size == 0
    if parsed.partial_bytes:
        rep.findings.append(Finding(TXN_PARTIAL, parsed.size - parsed.partial_bytes, None,
                                    f"file size {parsed.size} is not a multiple of 34: the last "
                                    f"{parsed.partial_bytes} bytes are a truncated entry (Kafka skips them)"))
    for i, t in enumerate(parsed.entries):
        if kafka_version(t) > CURRENT_VERSION:
            rep.findings.append(Finding(TXN_VERSION, i * 34, t.last_offset,
                                        version_errors([t], os.path.abspath(item.path))[0]))
    if sanity:
        found = sanity_check_txnindex(parsed.entries, item.base_offset, os.path.abspath(item.path))
        rep.sanity = "failed" if found else "passed"
        rep.findings += [Finding(TXN_SANITY, None, None, m) for m in found]
    if verify:
        rep.notes.append("aborted transactions are checked against the log's control markers by kdump verify")
    if rep.findings:
        rep.status = "damaged"
    _finish(rep, renderer)
    return ExitStatus.DAMAGE if rep.findings else ExitStatus.OK


def _finish(rep, renderer) -> None:
    renderer.end(rep)
    if rep.findings:
        renderer.finish()
        from kdump.render.collapse import more_like_it, runs

        for run in runs(rep.findings):      # a run of one kind: one line (the JSON lists each)
            message = run[0].message if len(run) == 1 else f"{len(run)} {run[0].kind} faults from here: " \
                                                            f"{more_like_it(run)}"
            _error(KdumpError(message, file=rep.path, position=run[0].position))


def _rebuild_all(paths, interval_bytes: int | None, time_offset: str | None, backup: bool, renderer,
                 force: bool = False) -> int:
    from itertools import groupby

    from kdump.check.indexes import rebuild_indexes
    from kdump.storage.writelock import PartitionLock

    status = ExitStatus.OK
    interval = DEFAULT_INTERVAL if interval_bytes is None else interval_bytes
    for path in paths:
        try:
            logs = segments_for(path)
        except KdumpError as e:
            renderer.finish()
            _error(e)
            status = max(status, e.exit_code)
            continue
        for directory, group in groupby(logs, key=os.path.dirname):
            try:
                lock = PartitionLock(directory, force).acquire()
            except KdumpError as e:
                renderer.finish()
                _error(e)
                status = max(status, e.exit_code)
                continue
            try:
                for log in group:
                    try:
                        result = rebuild_indexes(log, interval, time_offset, backup)
                    except KdumpError as e:
                        renderer.finish()
                        _error(e.located(log))
                        status = max(status, e.exit_code)
                        continue
                    renderer.rebuilt(result)
            finally:
                lock.release()
    return status


def _error(e: KdumpError) -> None:
    from kdump.cli import error_line

    click.echo(error_line(e), err=True)
    if e.hint:
        from kdump.render.escape import printable

        click.echo(printable(f"kdump: hint: {e.hint}"), err=True)
