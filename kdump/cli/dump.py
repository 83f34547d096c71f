"""``kdump dump``: what is on disk, batch by batch, record by record."""

from __future__ import annotations

import os

import click

from kdump.decoders import basic
from kdump.errors import ExitStatus, InputError, KdumpError, UsageError
from kdump.format.codecs import DEFAULT_LIMITS, Limits, limits_for
from kdump.check.dls_index import IndexOptions
from kdump.storage.logdir import BATCH_KINDS, INDEX, TIMEINDEX, LogFile, expand
from kdump.storage.reader import Filters, SegmentReader, out_of_memory
from kdump.decoders.payload import PayloadView
from kdump.storage.segment import file_size
from kdump.cli.dlsoptions import decoder_for_class, dls_options, split_files
from kdump.cli.options import Output, jobs_option, jobs_or_default, limits_option, output_options

# DumpLogSegments' precedence when several are given: the first one set wins.
INTERNAL_FLAGS = (("offsets_decoder", "offsets"), ("transaction_log_decoder", "transaction-log"),
                  ("cluster_metadata_decoder", "cluster-metadata"),
                  ("remote_log_metadata_decoder", "remote-log-metadata"),
                  ("share_group_state_decoder", "share-group-state"))


def parse_time(value: str | None) -> int | None:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it names a zone)."""
    if value is None:
        return None
    v = value.strip()
    if v.lstrip("-").isdigit():
        return int(v)
    import datetime as dt

    try:
        t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return int(t.timestamp() * 1000)


def check_range(what: str, start: int | None, end: int | None) -> None:
    if start is not None and end is not None and start > end:
        raise click.UsageError(f"--start-{what} {start} is after --end-{what} {end}: nothing could match")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--records", "--deep-iteration", "records", is_flag=True,
              help="Show every record inside each batch (decompressing as needed).")
@click.option("--data", "--print-data-log", "data", is_flag=True,
              help="Also show keys, values and headers (implies --records).")
@click.option("--encoding", type=click.Choice(basic.ENCODINGS), default="utf8", show_default=True,
              help="How keys, values and header values are shown (hex and base64 are lossless).")
@click.option("--key-decoder", type=click.Choice(basic.DECODERS), help="Decode keys as this type (implies --data).")
@click.option("--value-decoder", type=click.Choice(basic.DECODERS),
              help="Decode values as this type (implies --data).")
@click.option("--offsets-decoder", is_flag=True, help="Decode records as __consumer_offsets records.")
@click.option("--transaction-log-decoder", is_flag=True, help="Decode records as __transaction_state records.")
@click.option("--cluster-metadata-decoder", is_flag=True, help="Decode records as KRaft metadata records.")
@click.option("--remote-log-metadata-decoder", is_flag=True,
              help="Decode records as __remote_log_metadata (tiered storage) records.")
@click.option("--share-group-state-decoder", is_flag=True, help="Decode records as __share_group_state records.")
@click.option("--no-auto-decode", is_flag=True,
              help="Do not pick internal-topic decoders from the partition directory name.")
@click.option("--skip-record-metadata", is_flag=True, help="Text view: print only keys and payloads of records.")
@click.option("--start-offset", type=int, help="First offset to show.")
@click.option("--end-offset", type=int, help="Last offset to show (inclusive).")
@click.option("--start-time", help="Earliest timestamp to show: epoch ms or ISO-8601 (UTC by default).")
@click.option("--end-time", help="Latest timestamp to show (inclusive).")
@click.option("--max-bytes", type=click.IntRange(min=0),
              help="Read only the first N bytes of each file (whole batches only).")
@dls_options
@limits_option
@jobs_option
@output_options
def dump(paths, records, data, encoding, key_decoder, value_decoder, offsets_decoder, transaction_log_decoder,
         cluster_metadata_decoder, remote_log_metadata_decoder, share_group_state_decoder, no_auto_decode,
         skip_record_metadata, start_offset, end_offset, start_time, end_time, max_bytes, max_decompressed,
         max_expansion, jobs, json_flag, fmt, color, quiet, files, key_decoder_class, value_decoder_class,
         index_sanity_check, verify_index_only, max_message_size):
    """Dump segments, KRaft snapshots, indexes and side files.

    PATHS are files, partition directories or whole log directories. A directory
    dumps its segments in offset order; name an index, checkpoint or metadata file to
    dump that file. Text output (when piped) is line-compatible with kafka-dump-log.sh,
    whose options are accepted with Kafka's meaning (--files a.log,b.index ...);
    --json writes one JSON object per batch.
    """
    if files:
        paths = (*paths, *split_files(files))
        no_auto_decode = True
    if not paths:
        raise click.UsageError("name at least one file or directory (PATHS or --files)")
    key_decoder = key_decoder or decoder_for_class(key_decoder_class, "--key-decoder-class")
    value_decoder = value_decoder or decoder_for_class(value_decoder_class, "--value-decoder-class")
    out = Output(json_flag, fmt, color, quiet)
    if (index_sanity_check or verify_index_only) and out.format != "text":
        raise click.UsageError("--index-sanity-check and --verify-index-only are kafka-dump-log.sh's text view; "
                               "for JSON or a table use `kdump index --verify`")
    flags = {"offsets_decoder": offsets_decoder, "transaction_log_decoder": transaction_log_decoder,
             "cluster_metadata_decoder": cluster_metadata_decoder,
             "remote_log_metadata_decoder": remote_log_metadata_decoder,
             "share_group_state_decoder": share_group_state_decoder}
    internal = next((name for flag, name in INTERNAL_FLAGS if flags[flag]), None)
    if internal or key_decoder or value_decoder:
        data = True
    if data:
        records = True
    filters = Filters(start_offset, end_offset, parse_time(start_time), parse_time(end_time), max_bytes)
    check_range("offset", filters.start_offset, filters.end_offset)
    check_range("time", filters.start_time, filters.end_time)
    view = PayloadView(encoding, key_decoder, value_decoder, internal)
    return run_dump(paths, out, view, records, data, filters, skip_record_metadata, auto_decode=not no_auto_decode,
                    limits=limits_for(max_decompressed, max_expansion),
                    index_opts=IndexOptions(index_sanity_check, verify_index_only, max_message_size),
                    jobs=jobs_or_default(jobs))


def _renderer(out: Output, view: PayloadView, records: bool, data: bool, skip_metadata: bool,
              filters: Filters = Filters()):
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
        return r.TableDump(out.console(), view, records, data, gaps)
    return r.TextDump(out.stream, view, records, data, skip_metadata)


def _auto_internal(f: LogFile, view: PayloadView, auto: bool) -> PayloadView:
    if not auto or view.internal is not None:
        return view
    from kdump.decoders import for_topic

    topic = f.topic
    if f.kind == "kraft_snapshot" and topic is None:
        topic = "__cluster_metadata"
    name = for_topic(topic) if topic else None
    return view.with_internal(name) if name else view


def _segment_ranges(files: list[LogFile]) -> dict[str, int]:
    """For each live segment, the base offset of the next segment in its partition dir."""
    nxt: dict[str, int] = {}
    by_dir: dict[str, list[LogFile]] = {}
    for f in files:
        if f.kind == "log" and f.leftover is None and f.base_offset is not None:
            by_dir.setdefault(os.path.dirname(f.path), []).append(f)
    for segs in by_dir.values():
        segs.sort(key=lambda f: f.base_offset)
        for a, b in zip(segs, segs[1:]):
            nxt[a.path] = b.base_offset
    return nxt


def run_dump(paths, out: Output, view: PayloadView, records: bool, data: bool, filters: Filters,
             skip_metadata: bool = False, auto_decode: bool = True, limits: Limits = DEFAULT_LIMITS,
             index_opts: IndexOptions = IndexOptions(), jobs: int = 1) -> int:
    status = ExitStatus.OK
    files: list[tuple[LogFile, bool]] = []     # (file, named explicitly)
    for path in paths:
        try:
            expanded = expand(path)
        except KdumpError as e:
            _error(out, e)
            status = max(status, e.exit_code)
            continue
        if os.path.isdir(path):
            from kdump.check.logless import logless_dirs

            for e in logless_dirs(expanded):
                _error(out, e)
                status = max(status, e.exit_code)
            expanded = [f for f in expanded if f.kind in BATCH_KINDS]
            if not expanded and status == ExitStatus.OK:
                e = UsageError("no log segments or KRaft snapshots found here", file=path)
                _error(out, e)
                status = max(status, e.exit_code)
        files.extend((f, not os.path.isdir(path)) for f in expanded)
    next_base = _segment_ranges([f for f, _ in files])
    from kdump.parallel import in_process, ordered_output
    from kdump.cli.progress import Progress

    # A partition at a time (consecutive files of one directory), each with its own renderer:
    # renderers keep nothing from one file to the next but DumpLogSegments' closing report,
    # which each unit hands back to be printed after all of them.
    units: list[list[tuple[LogFile, bool]]] = []
    for f, explicit in files:
        if units and os.path.dirname(units[-1][-1][0].path) == os.path.dirname(f.path):
            units[-1].append((f, explicit))
        else:
            units.append([(f, explicit)])
    here = in_process(units, jobs)

    def dump_unit(unit, out: Output) -> tuple[int, int, list]:
        status = ExitStatus.OK
        matched = [0]                          # batches shown, to say when a range matched nothing
        renderer = _renderer(out, view, records, data, skip_metadata, filters)
        mine = progress if here else None
        try:
            for f, explicit in unit:
                if not explicit and _outside_range(f, next_base.get(f.path), filters):
                    if mine is not None:
                        mine.done(f.path)
                    continue
                try:
                    if f.kind in BATCH_KINDS:
                        status = max(status, _dump_segment(f, renderer, _auto_internal(f, view, auto_decode),
                                                           records, filters, out, mine, limits, matched))
                    elif out.format == "text" and f.kind in (INDEX, TIMEINDEX) and f.leftover is None \
                            and f.base_offset is not None:
                        status = max(status, _dump_dls_index(f, renderer, view, out, index_opts, limits))
                    else:
                        status = max(status, _dump_side(f, renderer, view, out))
                except KdumpError as e:
                    renderer.finish()
                    _error(out, e.located(f.path))
                    status = max(status, e.exit_code)
                if mine is not None:
                    mine.done(f.path)
        finally:
            renderer.finish()
        return status, matched[0], getattr(renderer, "summary", [])

    matched = 0
    summary: list = []
    with Progress.for_output(out, lambda: sum(file_size(f.path) for f, _ in files), "dump") as progress:
        try:
            for unit, (unit_status, n, blocks) in zip(units, ordered_output(dump_unit, units, jobs, out)):
                status = max(status, unit_status)
                matched += n
                summary += blocks
                if not here and progress.enabled:
                    for f, _ in unit:       # a worker's reads are not seen here
                        progress.done(f.path)
        finally:
            from kdump.render.dump import summary_lines

            for line in summary_lines(summary):
                click.echo(line, err=True)
    ranges = _ranges(filters)
    if ranges and not matched and status == ExitStatus.OK and any(f.kind in BATCH_KINDS for f, _ in files):
        out.note(f"kdump: nothing matched {ranges}: no batch in the files read has offsets or times in that range")
    return int(status)


def _ranges(flt: Filters) -> str:
    return " ".join(f"--{name.replace('_', '-')} {value}" for name, value in flt._asdict().items()
                    if value is not None and name != "max_bytes")


def _outside_range(f: LogFile, next_base: int | None, flt: Filters) -> bool:
    if f.kind != "log" or f.base_offset is None or f.leftover is not None:
        return False
    if flt.end_offset is not None and f.base_offset > flt.end_offset:
        return True
    return flt.start_offset is not None and next_base is not None and next_base <= flt.start_offset


def _dump_segment(f: LogFile, renderer, view: PayloadView, records: bool, filters: Filters, out: Output,
                  progress=None, limits: Limits = DEFAULT_LIMITS, matched: list[int] | None = None) -> int:
    status = ExitStatus.OK
    renderer.begin_file(f, view)
    reader = SegmentReader(f, filters, records, limits)
    problems: list[KdumpError] = []
    n = 0
    for it in reader:
        try:
            renderer.item(f, it)
        except MemoryError:
            raise out_of_memory(f.path, it.batch.position, it.batch.base_offset, "write") from None
        n += 1
        if progress is not None and not n & 0x7FF:
            progress.advance(f.path, it.batch.position)
        b = it.batch
        if not b.crc_valid:
            problems.append(KdumpError(f"batch has an invalid CRC (stored {b.crc})",   # its offsets are unchecked too
                                       file=f.path, position=b.position))
        if it.error is not None:
            problems.append(it.error)
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
        status = max([ExitStatus.DAMAGE] + [e.exit_code for e in problems if isinstance(e, InputError)])
    return status


def _dump_dls_index(f: LogFile, renderer, view: PayloadView, out: Output, opts: IndexOptions, limits: Limits) -> int:
    """An .index/.timeindex as kafka-dump-log.sh shows it: entries checked against the segment."""
    from kdump.check import dls_index as dlsindex

    renderer.begin_file(f, view)
    if f.kind == INDEX:
        result = dlsindex.offset_index(f.path, opts)
    else:
        result = dlsindex.time_index(f.path, opts, limits)
    renderer.side(f, [], result.lines)
    renderer.end_file(f, 0)
    renderer.add_summary(result.summary)
    if result.error is not None:
        renderer.finish()
        _error(out, result.error.located(f.path))
        return max(ExitStatus.DAMAGE, result.error.exit_code)
    # Kafka's report of entries that disagree with the segment comes in its words after all files;
    # the exit status is kdump's own verdict on the index (dlsindex.damaged says why).
    if result.summary and dlsindex.damaged(f.path, f.kind, f.base_offset):
        return ExitStatus.DAMAGE
    return ExitStatus.OK


def _dump_side(f: LogFile, renderer, view: PayloadView, out: Output) -> int:
    from kdump.check.sidefiles import describe

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


def _error(out: Output, e: KdumpError) -> None:
    from kdump.cli import error_line

    click.echo(error_line(e), err=True)
