"""The ``kdump dump`` run: each file shown batch by batch (segments, KRaft snapshots), as
kafka-dump-log.sh shows it (indexes) or described (side files), a partition at a time,
here or in the workers of ``-j``; the errors on stderr; the exit status.
"""

from __future__ import annotations

from typing import NamedTuple

from kdump.check.indexes.dls_view import DLS_MAX_MESSAGE_SIZE, IndexOptions
from kdump.decoders.views import PayloadView
from kdump.errors import ExitStatus, InputError, KdumpError
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.model import RecordFinding
from kdump.render.diagnostics import record_findings
from kdump.run import dump_files as D
from kdump.run.dump_files import error as _error
from kdump.storage import fs
from kdump.storage.levels import expand
from kdump.storage.logdir import BATCH_KINDS, INDEX, TIMEINDEX, LogFile
from kdump.storage.mapped import file_size
from kdump.storage.record_reader import (
    RAW_ALL,
    RAW_LEGACY,
    Filters,
    Item,
    Raw,
    RecordSlices,
    SegmentReader,
    Span,
    out_of_memory,
)
from kdump.storage.remote import is_remote

_item = tuple.__new__       # Item(...) without the named tuple's Python-level __new__


def _renderer(out, view: PayloadView, records: bool, data: bool, skip_metadata: bool,
              filters: Filters = Filters(), dls: bool = False):
    from kdump.check.gaps import PartitionGaps
    from kdump.render import dump as r

    # kdump's own views report the gaps an operator has to look at (gaps.py), a partition
    # per renderer; not with a time range (the records shown are then a selection) or --quiet.
    gaps = None
    if records and not out.quiet and filters.start_time is None and filters.end_time is None:
        gaps = PartitionGaps(start_chosen=filters.start_offset is not None)
    if out.format == "json":
        return r.JsonDump(out.stream, view, gaps)
    if out.format == "table":
        from kdump.render.tabledump import TableDump

        return TableDump(out.console(), view, records, data, gaps)
    # With --files, kafka-dump-log.sh's own report of every gap (-1 is followed by ... included).
    return r.TextDump(out.stream, view, records, data, skip_metadata, gaps, dls)


def _auto_internal(f: LogFile, view: PayloadView, auto: bool) -> PayloadView:
    if not auto or view.internal is not None:
        return view
    from kdump.decoders import for_topic

    topic = f.topic
    if f.kind == "kraft_snapshot" and topic is None:
        topic = "__cluster_metadata"
    name = for_topic(topic) if topic else None
    return view.with_internal(name) if name else view


def run_dump(paths, out, view: PayloadView, records: bool, data: bool, filters: Filters,
             skip_metadata: bool = False, auto_decode: bool = True, limits: Limits = DEFAULT_LIMITS,
             index_sanity_check: bool = False, verify_index_only: bool = False,
             index_max_message_size: int | None = None, jobs: int = 1, split_bytes: int = 0,
             dls: bool = False, remote=None) -> int:
    """The dump of PATHS to ``out``; the index options are kafka-dump-log.sh's (``IndexOptions``).
    One remote log dir is dumped as its listing comes (``dump_files.Walked``), the others
    once listed whole."""
    from kdump.render.progress import Progress

    index_opts = IndexOptions(index_sanity_check, verify_index_only,
                              DLS_MAX_MESSAGE_SIZE if index_max_message_size is None else index_max_message_size)
    run = _Run(out, _Options(view, records, data, filters, skip_metadata, auto_decode, limits, index_opts, jobs,
                             split_bytes, dls))
    try:
        if remote is None and _one_remote_dir(paths):
            path = paths[0]
            walked = D.Walked(path, out)
            with Progress.for_output(out, lambda: sum(file_size(f.path) for f in expand(path)),
                                     "dump") as run.progress:
                for files in walked:
                    run.dump(files)
            run.status = max(run.status, walked.status)
        else:
            files, run.status = D.listed(paths, out, jobs)
            read_to: dict[str, int] = {}    # remote segments read up to an offset: the local log gives the rest
            if remote is not None:      # a tiered partition's whole log: live remote segments, then local
                from kdump.run.tiered import cuts, splice, tiered_partitions

                try:
                    parts = tiered_partitions(paths, remote, out)
                except KdumpError as e:
                    _error(out, e)
                    return int(max(run.status, e.exit_code))
                files, read_to = splice(files, parts), cuts(parts)
            with Progress.for_output(out, lambda: sum(file_size(f.path) for f, _ in files), "dump") as run.progress:
                run.dump(files, read_to)
    finally:
        from kdump.render.diagnostics import say
        from kdump.render.dump import summary_lines

        for line in summary_lines(run.summary):
            say(line)
    ranges = _ranges(filters)
    if ranges and not run.matched and run.status == ExitStatus.OK and run.segments:
        out.note(f"kdump: nothing matched {ranges}: no batch in the files read has offsets or times in that range")
    return int(run.status)


