"""``kdump dump``: what is on disk, batch by batch, record by record."""

from __future__ import annotations

import os

import click

from ..decoders import basic
from ..errors import ExitStatus, KdumpError, UsageError
from ..format.codecs import DEFAULT_LIMITS, Limits, limits_for
from ..logdir import BATCH_KINDS, LogFile, expand
from ..reader import Filters, SegmentReader
from ..render.payload import PayloadView
from ..segment import file_size
from .options import Output, jobs_option, jobs_or_default, limits_option, output_options, paths_argument

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


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
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
@limits_option
@jobs_option
@output_options
def dump(paths, records, data, encoding, key_decoder, value_decoder, offsets_decoder, transaction_log_decoder,
         cluster_metadata_decoder, remote_log_metadata_decoder, share_group_state_decoder, no_auto_decode,
         skip_record_metadata, start_offset, end_offset, start_time, end_time, max_bytes, max_decompressed,
         max_expansion, jobs, json_flag, fmt, color, quiet):
    """Dump segments, KRaft snapshots, indexes and side files.

    PATHS are files, partition directories or whole log directories. A directory
    dumps its segments in offset order; name an index, checkpoint or metadata file to
    dump that file. Text output (when piped) is line-compatible with kafka-dump-log.sh;
    --json writes one JSON object per batch.
    """
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
    out = Output(json_flag, fmt, color, quiet)
    view = PayloadView(encoding, key_decoder, value_decoder, internal)
    return run_dump(paths, out, view, records, data, filters, skip_record_metadata, auto_decode=not no_auto_decode,
                    limits=limits_for(max_decompressed, max_expansion), jobs=jobs_or_default(jobs))


def _renderer(out: Output, view: PayloadView, records: bool, data: bool, skip_metadata: bool):
    from ..render import dump as r

    if out.format == "json":
        return r.JsonDump(out.stream, view)
    if out.format == "table":
        return r.TableDump(out.console(), view, records, data)
    return r.TextDump(out.stream, view, records, data, skip_metadata)


def _auto_internal(f: LogFile, view: PayloadView, auto: bool) -> PayloadView:
    if not auto or view.internal is not None:
        return view
    from ..decoders import for_topic

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
             jobs: int = 1) -> int:
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
            expanded = [f for f in expanded if f.kind in BATCH_KINDS]
            if not expanded:
                e = UsageError("no log segments or KRaft snapshots found here", file=path)
                _error(out, e)
                status = max(status, e.exit_code)
        files.extend((f, not os.path.isdir(path)) for f in expanded)
    next_base = _segment_ranges([f for f, _ in files])
    from ..parallel import in_process, ordered_output
    from .progress import Progress

    # A partition at a time (consecutive files of one directory), each with its own renderer:
    # renderers keep nothing from one file to the next, so the bytes are those of one renderer.
    units: list[list[tuple[LogFile, bool]]] = []
    for f, explicit in files:
        if units and os.path.dirname(units[-1][-1][0].path) == os.path.dirname(f.path):
            units[-1].append((f, explicit))
        else:
            units.append([(f, explicit)])
    here = in_process(units, jobs)

    def dump_unit(unit, out: Output) -> int:
        status = ExitStatus.OK
        renderer = _renderer(out, view, records, data, skip_metadata)
        try:
            for f, explicit in unit:
                if not explicit and _outside_range(f, next_base.get(f.path), filters):
                    continue
                try:
                    if f.kind in BATCH_KINDS:
                        status = max(status, _dump_segment(f, renderer, _auto_internal(f, view, auto_decode),
                                                           records, filters, out, progress if here else None,
                                                           limits))
                    else:
                        status = max(status, _dump_side(f, renderer, view, out))
                except KdumpError as e:
                    renderer.finish()
                    _error(out, e.located(f.path))
                    status = max(status, e.exit_code)
                if here and progress.enabled:
                    progress.file_done(file_size(f.path))
        finally:
            renderer.finish()
        return status

    with Progress.for_output(out, lambda: sum(file_size(f.path) for f, _ in files), "dump") as progress:
        for unit, unit_status in zip(units, ordered_output(dump_unit, units, jobs, out)):
            status = max(status, unit_status)
            if not here and progress.enabled:
                progress.file_done(sum(file_size(f.path) for f, _ in unit))
    return int(status)


def _outside_range(f: LogFile, next_base: int | None, flt: Filters) -> bool:
    if f.kind != "log" or f.base_offset is None or f.leftover is not None:
        return False
    if flt.end_offset is not None and f.base_offset > flt.end_offset:
        return True
    return flt.start_offset is not None and next_base is not None and next_base <= flt.start_offset


def _dump_segment(f: LogFile, renderer, view: PayloadView, records: bool, filters: Filters, out: Output,
                  progress=None, limits: Limits = DEFAULT_LIMITS) -> int:
    status = ExitStatus.OK
    renderer.begin_file(f, view)
    reader = SegmentReader(f, filters, records, limits)
    problems: list[KdumpError] = []
    n = 0
    for it in reader:
        renderer.item(f, it)
        n += 1
        if progress is not None and not n & 0x7FF:
            progress.update(it.batch.position)
        b = it.batch
        if not b.crc_valid:
            problems.append(KdumpError(f"batch at offset {b.last_offset} has an invalid CRC (stored {b.crc})",
                                       file=f.path, position=b.position))
        if it.error is not None:
            problems.append(it.error)
    renderer.end_file(f, reader.trailing_bytes)
    if reader.stop is not None:
        problems.append(KdumpError(reader.stop.message, file=f.path, position=reader.stop.position))
    if problems:
        renderer.finish()
        for e in problems:
            _error(out, e)
        status = ExitStatus.DAMAGE
    return status


def _dump_side(f: LogFile, renderer, view: PayloadView, out: Output) -> int:
    from ..sidefiles import describe

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
    from . import error_line

    click.echo(error_line(e), err=True)
