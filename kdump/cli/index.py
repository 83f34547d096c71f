"""``kdump index`` and ``kdump timeindex``: list, verify, sanity-check or rebuild segment indexes.

Read-only unless ``--rebuild`` is given: index files are opened through read-only maps
and a missing one is reported, never created (DumpLogSegments creates it).
"""

from __future__ import annotations

from collections.abc import Callable

import click

from kdump.cli.options import force_option, jobs_option, jobs_or_default, output_options, paths_argument
from kdump.render.output import Output
from kdump.run.index import DEFAULT_INTERVAL, Mode, run
from kdump.storage.fs import refuse_remote
from kdump.storage.logdir import INDEX, TIMEINDEX

# -- the commands ---------------------------------------------------------------------------------

def index_options(f: Callable) -> Callable:
    f = force_option(f)
    f = click.option("--no-backup", is_flag=True, help="With --rebuild: do not keep the old files as .bak.")(f)
    f = click.option("--time-offset", type=click.Choice(["last", "record"]),
                     help="With --rebuild: which offset a time index entry holds, the last offset of the batch "
                          "with the max timestamp (recovery, followers) or the record carrying it (a leader's "
                          "append path). Default: the convention of the existing .timeindex, else last.")(f)
    f = click.option("--index-interval-bytes", "--interval-bytes", "interval_bytes", type=click.IntRange(min=0),
                     metavar="N",
                     help=f"index.interval.bytes. --rebuild: the interval to index at [default: {DEFAULT_INTERVAL}]. "
                          "--verify: entries closer than N are faults (default: infer the range that fits).")(f)
    f = click.option("--rebuild", is_flag=True,
                     help="Write fresh .index and .timeindex files from the log, as a broker's recovery does "
                          "(atomically; old files kept as .bak).")(f)
    f = click.option("--sanity", "--index-sanity-check", "sanity", is_flag=True,
                     help="Run Kafka's own OffsetIndex/TimeIndex sanityCheck (its conditions and messages).")(f)
    f = click.option("--strict", is_flag=True,
                     help="Also exit 1 for anomalies: odd states a broker accepts as they are (an entry naming an "
                          "offset compaction removed, a partial last entry).")(f)
    f = click.option("--entries", "list_entries", is_flag=True,
                     help="With --verify: list every entry before the verdict (--verify alone prints the verdict).")(f)
    f = click.option("--verify-index-only", is_flag=True, help="Verify against the log without listing entries.")(f)
    f = click.option("--verify", is_flag=True,
                     help="Check every entry against the log in one pass and print the verdict.")(f)
    return f


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@index_options
@jobs_option
@output_options
def index(paths, verify, verify_index_only, list_entries, strict, sanity, rebuild, interval_bytes, time_offset,
          no_backup, force, jobs, json_flag, fmt, color, quiet):
    """List, verify, sanity-check or rebuild offset indexes (.index).

    PATHS are .index files, their segments (.log), partition directories or log
    directories. A directory also lists its .txnindex files. Nothing is written unless
    --rebuild is given; a missing .index is reported, never created.

    \b
    Exit status: 0 clean or only anomalies and info findings (each finding's class is
    kdump verify's), 1 damage found (anomalies too with --strict), 3 could not complete.
    """
    return _run(INDEX, paths, verify, verify_index_only, list_entries, strict, sanity, rebuild, interval_bytes,
                time_offset, no_backup, force, jobs, Output(json_flag, fmt, color, quiet))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@index_options
@jobs_option
@output_options
def timeindex(paths, verify, verify_index_only, list_entries, strict, sanity, rebuild, interval_bytes, time_offset,
              no_backup, force, jobs, json_flag, fmt, color, quiet):
    """List, verify, sanity-check or rebuild time indexes (.timeindex).

    PATHS are .timeindex files, their segments (.log), partition directories or log
    directories. Nothing is written unless --rebuild is given; a missing .timeindex is
    reported, never created.

    \b
    Exit status: 0 clean or only anomalies and info findings (each finding's class is
    kdump verify's), 1 damage found (anomalies too with --strict), 3 could not complete.
    """
    return _run(TIMEINDEX, paths, verify, verify_index_only, list_entries, strict, sanity, rebuild, interval_bytes,
                time_offset, no_backup, force, jobs, Output(json_flag, fmt, color, quiet))


def _run(kind, paths, verify, verify_only, list_entries, strict, sanity, rebuild, interval_bytes, time_offset,
         no_backup, force, jobs, out: Output) -> int:
    verify_only = verify_only or (verify and not list_entries)     # the verdict; entries when asked
    if rebuild:
        refuse_remote(paths, "--rebuild")
    mode = Mode(verify=verify or verify_only, verify_only=verify_only, sanity=sanity, interval_bytes=interval_bytes,
                strict=strict, quiet=out.quiet)
    return run(kind, paths, mode, out, rebuild=rebuild, time_offset=time_offset, no_backup=no_backup, force=force,
               jobs=jobs_or_default(jobs))