def _one_remote_dir(paths) -> bool:
    if len(paths) != 1 or not is_remote(paths[0]):
        return False
    try:
        return fs.kind(paths[0]) == "dir"
    except KdumpError:
        return False        # (reported by the whole listing, in its words)


class _Options(NamedTuple):
    view: PayloadView
    records: bool
    data: bool
    filters: Filters
    skip_metadata: bool
    auto_decode: bool
    limits: Limits
    index_opts: IndexOptions
    jobs: int
    split_bytes: int
    dls: bool


class _Run:
    """The dump so far: its exit status, the batches shown, DumpLogSegments' closing report;
    ``dump`` takes whole partitions' files, some at a time."""

    def __init__(self, out, opts: _Options) -> None:
        self.out, self.opts = out, opts
        self.status = ExitStatus.OK
        self.matched = 0
        self.summary: list = []
        self.segments = False       # a segment or snapshot among the files
        self.progress = None

    def dump(self, files: list[tuple[LogFile, bool]], read_to: dict[str, int] | None = None) -> None:
        """``read_to``: remote segments read up to an offset."""
        from kdump.jobs.fanout import in_process
        from kdump.jobs.ordered_output import keep_freed_memory, ordered_output
        from kdump.run import pieces as P

        o, progress, read_to = self.opts, self.progress, read_to or {}
        view, filters = o.view, o.filters
        self.segments = self.segments or any(f.kind in BATCH_KINDS for f, _ in files)
        next_base = D.segment_ranges([f for f, _ in files])
        # A partition at a time (consecutive files of one directory), each with its own renderer:
        # renderers keep nothing from one file to the next but DumpLogSegments' closing report,
        # which each unit hands back to be printed after all of them. A segment larger than
        # split_bytes is cut into ranges, each a piece of its own (run.pieces), for -j's workers:
        # NDJSON only. Not the text view (its C renderer outruns the workers' hand-over: 268 MB in
        # 0.55 s in-process, 1.9 s cut over -j 2; bench/README.md), not the table (its columns keep
        # one width down a whole file, kdump.tables.FitTable), nor ranges of offsets, times or
        # bytes: they read little.
        units = D.partition_units(files)
        keep_freed_memory()     # lines of ~100 KB each, made and freed: keep the memory, not fault it in again
        split = o.jobs > 1 and self.out.format == "json" and not filters.active
        plan = P.plan(units, o.split_bytes if split else 0)
        here = in_process(plan, o.jobs)

        def dump_piece(piece: P.Piece, out) -> P.Result:
            status = ExitStatus.OK
            matched = [0]                          # batches shown, to say when a range matched nothing
            cut_through = None
            renderer = _renderer(out, view, o.records, o.data, o.skip_metadata, filters, o.dls)
            if piece.resumed:
                renderer.resume()
            mine = progress if here else None
            try:
                for f, explicit, rng in piece.entries:
                    flt = filters if f.path not in read_to else filters.up_to(read_to[f.path])
                    if not explicit and _outside_range(f, next_base.get(f.path), flt):
                        if mine is not None:
                            mine.done(f.path)
                        continue
                    try:
                        if f.kind in BATCH_KINDS:
                            st, reached = _dump_segment(f, renderer, _auto_internal(f, view, o.auto_decode),
                                                        o.records, flt, out, mine, o.limits, matched, rng)
                            status = max(status, st)
                            if rng is not None and rng.stop is not None and not reached:
                                cut_through = rng.last_piece    # the segment ended in this range
                        elif out.format == "text" and f.kind in (INDEX, TIMEINDEX) and f.leftover is None \
                                and f.base_offset is not None:
                            status = max(status, _dump_dls_index(f, renderer, view, out, o.index_opts, o.limits))
                        else:
                            status = max(status, _dump_side(f, renderer, view, out))
                    except KdumpError as e:
                        renderer.finish()
                        _error(out, e.located(f.path))
                        status = max(status, e.exit_code)
                        if rng is not None and rng.stop is not None:
                            cut_through = rng.last_piece
                    if mine is not None and (rng is None or rng.stop is None):
                        mine.done(f.path)
            finally:
                renderer.finish()
            gaps = getattr(renderer, "gaps", None)
            summary = renderer.summary if gaps is None else []
            return P.Result(status, matched[0], summary, gaps, cut_through)

        joiner = P.Joiner()     # (each call's units are whole partitions: its joins end with it)
        # A worker counts what it reads for the bar as it goes, and hands the count back.
        work = dump_piece if here else progress.counted(dump_piece)
        cut = P.cut_of if here else (lambda r: None if r is None else P.cut_of(r[0]))
        for piece, result in zip(plan, ordered_output(work, plan, o.jobs, self.out, cut)):
            counted = 0
            if result is not None and not here:
                result, counted = result
            self.summary += joiner.add(piece, result)
            if result is not None:
                self.status = max(self.status, result.status)
                self.matched += result.matched
            if not here:
                progress.unit_done((f.path for f, _, rng in piece.entries if rng is None or rng.stop is None),
                                   counted)
                for f, _, rng in piece.entries:
                    if rng is not None and rng.stop is not None:
                        progress.advance(f.path, rng.stop)
        self.summary += joiner.finish()


