"""``kdump recover``: what a broker's startup recovery would do, as a plan; ``--apply`` does it."""

from __future__ import annotations

import sys

import click

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.cli.options import force_option, jobs_option, jobs_or_default, local_urls, output_options
from kdump.errors import UsageError
from kdump.render.output import Output, isatty
from kdump.storage.fs import refuse_remote


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=str), callback=local_urls)
@click.option("--apply", "apply_", is_flag=True, help="Carry the plan out (asks first unless --yes).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before --apply.")
@click.option("--salvage", "salvage_dir", metavar="OUT", type=click.Path(path_type=str),
              help="Copy every intact batch found past the damage (and in segments the broker would delete) into "
                   "new segments with indexes under OUT/<partition>/ (never a log dir, a folder inside one, "
                   "or a partition).")
@click.option("--quarantine", "quarantine_dir", metavar="DIR", type=click.Path(path_type=str),
              help="Where files the broker would delete are moved [default: <partition>/kdump-quarantine-<time>, "
                   "which the broker ignores].")
@click.option("--full", is_flag=True,
              help="Recover every segment, ignoring the recovery point and a clean-shutdown marker.")
@click.option("--max-message-size", type=click.IntRange(min=61), default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Largest plausible batch, in bytes (used to classify damage and to resync past it).")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=DEFAULT_INDEX_INTERVAL_BYTES,
              show_default=True, help="The topic's index.interval.bytes (the broker's index rebuild rule).")
@force_option
@jobs_option
@output_options
def recover(dirs, apply_, yes, salvage_dir, quarantine_dir, full, max_message_size, index_interval_bytes, force, jobs,
            json_flag, fmt, color, quiet):
    """Plan (and with --apply carry out) a broker's startup recovery, offline.

    DIRS are log directories or partition directories. For each partition the plan
    lists what LogLoader would do: .cleaned/.swap/.deleted leftovers, orphan indexes,
    the segment to cut and where (the cut bytes are saved beside it as
    <segment>.corrupt-<position>), the later segments a broker would delete, indexes to
    rebuild and the new recovery point. A line on stderr sums up what the recovery
    removes: the bytes cut, the later segments deleted whole, the offsets lost (as
    kdump verify says it). Where the broker deletes, kdump moves the file to a quarantine
    directory: nothing is deleted. Every step is atomic and a rerun after an interruption
    finishes the job. --salvage says so when nothing intact lies past the damage.

    \b
    Exit status: 0 nothing damaged, 1 damage found (also when --apply repaired it),
    3 could not complete.
    """
    from kdump.repair.recover import RecoverOptions
    from kdump.run.recover import run_recover
    from kdump.storage.writelock import Locks

    if apply_ and not yes and not isatty(sys.stdin):
        # Nobody can answer the prompt: say how to consent instead of looking interrupted.
        raise click.UsageError("--apply asks before changing anything and there is no terminal to answer: "
                               "add --yes to apply without asking")
    if apply_ or salvage_dir:
        refuse_remote(dirs + ((salvage_dir,) if salvage_dir else ()), "--apply" if apply_ else "--salvage")
    out = Output(json_flag, fmt, color, quiet)
    if force and not (apply_ or salvage_dir):
        raise UsageError("--force applies only with --apply or --salvage")
    # Writing: each partition is locked before it is planned, until its plan is carried out.
    opts = RecoverOptions(full=full, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes)
    with Locks(force) as locks:
        return run_recover(dirs, out, opts, apply_=apply_, confirm=None if yes else _ask, salvage_dir=salvage_dir,
                           quarantine_dir=quarantine_dir, locks=locks if (apply_ or salvage_dir) else None,
                           jobs=jobs_or_default(jobs))


def _ask(question: str) -> bool:
    return click.confirm(question, err=True, default=False)
