"""``kdump verify``: is it intact? Read-only unless ``--truncate`` is given."""

from __future__ import annotations

import importlib.util

import click

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.cli.options import force_option, jobs_option, jobs_or_default, limits_option, output_options, paths_argument
from kdump.cli.remote_options import remote_of, remote_options
from kdump.cli.schema_options import decode_limit_option
from kdump.errors import MissingExtraError, UsageError
from kdump.format.codecs import limits_for
from kdump.render.output import Output
from kdump.storage.fs import refuse_remote


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--deep", is_flag=True, help="Also decode every record (decompression, sizes, record offsets).")
@click.option("--max-message-size", type=click.IntRange(min=61), default=DEFAULT_MAX_MESSAGE_SIZE,
              show_default=True,
              help="Largest plausible batch, in bytes (Kafka's message.max.bytes default). A larger batch with a "
                   "valid CRC is reported but kept, as the broker keeps it.")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=DEFAULT_INDEX_INTERVAL_BYTES,
              show_default=True, help="The topic's index.interval.bytes, used to follow the broker's recovery.")
@click.option("--truncate", is_flag=True,
              help="Cut each damaged segment at its last good batch (where a broker's recovery would, or earlier "
                   "where kdump finds damage the broker does not check), saving the cut bytes beside it as "
                   "<segment>.corrupt-<position>, and rebuild indexes that disagree with their log. After a clean "
                   "shutdown (.kafka_cleanshutdown) a segment the broker keeps whole (one with an .index) is not "
                   "cut, unless the partition's load would fail (kdump recover --full --apply cuts it anyway). "
                   "No prompt: the flag is the consent.")
@click.option("--broker-cut", is_flag=True,
              help="With --truncate: cut only where a broker's recovery would, keeping damage it does not detect "
                   "(offset regressions, undecodable records with a valid CRC).")
@click.option("--strict", is_flag=True,
              help="Also exit 1 for anomalies: odd states a broker accepts as they are (an index entry naming an "
                   "offset compaction removed, a checkpoint lagging the log, segments overlapping after an "
                   "interrupted clean).")
@force_option
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Run here, or as a Spark job (needs the 'spark' extra).")
@click.option("--master", metavar="URL", help="Spark master URL for --engine spark (e.g. local[4], spark://host:7077).")
@click.option("--problems", is_flag=True,
              help="List only the files with damage or anomalies, not info findings (the summary on stderr "
                   "still counts every file).")
@decode_limit_option
@click.option("--schemas", "schemas_path", is_flag=False, flag_value="", default=None, metavar="[STORE]",
              help="Also decode every Schema Registry record under its schema (unknown ids, records that do not "
                   "decode, subjects whose Avro, Protobuf or JSON Schema versions break their compatibility "
                   "level), with the _schemas-0 of the log dir, or the store given as --schemas=STORE (a "
                   "_schemas dir, a schema folder, a registry cache).")
@click.option("--schema-registry", metavar="URL",
              help="With --schemas: read the schemas from a live registry (an id no subject lists is asked for "
                   "on demand).")
