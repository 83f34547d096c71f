"""``kdump recover``: what a broker's startup recovery would do, as a plan; ``--apply`` does it."""

from __future__ import annotations

import os
import sys

import click

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.errors import ExitStatus, KdumpError, UsageError
from kdump.cli.options import Output, _isatty, force_option, jobs_option, jobs_or_default, output_options


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--apply", "apply_", is_flag=True, help="Carry the plan out (asks first unless --yes).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before --apply.")
@click.option("--salvage", "salvage_dir", metavar="OUT", type=click.Path(path_type=str),
              help="Copy every intact batch found past the damage (and in segments the broker would delete) into "
                   "new segments with indexes under OUT/<partition>/.")
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
    rebuild and the new recovery point. Where the broker deletes, kdump moves the file to
    a quarantine directory: nothing is deleted. Every step is atomic and a rerun after
    an interruption finishes the job.

    \b
    Exit status: 0 nothing damaged, 1 damage found (also when --apply repaired it),
    3 could not complete.
    """
    from kdump.storage.writelock import Locks

    if apply_ and not yes and not _isatty(sys.stdin):
        # Nobody can answer the prompt: say how to consent instead of looking interrupted.
        raise click.UsageError("--apply asks before changing anything and there is no terminal to answer: "
                               "add --yes to apply without asking")
    out = Output(json_flag, fmt, color, quiet)
    if force and not (apply_ or salvage_dir):
        raise UsageError("--force applies only with --apply or --salvage")
    # Writing: each partition is locked before it is planned, until its plan is carried out.
    with Locks(force) as locks:
        return _recover(dirs, apply_, yes, salvage_dir, quarantine_dir, full, max_message_size, index_interval_bytes,
                        out, locks if (apply_ or salvage_dir) else None, jobs_or_default(jobs))


def _partitions(targets, logdir) -> set[tuple[str, int]]:
    """The (topic, partition)s of the targets in ``logdir``: the checkpoint entries to keep."""
    from kdump.storage.logdir import parse_partition_dir

    out = set()
    for directory, ld in targets:
        parsed = parse_partition_dir(os.path.basename(os.path.normpath(directory)))
        if ld == logdir and parsed is not None:
            out.add(parsed[:2])
    return out


def _recover(dirs, apply_, yes, salvage_dir, quarantine_dir, full, max_message_size, index_interval_bytes, out,
             locks, jobs: int = 1) -> int:
    from kdump.repair.recover import (
        LogDirState,
        RecoverOptions,
        apply_plan,
        check_quarantine_root,
        default_quarantine,
        partition_dirs,
        plan_partition,
        salvage,
        timestamp,
    )
    from kdump.render.escape import printable
    from kdump.render.verify import change_line, plan_renderer
    from kdump.storage.segment import file_size
    from kdump.cli import error_line
    from kdump.cli.progress import Progress

    opts = RecoverOptions(full=full, max_message_size=max_message_size, index_interval_bytes=index_interval_bytes)
    status = ExitStatus.OK
    targets: list[tuple[str, str | None]] = []
    for d in dirs:
        try:
            targets.extend(partition_dirs(d))
        except KdumpError as e:
            click.echo(error_line(e), err=True)
            status = max(status, e.exit_code)
    for extra in (quarantine_dir, salvage_dir):
        if extra:
            check_quarantine_root(extra, {ld for _, ld in targets})
    from kdump.parallel import ordered_map

    states = {logdir: LogDirState.read(logdir, _partitions(targets, logdir))
              for logdir in dict.fromkeys(ld for _, ld in targets)}

    def plan_one(target):
        # With --apply/--salvage the partition is locked (here: plans are then made in this
        # process) before it is planned, until its plan is carried out.
        directory, logdir = target
        cleaned = []
        try:
            if locks is not None:
                cleaned = locks.take(directory)
            return cleaned, plan_partition(directory, states[logdir], opts)
        except KdumpError as e:
            return cleaned, e.located(directory)

    renderer = plan_renderer(out)
    plans = []          # those with something to salvage or apply; the others are only printed
    planned = 0
    try:
        with Progress.for_output(out, lambda: sum(file_size(p) for p in _segments(targets)), "recover"):
            for cleaned, plan in ordered_map(plan_one, targets, 1 if locks is not None else jobs):
                for c in cleaned:
                    out.note(change_line(c))
                if isinstance(plan, KdumpError):
                    click.echo(error_line(plan), err=True)
                    status = max(status, plan.exit_code)
                    continue
                if locks is not None and not plan.actions and not (salvage_dir and plan.salvage_sources):
                    locks.drop(plan.directory)
                renderer.plan(plan)
                planned += 1
                if salvage_dir or plan.actions:
                    plans.append(plan)
                if plan.incomplete:
                    status = max(status, ExitStatus.INCOMPLETE)
                elif plan.damaged:
                    status = max(status, ExitStatus.DAMAGE)
    finally:
        renderer.finish()
    if salvage_dir:
        for plan in plans:
            try:
                for c in salvage(plan, salvage_dir, opts):
                    out.note(change_line(c))
            except KdumpError as e:
                click.echo(error_line(e), err=True)
                status = max(status, e.exit_code)
    todo = [p for p in plans if p.actions]
    steps = sum(len(p.actions) for p in todo)
    if not apply_:
        if steps:
            out.note(f"kdump: {steps} step{'s' if steps != 1 else ''} planned in {len(todo)} partition"
                     f"{'s' if len(todo) != 1 else ''}; nothing changed (use --apply to carry them out)")
        else:
            out.note(f"kdump: {planned} partition{'s' if planned != 1 else ''}: nothing to do")
        return int(status)
    if not todo:
        out.note("kdump: nothing to apply")
        return int(status)
    stamp = timestamp()
    if not yes:
        where = quarantine_dir or f"<partition>/kdump-quarantine-{stamp}"
        if not click.confirm(f"Apply {steps} step(s) to {len(todo)} partition(s)? Files a broker would delete are "
                             f"moved to {where}", err=True, default=False):
            out.note("kdump: not applied; nothing changed")
            return int(status)
    def apply_one(plan):
        # Each partition is carried out by one process: the worker given its plan.
        q = (os.path.join(quarantine_dir, os.path.basename(os.path.normpath(plan.directory))) if quarantine_dir
             else default_quarantine(plan.directory, stamp))
        try:
            return apply_plan(plan, q, opts), None, ExitStatus.OK
        except KdumpError as e:
            return [], error_line(e.located(plan.directory)), e.exit_code
        except OSError as e:
            return [], printable(f"kdump: error: {plan.directory}: {e.strerror or e}"), ExitStatus.INCOMPLETE

    if len({os.path.realpath(p.directory) for p in todo}) < len(todo):
        jobs = 1            # one partition named twice: carry its plans out one after the other
    # The parent holds the partitions' locks; a forked worker shares them while it writes.
    for changes, error, code in ordered_map(apply_one, todo, jobs):
        for c in changes:
            out.note(change_line(c))
        if error is not None:
            click.echo(error, err=True)
            status = max(status, code)
    return int(status)


def _segments(targets: list[tuple[str, str | None]]) -> list[str]:
    """The segments a plan reads, for the progress bar's total."""
    from kdump.storage.logdir import LOG, partition_files

    out = []
    for directory, _ in targets:
        try:
            out += [f.path for f in partition_files(directory) if f.kind == LOG]
        except (OSError, KdumpError):
            pass
    return out
