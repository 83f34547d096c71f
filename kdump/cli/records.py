"""``kdump records``: the records under PATHS as a stream, as kcat and jq users expect."""

from __future__ import annotations

import click

from kdump.cli.options import io_limit_option, limits_option, paths_argument
from kdump.decoders import plain
from kdump.decoders.views import PayloadView
from kdump.format.codecs import limits_for
from kdump.render.output import Output, isatty
from kdump.render.records import DEFAULT_FORMAT, compile_format
from kdump.run.records import READ_COMMITTED, READ_UNCOMMITTED, RecordMatch, Stream, run_records
from kdump.storage.record_reader import Filters


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("-f", "--format-string", "line_format", metavar="FMT",
              help="Draw each record by FMT, as kcat's -f: %t topic, %p partition, %o offset, %k key, %s value, "
                   "%K/%S key/value length (-1: null), %T timestamp, %h headers (k=v,...), %x transaction outcome, "
                   "%%; \\n \\t \\r \\0 \\\\ [default: '%t-%p %o %T %k %s\\n'].")
@click.option("--encoding", type=click.Choice(["utf8", "hex", "base64"]), default=None,
              help="How keys, values and header values are written [default: base64 in --json (lossless), "
                   "utf8 otherwise].")
@click.option("--key", metavar="TEXT", help="Only records whose key is TEXT (its UTF-8 bytes).")
@click.option("--key-regex", metavar="REGEX", help="Only records whose key matches REGEX (on the raw bytes).")
@click.option("--key-hex", metavar="HEX", help="Only records whose key is these bytes.")
@click.option("--value", metavar="TEXT", help="Only records whose value is TEXT.")
@click.option("--value-regex", metavar="REGEX", help="Only records whose value matches REGEX (on the raw bytes).")
@click.option("--value-hex", metavar="HEX", help="Only records whose value is these bytes.")
@click.option("--header", "headers", metavar="KEY[=VALUE]", multiple=True,
              help="Only records with this header (and value); may be repeated, all must hold.")
@click.option("--header-regex", "header_regexes", metavar="KEY=REGEX", multiple=True,
              help="Only records with header KEY whose value matches REGEX; may be repeated.")
@click.option("--start-offset", type=int, help="First offset to read.")
@click.option("--end-offset", type=int, help="Last offset to read (inclusive).")
@click.option("--start-time", help="Earliest timestamp: epoch ms or ISO-8601 (UTC by default).")
@click.option("--end-time", help="Latest timestamp (inclusive).")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Stop after N records in all.")
@click.option("--tail", type=click.IntRange(min=0), metavar="N",
              help="Only the last N records of each partition (after the filters).")
@click.option("--isolation", type=click.Choice([READ_UNCOMMITTED, READ_COMMITTED]), default=READ_UNCOMMITTED,
              show_default=True,
              help="read_committed: what a read_committed consumer sees: no record of an aborted transaction, "
                   "nothing from the last stable offset on (the first record of a transaction still open).")
@click.option("--json", "json_flag", is_flag=True,
              help="One flat NDJSON object a record (object: record), and damage as objects (object: damage).")
@click.option("-q", "--quiet", is_flag=True, help="No notes on stderr.")
@limits_option
@io_limit_option
def records(paths, line_format, encoding, key, key_regex, key_hex, value, value_regex, value_hex, headers,
            header_regexes, start_offset, end_offset, start_time, end_time, limit, tail, isolation, json_flag, quiet,
            max_decompressed, max_expansion, max_records_per_batch):
    """Stream the records under PATHS, one a line, as a consumer reads them.

    Partition after partition, each in offset order: with --json one flat object a record
    (topic, partition, offset, timestamp, key, value, headers, the batch's fields, and txn:
    committed, aborted or open for a record of a transaction, from the partition's control
    markers); otherwise a line drawn by --format-string, as kcat -f. Control records are not
    records a consumer sees: their outcome is each record's txn. Damage met on the way is a
    line on stderr, and in --json an object of the stream too (object: damage, kind, file,
    position).

    \b
    Exit status: 0 clean, 1 damage met, 2 usage error, 3 could not complete.
    """
    from kdump.cli.dump import parse_time

    if line_format is not None and json_flag:
        raise click.UsageError("--format-string and --json draw records two ways: give one")
    out = Output(json_flag, None, quiet=quiet)
    encoding = encoding or ("base64" if json_flag else "utf8")
    view = PayloadView(encoding)
    draw = None
    if not json_flag:
        draw = compile_format(line_format or DEFAULT_FORMAT, plain.get(encoding),
                              escape=isatty(out.stream))
    match = RecordMatch.build(key, key_regex, key_hex, value, value_regex, value_hex, headers, header_regexes)
    filters = Filters(start_offset, end_offset, parse_time(start_time), parse_time(end_time))
    return run_records(paths, Stream(out, json_flag, draw, view, limit), filters=filters, match=match, tail=tail,
                       isolation=isolation,
                       limits=limits_for(max_decompressed, max_expansion, max_records_per_batch))
