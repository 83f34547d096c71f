"""``kdump dump``: what is on disk, batch by batch, record by record."""

from __future__ import annotations

import click

from kdump.cli.dlsoptions import decoder_for_class, dls_options, kafka_line, split_files
from kdump.cli.options import ByteSize, jobs_option, jobs_or_default, limits_option, local_urls, output_options
from kdump.cli.remote_options import remote_of, remote_options
from kdump.cli.schema_options import decoder_choice, schema_options
from kdump.decoders import kafka_lines, plain
from kdump.decoders.views import PayloadView
from kdump.format.codecs import limits_for
from kdump.render.output import Output
from kdump.run.dump import run_dump
from kdump.run.schema_store import schema_decoders
from kdump.storage.record_reader import Filters
from kdump.storage.split import DUMP_SPLIT_BYTES

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
@click.argument("paths", nargs=-1, type=click.Path(path_type=str), callback=local_urls)
@click.option("--records", "--deep-iteration", "records", is_flag=True,
              help="Show every record inside each batch (decompressing as needed).")
@click.option("--data", "--print-data-log", "data", is_flag=True,
              help="Also show keys, values and headers (implies --records).")
@click.option("--encoding", type=click.Choice(plain.ENCODINGS), default="utf8", show_default=True,
              help="How keys, values and header values are shown (hex and base64 are lossless).")
@click.option("--key-decoder", type=decoder_choice(plain.DECODERS),
              help="Decode keys as this type (implies --data); avro, protobuf, jsonschema and auto read Schema "
                   "Registry frames with the schema store (see --schemas), connect Kafka Connect's JSON envelope.")
@click.option("--value-decoder", type=decoder_choice(plain.DECODERS),
              help="Decode values as this type (implies --data); see --key-decoder.")
@click.option("--offsets-decoder", is_flag=True, help="Decode records as __consumer_offsets records.")
@click.option("--transaction-log-decoder", is_flag=True, help="Decode records as __transaction_state records.")
@click.option("--cluster-metadata-decoder", is_flag=True, help="Decode records as KRaft metadata records.")
@click.option("--remote-log-metadata-decoder", is_flag=True,
              help="Decode records as __remote_log_metadata (tiered storage) records.")
@click.option("--share-group-state-decoder", is_flag=True, help="Decode records as __share_group_state records.")
@click.option("--no-auto-decode", is_flag=True,
              help="Do not pick internal-topic decoders from the partition directory name.")
@click.option("--skip-record-metadata", is_flag=True, help="Text view: print only keys and payloads of records.")
@click.option("--escape", type=click.Choice(["controls", "none"]), default="controls", show_default=True,
              help="Text view: control characters in keys, values and header keys escaped (one record a "
                   "line), or none: printed raw, byte for byte kafka-dump-log.sh's output, to a pipe or a "
                   "file (a terminal still gets them escaped).")
@click.option("--kafka-version", type=click.Choice(kafka_lines.LINES),
              help=f"Text view: print as this Kafka line's kafka-dump-log.sh ({', '.join(kafka_lines.LINES)}; "
                   f"default {kafka_lines.NEWEST}), refusing the options it lacks (README: Text of older Kafka lines).")
@click.option("--start-offset", type=int, help="First offset to show.")
@click.option("--end-offset", type=int, help="Last offset to show (inclusive).")
@click.option("--start-time", help="Earliest timestamp to show: epoch ms or ISO-8601 (UTC by default).")
@click.option("--end-time", help="Latest timestamp to show (inclusive).")
@click.option("--max-bytes", type=click.IntRange(min=0),
              help="Read only the first N bytes of each file (whole batches only).")
@click.option("--split-bytes", type=ByteSize(), default=DUMP_SPLIT_BYTES, show_default="8MiB",
              help="With -j and --json, cut a segment larger than this into ranges at batch boundaries (from its "
                   ".index when it passes a sanity check, else a walk of the batch headers) for the workers to "
                   "share; the output is the same bytes. 0: a segment is one piece.")
@remote_options
@schema_options
@dls_options
@limits_option
@jobs_option
@output_options
def dump(paths, records, data, encoding, key_decoder, value_decoder, offsets_decoder, transaction_log_decoder,
         cluster_metadata_decoder, remote_log_metadata_decoder, share_group_state_decoder, no_auto_decode,
         skip_record_metadata, escape, kafka_version, start_offset, end_offset, start_time, end_time, max_bytes,
         split_bytes, max_decompressed, max_expansion, max_records_per_batch, jobs, json_flag, fmt, color, quiet, files,
         key_decoder_class, value_decoder_class, index_sanity_check, verify_index_only, max_message_size, schemas_path,
         schema_registry, schema_cache, remote_storage, remote_layout, remote_metadata, remote_keyring):
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
    if escape == "none" and out.format != "text":
        raise click.UsageError("--escape none is for the text view (kafka-dump-log.sh's lines); --json "
                               "carries the exact bytes, tables always escape")
    if escape == "none" and out.on_terminal:
        # Kafka's bytes are for a pipe or a file (a diff, a script): a terminal would act on them.
        out.note("kdump: note: --escape none writes Kafka's bytes to a pipe or a file; on a terminal "
                 "control characters stay escaped (add | cat for the raw bytes)")
    if (index_sanity_check or verify_index_only) and out.format != "text":
        raise click.UsageError("--index-sanity-check and --verify-index-only are kafka-dump-log.sh's text view; "
                               "for JSON or a table use `kdump index --verify`")
    kafka = kafka_line(kafka_version, out.format, {"--key-decoder-class": key_decoder_class, "--value-decoder-class":
                       value_decoder_class, "--remote-log-metadata-decoder": remote_log_metadata_decoder,
                       "--share-group-state-decoder": share_group_state_decoder})
    flags = {"offsets_decoder": offsets_decoder, "transaction_log_decoder": transaction_log_decoder, "remote_log_"
             "metadata_decoder": remote_log_metadata_decoder, "cluster_metadata_decoder": cluster_metadata_decoder,
             "share_group_state_decoder": share_group_state_decoder}
    internal = next((name for flag, name in INTERNAL_FLAGS if flags[flag]), None)
    if internal or key_decoder or value_decoder:
        data = True
    if data:
        records = True
    filters = Filters(start_offset, end_offset, parse_time(start_time), parse_time(end_time), max_bytes)
    check_range("offset", filters.start_offset, filters.end_offset)
    check_range("time", filters.start_time, filters.end_time)
    decoders = schema_decoders(paths, key_decoder, value_decoder, schemas_path, schema_registry, schema_cache, out)
    view = PayloadView(encoding, key_decoder, value_decoder, internal, decoders, escape=escape != "none",
                       kafka=kafka, notices=kafka.decoder_notices(key_decoder_class, value_decoder_class))
    return run_dump(paths, out, view, records, data, filters, skip_record_metadata, auto_decode=not no_auto_decode,
                    dls=bool(files),
                    limits=limits_for(max_decompressed, max_expansion, max_records_per_batch),
                    index_sanity_check=index_sanity_check, verify_index_only=verify_index_only,
                    index_max_message_size=max_message_size,
                    jobs=jobs_or_default(jobs), split_bytes=split_bytes,
                    remote=remote_of(remote_storage, remote_layout, remote_metadata, remote_keyring))