def _ranges(flt: Filters) -> str:
    return " ".join(f"--{name.replace('_', '-')} {value}" for name, value in flt._asdict().items()
                    if value is not None and name != "max_bytes")


def _outside_range(f: LogFile, next_base: int | None, flt: Filters) -> bool:
    if f.kind != "log" or f.base_offset is None or f.leftover is not None:
        return False
    if flt.end_offset is not None and f.base_offset > flt.end_offset:
        return True
    return flt.start_offset is not None and next_base is not None and next_base <= flt.start_offset


def _dump_segment(f: LogFile, renderer, view: PayloadView, records: bool, filters: Filters, out,
                  progress=None, limits: Limits = DEFAULT_LIMITS, matched: list[int] | None = None,
                  rng=None) -> tuple[int, bool]:
    """The exit status, and whether the walk reached the end of the range ``rng`` (a
    ``run.pieces.Range``; None: the whole file) without ending the file."""
    status = ExitStatus.OK
    if rng is None or rng.first:
        renderer.begin_file(f, view)
    else:
        renderer.continue_file(f, view)
        if progress is not None:
            progress.begin_at(f.path, rng.start)
    # The renderer's C writers: ``raw`` draws a batch from its Raw records section, ``run`` the
    # plain v2 batches from a Span of the segment; each answers what it drew (None: nothing).
    raw = getattr(renderer, "raw_writer", None)
    raw = raw() if raw is not None and records else None
    run = getattr(renderer, "run_writer", None)
    run = run() if run is not None and records else None
    spans = run is not None
    advance = progress.advance if spans and progress is not None and progress.enabled else None
    reader = SegmentReader(f, filters, records, limits, None if rng is None else (rng.start, rng.stop),
                           None if raw is None else RAW_ALL if getattr(raw, "v2", True) else RAW_LEGACY, spans)
    problems: list[KdumpError] = []
    view.unknown = []           # records the decoder has no schema for, taken batch by batch
    n = 0
    for it in reader:
        if spans and type(it) is Span:      # plain v2 batches from here: the C writer draws what it can
            pos = run(*it)
            reader.resume(pos)
            if advance is not None:
                advance(f.path, pos)
            continue
        if raw is not None and type(it.records) is Raw:
            drawn = raw(it.batch, *it.records)
            it = reader.decoded(it.batch) if drawn is None else _item(Item, (it.batch, drawn, None))
        try:
            if type(it.records) is RecordSlices:
                it = _streamed(renderer, f, it)
                if it is None:
                    continue
            else:
                renderer.item(f, it)
        except MemoryError:
            raise out_of_memory(f.path, it.batch.position, it.batch.base_offset, "write") from None
        if view.unknown:
            # record_unknown_schema: after its batch's lines (a finding object in --json); a
            # table keeps its rows together (the finding goes to stderr)
            if out.format != "table":
                renderer.finish()
            status = max(status, record_findings(out, [RecordFinding.unknown_schema(e, f.path, it.batch.position,
                                                                                    offset)
                                                       for offset, e in view.unknown]))
            view.unknown.clear()
        n += 1
        if progress is not None and not n & 0x7FF:
            progress.advance(f.path, it.batch.position)
        b = it.batch
        if not b.crc_valid:
            problems.append(KdumpError(f"batch has an invalid CRC (stored {b.crc})",   # its offsets are unchecked too
                                       file=f.path, position=b.position))
        if it.error is not None:
            problems.append(it.error)
    if not reader.reached:
        renderer.end_file(f, reader.trailing_bytes)
    if matched is not None:
        matched[0] += n
    if reader.stop is not None:
        problems.append(KdumpError(reader.stop.message, file=f.path, position=reader.stop.position))
    if problems:
        renderer.finish()
        for e in problems:
            _error(out, e)
        # damage; a batch that could not be read at all (out of memory) did not complete
        status = max([status, ExitStatus.DAMAGE] + [e.exit_code for e in problems if isinstance(e, InputError)])
    return status, reader.reached


