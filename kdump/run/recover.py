"""The ``kdump recover`` run: each partition planned as a broker's startup recovery would go
(``kdump.repair.recover``), the plans drawn, then salvaged and carried out on request, with
every change on stderr and the exit status.

With --apply or --salvage each partition is locked before it is planned and until its plan
is carried out (``locks``); plans are then made in this process.
"""

from __future__ import annotations

import os

from kdump.errors import ExitStatus, KdumpError
from kdump.render.diagnostics import error_line, report_error, say


def _partitions(targets, logdir) -> set[tuple[str, int]]:
    """The (topic, partition)s of the targets in ``logdir``: the checkpoint entries to keep."""
    from kdump.storage.logdir import parse_partition_dir

    out = set()
    for directory, ld in targets:
        parsed = parse_partition_dir(os.path.basename(os.path.normpath(directory)))
        if ld == logdir and parsed is not None:
            out.add(parsed[:2])
    return out


def run_recover(dirs, out, opts, *, apply_: bool, confirm, salvage_dir: str | None, quarantine_dir: str | None,
                locks, jobs: int = 1) -> int:
    from kdump.render.verify import change_line
    from kdump.repair.recover import LogDirState, check_quarantine_root, partition_dirs, salvage
    from kdump.storage.outpath import check_output

    status = ExitStatus.OK
    targets: list[tuple[str, str | None]] = []
    for d in dirs:
        try:
            targets.extend(partition_dirs(d))
        except KdumpError as e:
            report_error(e, hint=False)
            status = max(status, e.exit_code)
    if quarantine_dir:
        check_quarantine_root(quarantine_dir, {ld for _, ld in targets})
    if salvage_dir:     # never into a log dir or a partition: its own segments from an earlier run only
        check_output(salvage_dir, [*dirs, *(d for d, _ in targets)], option="--salvage", salvage=True)
    states = {logdir: LogDirState.read(logdir, _partitions(targets, logdir))
              for logdir in dict.fromkeys(ld for _, ld in targets)}
    plans, planned, status = _plan_all(targets, states, out, opts, locks, salvage_dir, jobs, status)
    if salvage_dir:
        salvaged = 0
        for plan in plans:
            try:
                for c in salvage(plan, salvage_dir, opts):
                    out.note(change_line(c))
                    salvaged += 1
            except KdumpError as e:
                report_error(e, hint=False)
                status = max(status, e.exit_code)
        if not salvaged and status < ExitStatus.INCOMPLETE:
            out.note("kdump: nothing to salvage: no intact batch lies past the damage (nothing written to "
                     f"{salvage_dir})")
    todo = [p for p in plans if p.actions]
    steps = sum(len(p.actions) for p in todo)
    found = [x for p in todo for x in p.losses]
    if found:       # the same words as verify's summary (kdump.check.loss)
        from kdump.render.verify import loss_text

        out.note("kdump: " + loss_text({"cut_bytes": sum(x.cut_bytes for x in found), "cut_segments": len(found),
                                        "deleted_segments": sum(x.deleted_segments for x in found),
                                        "deleted_bytes": sum(x.deleted_bytes for x in found), "losses": found}))
    unloadable = [p for p in plans if p.load_failure is not None]
    if unloadable:
        n = len(unloadable)
        out.note(f"kdump: the broker will not load {n} partition{'s' if n != 1 else ''} as "
                 f"{'they are' if n != 1 else 'it is'} (after a clean shutdown it recovers no segment): kdump recover "
                 f"--full --apply cuts the damage as a crash recovery would")
    if not apply_:
        if steps:
            out.note(f"kdump: {steps} step{'s' if steps != 1 else ''} planned in {len(todo)} partition"
                     f"{'s' if len(todo) != 1 else ''}; nothing changed (use --apply to carry them out)")
        elif not unloadable:
            out.note(f"kdump: {planned} partition{'s' if planned != 1 else ''}: nothing to do")
        return int(status)
    if not todo:
        out.note("kdump: nothing to apply")
        return int(status)
    return int(max(status, _apply_all(todo, steps, out, opts, confirm, quarantine_dir, jobs)))


def _plan_all(targets, states, out, opts, locks, salvage_dir, jobs, status):
    """Every partition planned and drawn: (the plans to salvage or apply, how many were
    planned, the exit status so far)."""
    from kdump.jobs.fanout import ordered_map
    from kdump.render.progress import Progress
    from kdump.render.verify import change_line, plan_renderer
    from kdump.repair.recover import plan_partition
    from kdump.storage.mapped import file_size

    def plan_one(target):
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
                    report_error(plan, hint=False)
                    status = max(status, plan.exit_code)
                    continue
                if locks is not None and not plan.actions and not (salvage_dir and plan.salvage_sources):
                    locks.drop(plan.directory)
                renderer.plan(plan)
                planned += 1
                if salvage_dir or plan.actions or plan.load_failure is not None:
                    plans.append(plan)
                if plan.incomplete:
                    status = max(status, ExitStatus.INCOMPLETE)
                elif plan.damaged:
                    status = max(status, ExitStatus.DAMAGE)
    finally:
        renderer.finish()
    return plans, planned, status


def _apply_all(todo, steps: int, out, opts, confirm, quarantine_dir: str | None, jobs: int) -> int:
    """Carry the plans out (after ``confirm(question)`` says yes; None: --yes was given); each
    partition by one process."""
    from kdump.jobs.fanout import ordered_map
    from kdump.render.escape import printable
    from kdump.render.verify import change_line
    from kdump.repair.recover import apply_plan, default_quarantine, timestamp

    status = ExitStatus.OK
    stamp = timestamp()
    if confirm is not None:
        where = quarantine_dir or f"<partition>/kdump-quarantine-{stamp}"
        if not confirm(f"Apply {steps} step(s) to {len(todo)} partition(s)? Files a broker would delete are "
                       f"moved to {where}"):
            out.note("kdump: not applied; nothing changed")
            return status

    def apply_one(plan):
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
            say(error)
            status = max(status, code)
    return status


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
