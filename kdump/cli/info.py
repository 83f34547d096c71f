"""``kdump info``: a summary per partition, the first picture of a log dir."""

from __future__ import annotations

import click

from kdump.cli.options import jobs_option, jobs_or_default, output_options, paths_argument
from kdump.cli.remote_options import remote_of, remote_options
from kdump.errors import KdumpError
from kdump.render.output import Output


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option("--schemas", "schemas_path", is_flag=False, flag_value="", default=None, metavar="[STORE]",
              help="Also list the Schema Registry subjects, versions and types each partition's records use (the "
                   "log dir's _schemas-0, or --schemas=STORE; see kdump dump --schemas).")
@jobs_option
@click.option("--timeline", is_flag=True,
              help="Chart each partition's segments against offset and time: sizes, record rates, offsets "
                   "missing (compaction), findings (damage in red).")
@click.option("--html", "html_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write the timeline as a self-contained HTML page (HTML and SVG, no script: opens without "
                   "network). Problems first, a chart per partition with findings, a row for every partition.")
@remote_options
@output_options
def info(paths, schemas_path, jobs, timeline, html_file, json_flag, fmt, color, quiet, remote_storage,
         remote_layout, remote_metadata, remote_keyring):
    """Summarise partitions: segments, bytes, batches, records, offset and time ranges,
    codecs, producers, transactional and control share, batch-size histogram.
    With --remote-storage: each tiered partition's segments, remote and local, in offset order.

    Reads batch headers only, so it is fast even on large log dirs. --timeline and --html
    also run verify's checks on each partition to place its findings.
    """
    out = Output(json_flag, fmt, color, quiet)
    remote = remote_of(remote_storage, remote_layout, remote_metadata, remote_keyring)
    if remote is not None:      # the tiered partitions' segments, remote and local, in offset order
        from kdump.run.tiered import run_tiered_info

        return run_tiered_info(paths, remote, out)
    if timeline or html_file:
        from kdump.run.timeline import run

        return run(paths, out, html_file, timeline, jobs_or_default(jobs))
    from kdump.run.info import run_info

    return run_info(paths, out, schemas_path=schemas_path, jobs=jobs_or_default(jobs))


__all__ = ["info", "KdumpError"]
