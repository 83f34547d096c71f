"""``kdump metadata``: the KRaft cluster image at any point of __cluster_metadata, offline."""

from __future__ import annotations

import click

from kdump.cli.options import local_urls, output_options
from kdump.errors import UsageError
from kdump.render.output import Output


def _point(value: str | None):
    from kdump.cli.dump import parse_time
    from kdump.state.cluster_image import Point

    if value is None:
        return Point()
    v = value.strip()
    if v.isdigit():
        return Point(offset=int(v))
    if v.startswith("@") and v[1:].lstrip("-").isdigit():
        return Point(time_ms=int(v[1:]))
    return Point(time_ms=parse_time(v))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str), callback=local_urls)
@click.option("--at", "at", metavar="OFFSET|TIME",
              help="The point to show: a metadata log offset, or a time as ISO-8601 or @epoch-ms; the image "
                   "includes every whole batch at or before it, as a broker applies them [default: the end of "
                   "the log].")
@click.option("--diff", nargs=2, metavar="A B", help="Show what changed between two points (each OFFSET or TIME).")
@click.option("--strict", is_flag=True,
              help="Exit 1 when records between the snapshot and the point are missing (a segment's .log gone).")
@output_options
def metadata(paths, at, diff, strict, json_flag, fmt, color, quiet):
    """Show the cluster as __cluster_metadata describes it at a point.

    The image is loaded like a broker's: the newest snapshot (.checkpoint) at or before
    the point, then the log. Shown: features, controllers, brokers (registration,
    fencing, controlled shutdown), topics with ids and partitions (replicas, ISR, leader,
    leader epoch), configs, ACLs, client quotas, the producer id block and SCRAM users
    (names and mechanisms only). A log ending in a torn batch is replayed up to it, and
    the output says where it stopped.

    The metadata log is never compacted, so offsets missing between the snapshot and the
    point (a segment whose .log is gone, no .log at all) mean lost records: they are named
    on stderr and in the JSON header ("incomplete"), and the image may be stale.

    \b
    Exit status: 0 clean, 1 the replay stopped at a torn or damaged batch (records kdump
    cannot decode are listed, not counted as damage), or with --strict records are
    missing, 2 usage error, 3 could not complete (also: an --at or --diff point cannot be
    reached here: before the first snapshot with no log from offset 0, or an offset past the
    data).
    """
    from kdump.run.metadata import run_metadata

    if diff and at:
        raise UsageError("--at and --diff do not go together")
    points = (_point(diff[0]), _point(diff[1])) if diff else None
    return run_metadata(paths, Output(json_flag, fmt, color, quiet), at=at, point=_point(at), diff=diff,
                        points=points, strict=strict)