@click.option("--schema-cache", metavar="FILE", help="With --schema-registry: where to cache what it read.")
@remote_options
@limits_option
@jobs_option
@output_options
def verify(paths, deep, max_message_size, index_interval_bytes, truncate, broker_cut, strict, force, engine, master,
           problems, schemas_path, schema_registry, schema_cache, max_decompressed, max_expansion,
           max_records_per_batch, jobs, json_flag, fmt, color, quiet, remote_storage, remote_layout,
           remote_metadata, remote_keyring):
    """Check segments, indexes and side files for damage.

    PATHS are files, partition directories or log directories. Every segment is walked
    batch by batch (framing, size, magic, CRC, offsets; records too with --deep) and
    checked against its neighbours: offsets across segments, .index/.timeindex,
    .txnindex against the transaction markers, producer snapshot CRCs and the
    leader-epoch-checkpoint. Leftover .cleaned/.swap/.deleted files and orphan indexes
    are noted, not counted as damage: the broker finishes them at startup.

    Each file gets a line (or with --json one object: file, kind, status, size,
    valid_bytes, intact_bytes, batches, records, first_offset, last_offset, findings,
    not_listed); valid_bytes is where a broker's recovery would cut the segment. Each
    finding has a class: damage (data a broker would cut, delete or fail to load, or that
    readers lose), anomaly (odd but accepted by a broker as it is), info (a state the
    broker finishes at startup). A file (segment, index, .txnindex) keeps the first 50
    findings of each kind; not_listed counts the rest by kind. A leader epoch that every later batch falls below
    is one finding, at the batch that raised it.

    A summary goes to stderr, with all that a broker's recovery would remove: the bytes
    cut from the first damaged segment it recovers in each partition (from the one holding
    the recovery point; a segment without its .index wherever it is), the later segments it
    deletes whole, and the offsets lost (as kdump recover plans it); damaged segments before
    the recovery point, which a broker keeps, are counted apart. The text and table views
    show a run of findings of one kind in one file as one line (count, byte and offset
    ranges); --json lists each. On a terminal the table lists the files with damage or
    anomalies and sums up the rest (info findings as a count); --problems lists only
    those anywhere.

    With --truncate, damage in a segment that later segments follow is cut the same way,
    and the later segments are moved into kdump-quarantine-<time>/ inside the partition
    (a broker's recovery deletes them): no offset gap is left behind.

    \b
    Exit status: 0 clean or only anomalies, 1 damage found (also when --truncate
    repaired it; anomalies too with --strict), 3 could not complete (unreadable file,
    codec library missing).
    """
    out = Output(json_flag, fmt, color, quiet)
    out.problems_only = problems
    limits = limits_for(max_decompressed, max_expansion, max_records_per_batch)
    if force and not truncate:
        raise UsageError("--force applies only with --truncate")
    if truncate:
        refuse_remote(paths, "--truncate")
    if engine == "spark":
        if truncate:
            raise UsageError("--truncate runs locally only; drop --engine spark to repair")
        return _spark(paths, deep, max_message_size, index_interval_bytes, master, out, limits, strict)
    if master:
        raise UsageError("--master is for --engine spark")
    remote = remote_of(remote_storage, remote_layout, remote_metadata, remote_keyring)
    if remote is not None and (truncate or engine == "spark"):
        raise UsageError("--remote-storage is read here only: not with --truncate or --engine spark")
    from kdump.run.verify import run_verify

    status = run_verify(paths, out, deep=deep, max_message_size=max_message_size,
                        index_interval_bytes=index_interval_bytes, truncate=truncate, broker_cut=broker_cut,
                        strict=strict, limits=limits, force=force, jobs=jobs_or_default(jobs))
    if schemas_path is not None or schema_registry:
        from kdump.run.schema_check import run_schema_check
        from kdump.run.schema_store import load_store

        store = load_store(paths, schemas_path or None, schema_registry, schema_cache, out, need=True)
        from kdump.schemas.sources import find_schemas_dir

        where = schemas_path or schema_registry or find_schemas_dir(paths)
        status = max(status, run_schema_check(paths, out, store, strict, where))
    if remote is not None:
        from kdump.run.tiered import run_tiered_verify

        status = max(status, run_tiered_verify(paths, remote, out, strict))
    return status


def _spark(paths, deep, max_message_size, index_interval_bytes, master, out, limits, strict=False) -> int:
    from kdump.cli.options import local_reads_only

    local_reads_only("spark")
    if importlib.util.find_spec("kdump.spark.verify") is None or importlib.util.find_spec("pyspark") is None:
        raise MissingExtraError("the Spark engine needs the 'spark' extra", "spark")
    from kdump.spark.verify import verify_on_spark

    return verify_on_spark(list(paths), master, out=out, deep=deep, max_message_size=max_message_size,
                        index_interval_bytes=index_interval_bytes, limits=limits, strict=strict)
