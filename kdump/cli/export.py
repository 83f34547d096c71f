"""``kdump export``: records to Parquet or NDJSON, in this process or on Spark."""

from __future__ import annotations

import click

from kdump.cli.options import (
    io_limit_option,
    jobs_option,
    jobs_or_default,
    limits_option,
    local_reads_only,
    paths_argument,
)
from kdump.cli.remote_options import remote_of, remote_options
from kdump.cli.schema_options import schema_options
from kdump.errors import UsageError
from kdump.format.codecs import limits_for


def parse_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--conf")
        conf[key.strip()] = value
    return conf


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Output directory: a local path, or an s3:// or hdfs:// URL, written so that it is complete "
                   "once _SUCCESS is there (must be empty or absent, unless --overwrite; never a log dir, a "
                   "folder inside one, a partition, or an input).")
@click.option("--format", "fmt", type=click.Choice(["parquet", "ndjson"]), default="parquet", show_default=True,
              help="Parquet (zstd, millisecond UTC timestamps) or NDJSON (dump --json's record objects).")
@click.option("--partition-by", default="topic,partition", show_default=True,
              help="Hive-style output directories by these columns (topic, partition, segment; '' for none).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local: this process with pyarrow; spark: a Spark job (pyspark and Java 17 needed).")
@click.option("--master", help="Spark master URL for --engine spark [default: local[*]].")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="Spark setting (repeatable).")
@click.option("--writer", type=click.Choice(["arrow", "spark"]),
              help="--engine spark: 'arrow' (tasks write the files with pyarrow; --out must be a path every "
                   "executor can write) or 'spark' (Spark's DataFrame writer, any Hadoop filesystem URI) "
                   "[default: arrow for local, s3:// and hdfs:// outputs (copied up by kdump), spark for other "
                   "scheme:// outputs].")
@click.option("--encoding", type=click.Choice(["base64", "hex", "utf8"]), default="base64", show_default=True,
              help="NDJSON: how keys, values and header values are written (utf8 replaces invalid bytes).")
@click.option("--split-bytes", type=click.IntRange(min=0), default=32 << 20, show_default=True,
              help="Split segments larger than this at .index positions (0: one task per segment).")
@click.option("--decode", is_flag=True,
              help="Parquet: add value_decoded, the Schema Registry value decoded (a typed struct when every "
                   "record of the topic has one Avro schema, else its JSON text), and value_decode_error.")
@schema_options
@limits_option
@jobs_option
@remote_options
@click.option("--overwrite", is_flag=True, help="Replace the output directory if it is not empty.")
@click.option("--json", "json_flag", is_flag=True, help="Print a JSON summary object on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No summary or notes on stderr.")
@io_limit_option
def export(paths, out, fmt, partition_by, engine, master, conf, writer, encoding, split_bytes, decode,
           schemas_path, schema_registry, schema_cache, max_decompressed, max_expansion, max_records_per_batch, jobs,
           remote_storage, remote_layout, remote_metadata, remote_keyring, overwrite, json_flag, quiet):
    """Export the records under PATHS to Parquet or NDJSON files in --out.

    One row per record: topic, partition, segment, file, position, base_offset, offset,
    timestamp, timestamp_type, key, value, headers, magic, compression, producer_id,
    producer_epoch, sequence, is_transactional, txn, is_control, partition_leader_epoch,
    crc_valid and error; txn says how the record's transaction ended (committed, aborted or
    open, from its partition's control markers, as kdump records says; null outside a
    transaction). NDJSON lines are dump --json's record objects with topic, partition and
    segment. Damaged data becomes rows with an error message, never a failed
    export; the exit status is then 1. So does a payload past --max-decompressed or
    --max-expansion, and a timestamp Kafka's long sum wrapped (timestamp_overflow: the
    value is kept where the format holds it, NDJSON; null in Parquet).

    A partition dir that cannot be listed is reported and the rest exported, with
    _INCOMPLETE (what was not read) instead of _SUCCESS in --out; the exit status is 3.

    With --remote-storage a tiered partition's whole log is exported: its live remote
    segments (read by the Spark tasks themselves with --engine spark), then the local ones.
    """
    from kdump.export.local import parse_partition_by

    conf_map = parse_conf(conf)
    local_reads_only(engine)
    if engine == "local" and (master or conf_map or writer):
        raise UsageError("--master, --conf and --writer apply to --engine spark only")
    if engine == "spark" and jobs is not None:
        raise UsageError("--jobs applies to --engine local only (Spark's parallelism is its master's)")
    remote = remote_of(remote_storage, remote_layout, remote_metadata, remote_keyring)
    if remote is not None and engine == "spark" and writer == "spark":
        raise UsageError("--remote-storage exports with --writer arrow (Spark's own writer plans the PATHS alone)")
    columns = parse_partition_by(partition_by)
    options = {"fmt": fmt, "partition_by": columns, "encoding": encoding, "split_bytes": split_bytes,
               "overwrite": overwrite, "limits": limits_for(max_decompressed, max_expansion, max_records_per_batch)}
    if engine == "spark" and decode:
        raise UsageError("--decode runs with --engine local (the Spark source decodes with option valueFormat)")
    if engine == "spark":
        from kdump.spark.export import run_spark_export

        return run_spark_export(list(paths), out, master=master, conf=conf_map, writer=writer, json_flag=json_flag,
                                quiet=quiet, options=options, remote=remote)
    from kdump.run.export import run_export

    return run_export(list(paths), out, jobs=jobs_or_default(jobs), decode=decode,
                      schemas=(schemas_path, schema_registry, schema_cache), json_flag=json_flag, quiet=quiet,
                      options=options, remote=remote)