def _streamed(renderer, f: LogFile, it: Item) -> Item | None:
    """A batch of more records than one slice, drawn a slice at a time as they decode (a batch
    of millions of records is never one list): the batch with the error that stopped its
    records, or None when a time or offset range left none of them and nothing went wrong."""
    slices = it.records
    first = True
    for records in slices:
        if records:                     # (a range may leave a slice empty)
            renderer.slice(f, it._replace(records=records), first)
            first = False
    it = it._replace(records=None, error=slices.error)
    if first:                           # nothing shown: as for a batch decoded whole
        if it.error is None:
            return None
        renderer.item(f, it)
    else:
        renderer.end_batch(f, it)
    return it


def _dump_dls_index(f: LogFile, renderer, view: PayloadView, out, opts: IndexOptions, limits: Limits) -> int:
    """An .index/.timeindex as kafka-dump-log.sh shows it: entries checked against the segment."""
    from kdump.check.indexes import dls_view

    renderer.begin_file(f, view)
    if f.kind == INDEX:
        result = dls_view.offset_index(f.path, opts)
    else:
        result = dls_view.time_index(f.path, opts, limits)
    renderer.side(f, [], result.lines)
    renderer.end_file(f, 0)
    renderer.add_summary(result.summary)
    if result.error is not None:
        renderer.finish()
        _error(out, result.error.located(f.path))
        return max(ExitStatus.DAMAGE, result.error.exit_code)
    # Kafka's report of entries that disagree with the segment comes in its words after all files;
    # the exit status is kdump's own verdict on the index (dls_view.damaged says why).
    if result.summary and dls_view.damaged(f.path, f.kind, f.base_offset):
        return ExitStatus.DAMAGE
    return ExitStatus.OK


def _dump_side(f: LogFile, renderer, view: PayloadView, out) -> int:
    from kdump.check.side_file_views import describe

    renderer.begin_file(f, view)
    desc = describe(f)
    renderer.side(f, desc.rows, desc.lines)
    renderer.end_file(f, 0)
    if desc.problems:
        renderer.finish()
        for message, position in desc.problems:
            _error(out, KdumpError(message, file=f.path, position=position))
        return ExitStatus.DAMAGE
    return ExitStatus.OK
