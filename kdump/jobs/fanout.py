"""The partitions of a log dir spread over worker processes, results in ``-j 1``'s order.

A command gives ``ordered_map`` a function and its units of work (a partition each,
usually) and gets the function's results back one by one, in the units' order, as if it
had run them itself: what it prints is the same bytes as with ``-j 1``. One unit, or
``jobs`` 1, runs in this process with no worker started.

Workers are forked (``kdump.jobs.processes``, without ``multiprocessing``, which only
``kdump.jobs.ordered_output``'s turn counter imports), so they start with the function, the
units and everything the command imported already in memory; a task is only a range of
unit numbers, sent down a pipe, and a reply the results of that range (the tasks shrink
toward the end, so the processes finish together). With ``-j N`` ``ordered_map`` forks N-1 of
them: this process runs ranges too whenever the next result is not in yet, so N processes
share N cores and none sits waiting (a third process beside two workers on two cores cost
the workers' time). Each worker has at most ``QUEUED_PER_WORKER`` ranges queued, and no
more than ``WINDOW_PER_JOB`` ranges per worker are out beyond the oldest one not yet handed
back, so the results held while waiting for a slow partition stay bounded.
Workers ignore SIGINT: on Ctrl-C (or any exception, or the caller stopping early) the
parent terminates and reaps every one of them before the interrupt goes on up.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kdump.errors import KdumpError

CHUNK_MAX = 16          # units per task: fewer round trips, still small enough to balance
QUEUED_PER_WORKER = 3   # tasks sent ahead: a worker has work while the parent runs a range of its own
WINDOW_PER_JOB = 6      # tasks out per worker past the oldest unfinished one

# What the workers run; set in the parent just before forking, inherited by the children.
_work: Callable[[Any], Any] | None = None
_units: Sequence[Any] = ()
_ranged = False


def default_jobs() -> int:
    """The CPUs this process may run on (the -j default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def ordered_map(fn: Callable[[Any], Any], units: Iterable[Any], jobs: int, ranged: bool = False) -> Iterator[Any]:
    """``fn(u)`` for every unit, in order; over ``jobs`` worker processes when there are
    several units. An exception ``fn`` raises comes out where that unit's result would.

    ``ranged``: ``fn`` takes a run of consecutive units instead (a task's range) and returns
    ``(results, error)``: the results of the units before the one that failed, in order, and
    that failure or None. It may give fewer results than units (a command merging what
    several units print); its per-unit costs are then paid once per range."""
    units = units if isinstance(units, Sequence) else list(units)
    if in_process(units, jobs):
        for u in units:
            if not ranged:
                yield fn(u)
                continue
            results, raised = fn([u])
            yield from results
            if raised is not None:
                raise raised
        return
    yield from fan_out(fn, units, min(jobs, len(units)), share=True, ranged=ranged)


def in_process(units: Sequence[Any], jobs: int) -> bool:
    """Will ``ordered_map`` run these units here, without workers?"""
    return jobs <= 1 or len(units) <= 1


class WorkerDied(KdumpError):
    """A worker ended without answering (killed, or stopped by a fault it reported itself)."""


def _worker_main(recv, send) -> None:
    while True:
        try:
            task = recv()
        except EOFError:
            return
        results, raised = _run_task(task, BaseException)
        try:
            send((results, raised))
        except Exception as e:  # noqa: BLE001 - an unpicklable result or exception
            send(([], RuntimeError(f"{type(e).__name__}: {e}")))


def _run_task(task: tuple[int, int], caught: type[BaseException]) -> tuple[list, BaseException | None]:
    """The results of a range of units, and the exception that stopped it (handed on, to be
    raised in order)."""
    work = _work
    assert work is not None     # fan_out set it before any task ran (forked workers inherit it)
    if _ranged:
        try:
            return work(_units[task[0]:task[1]])
        except caught as e:
            return [], e
    results: list = []
    for u in _units[task[0]:task[1]]:
        try:
            results.append(work(u))
        except caught as e:
            return results, e
    return results, None


def fan_out(fn: Callable[[Any], Any], units: Sequence[Any], jobs: int, share: bool = False,
            ranged: bool = False) -> Iterator[Any]:
    """The results of ``fn`` over ``units`` from ``jobs`` processes, in order (``ordered_map``'s
    and ``ordered_output``'s engine). ``share``: this process is one of the ``jobs``, running
    ranges itself whenever the next result to hand back is not in yet (so on N cores, N
    processes work; none just waits). ``ranged``: as for ``ordered_map``."""
    global _work, _units, _ranged
    from kdump.jobs.processes import Worker, stop_all

    tasks = _ranges(len(units), jobs)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _work, _units, _ranged = fn, units, ranged
    workers: list[Worker] = []
    try:
        for _ in range(jobs - 1 if share else jobs):
            workers.append(Worker(_worker_main, workers))
        live = list(workers)
        done: dict[int, tuple[list, BaseException | None]] = {}
        sent = returned = 0
        window = jobs * WINDOW_PER_JOB
        while returned < len(tasks):
            while live and sent < len(tasks) and sent - returned < window:
                w = min(live, key=lambda w: len(w.tasks))
                if len(w.tasks) >= QUEUED_PER_WORKER:
                    break
                try:
                    w.send(tasks[sent])
                    w.tasks.append(sent)
                except BrokenPipeError:         # it has ended: what it sent before counts, its error
                    live.remove(w)              # comes where its first unanswered range would
                    _settle_dead(w, done)
                    done[sent] = ([], _died(w))
                sent += 1
            if not live and not share and sent < len(tasks) and sent not in done:
                done[sent] = ([], _died(workers[-1]))     # every worker has ended: nothing runs the rest
                sent += 1
            if returned in done:
                results, raised = done.pop(returned)
                returned += 1
                yield from results
                if raised is not None:
                    raise raised
                continue
            busy = [w for w in live if w.tasks]
            wait = None
            if share and sent < len(tasks) and sent - returned < window:
                done[sent] = _run_task(tasks[sent], Exception)
                sent += 1
                wait = 0
            for w in _readable(busy, wait):
                try:                            # every reply it has sent: it gets as many ranges back
                    while True:
                        done[w.tasks[0]] = w.receive()
                        w.tasks.popleft()
                        if not w.tasks or not _readable([w], 0):
                            break
                except EOFError:                # it has ended: its error comes in order
                    live.remove(w)
                    _settle_dead(w, done)
    finally:
        _work, _units, _ranged = None, (), False
        stop_all(workers)


def _ranges(n: int, jobs: int) -> list[tuple[int, int]]:
    """The tasks: ranges of up to CHUNK_MAX units, each about an eighth of a process's share of
    what is left, so they shrink toward the end and every process finishes within a unit or
    two of the others."""
    tasks, start = [], 0
    while start < n:
        size = max(1, min(CHUNK_MAX, (n - start) // (jobs * 8)))
        tasks.append((start, start + size))
        start += size
    return tasks


def _settle_dead(w, done: dict) -> None:
    """Read the replies a worker that has ended sent before it did; its ranges not answered
    get the error."""
    while w.tasks:
        try:
            done[w.tasks[0]] = w.receive()
        except EOFError:
            break
        w.tasks.popleft()
    w.reap(block=True)
    for t in w.tasks:
        done[t] = ([], _died(w))
    w.tasks.clear()


def _died(w) -> WorkerDied:
    return WorkerDied(f"a worker process ended without finishing its partitions (exit status {w.exitcode}); "
                      "nothing after them was checked")


def _readable(workers: list, timeout: float | None) -> list:
    """The workers with a reply (or an end) to read, waiting up to ``timeout`` seconds."""
    if not workers:
        return []
    poll = select.poll()
    for w in workers:
        poll.register(w.fileno(), select.POLLIN)
    fds = {fd for fd, _ in poll.poll(None if timeout is None else timeout * 1000)}
    return [w for w in workers if w.fileno() in fds]
