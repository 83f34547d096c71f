"""``kdump groups``: consumer groups and committed offsets from __consumer_offsets, offline."""

from __future__ import annotations

import click

from kdump.cli.options import output_options, paths_argument
from kdump.cli.state_options import Duration, now_ms, now_option
from kdump.render.output import Output


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--group", "group_id", metavar="GROUP",
              help="Only this group, and say which __consumer_offsets partition holds it "
                   "(abs(Java hashCode of the id) mod the partition count).")
@click.option("--partitions", type=click.IntRange(min=1), metavar="N",
              help="The __consumer_offsets partition count, when __cluster_metadata is not here to give it.")
@click.option("--at", "at", metavar="TIME", help="Replay only the batches written up to TIME (epoch ms or ISO-8601).")
@click.option("--offsets-retention", type=Duration(), default="7d", show_default=True,
              help="The broker's offsets.retention.minutes, for marking offsets the coordinator would expire.")
@click.option("--strict", is_flag=True,
              help="Exit 1 when a __consumer_offsets partition read is incomplete (no .log, or a segment's "
                   "indexes without its .log): its groups may be stale.")
@now_option
@output_options
def groups(paths, group_id, partitions, at, offsets_retention, strict, now, json_flag, fmt, color, quiet):
    """List consumer groups and their committed offsets, from __consumer_offsets.

    For each group: its protocol (classic, or the KIP-848 consumer protocol), generation
    or epoch, members and assignments where recorded, and the latest committed offset per
    topic-partition with its commit time and metadata. Offsets are replayed as Kafka's
    group coordinator loads them: tombstones delete offsets and groups; an offset commit
    written in a transaction (sendOffsetsToTransaction) is pending, shown apart with its
    producer id, until its COMMIT marker applies it (unless a plain commit was written
    after it) or an ABORT drops it. When a topic's own partitions are under PATHS, the
    log end offset and lag are added.

    A __consumer_offsets partition with no .log, or with a segment's indexes but not its
    .log, is named on stderr and in the JSON header ("incomplete"), and its groups are
    marked possibly stale.

    \b
    Exit status: 0 clean, 1 a __consumer_offsets log ends in damage (read up to it), the
    --group GROUP is not found, or with --strict a partition is incomplete, 2 usage error, 3
    could not complete.
    """
    from kdump.cli.dump import parse_time
    from kdump.run.groups import run_groups

    return run_groups(paths, Output(json_flag, fmt, color, quiet), group_id=group_id, partitions=partitions,
                      at_ms=parse_time(at), now_ms=now_ms(now), retention_ms=offsets_retention, strict=strict)
