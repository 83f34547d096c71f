"""Forked worker processes for ``kdump.jobs.fanout``: a pipe each way, pickled messages.

A worker is ``os.fork`` with two pipes, without ``multiprocessing``: importing it (and the
hashing, socket and tempfile modules it pulls in) cost a ``-j`` run 10-15 ms before any
partition was read, a fixed part that no number of cores shortens. A message is a pickle
after its length (8 bytes, little-endian). A worker that ends (or is killed) closes its end
of the result pipe, which the parent reads as the end of the file: no sentinel is needed,
because each pipe end lives in one process only (a worker closes the parent's ends of the
pipes of the workers forked before it).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections import deque
from collections.abc import Callable

STOP_WAIT = 5.0     # seconds a stopped worker has to end before it is killed
_LENGTH = 8


class Worker:
    """One forked process running ``main(recv, send)`` until ``recv`` raises EOFError."""

    def __init__(self, main: Callable, siblings: list[Worker]) -> None:
        task_r, self.task_w = os.pipe()
        self.result_r, result_w = os.pipe()
        self.tasks: deque[int] = deque()
        self.exitcode: int | None = None
        self.pid = os.fork()
        if self.pid == 0:       # the worker: whatever happens, it never returns into the parent's code
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)    # the parent stops the workers on Ctrl-C
                os.close(self.task_w)
                os.close(self.result_r)
                for w in siblings:
                    os.close(w.task_w)
                    os.close(w.result_r)
                main(lambda: receive(task_r), lambda obj: send(result_w, obj))
                code = 0
            finally:
                os._exit(code)
        os.close(task_r)
        os.close(result_w)

    def send(self, obj) -> None:
        send(self.task_w, obj)

    def receive(self):
        return receive(self.result_r)

    def fileno(self) -> int:
        return self.result_r

    def reap(self, block: bool = False) -> bool:
        """Has the worker ended (its exit status is then in ``exitcode``)?"""
        if self.exitcode is None:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            if pid == 0:
                return False
            self.exitcode = os.waitstatus_to_exitcode(status)
        return True

    def stop(self) -> None:
        """Ask it to end: mid-task, by SIGTERM; idle, by closing its task pipe."""
        if self.tasks:
            _kill(self.pid, signal.SIGTERM)
        if self.task_w >= 0:
            os.close(self.task_w)
            self.task_w = -1


def stop_all(workers: list[Worker]) -> None:
    """Stop every worker and reap it; one that does not end within STOP_WAIT is killed."""
    for w in workers:
        w.stop()
    deadline = time.monotonic() + STOP_WAIT
    for w in workers:
        if not _ended(w, deadline):
            _kill(w.pid, signal.SIGKILL)
            w.reap(block=True)
        os.close(w.result_r)


def _ended(w: Worker, deadline: float) -> bool:
    """Has ``w`` ended (and been reaped) by ``deadline``? Waits on a pidfd, which wakes the
    moment the process ends, where the kernel has them; else looks every 2 ms."""
    if w.reap():        # (once reaped, its pid may be another process's: no pidfd for it)
        return True
    try:
        fd = os.pidfd_open(w.pid)
    except (AttributeError, OSError):     # no pidfds here
        fd = -1
    try:
        while not w.reap():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if fd < 0:
                time.sleep(0.002)
            else:
                poll = select.poll()
                poll.register(fd, select.POLLIN)
                poll.poll(left * 1000)
        return True
    finally:
        if fd >= 0:
            os.close(fd)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def send(fd: int, obj) -> None:
    """Write ``obj`` as one message (pickled first: an object that cannot be pickled raises
    before anything is written)."""
    data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(_LENGTH, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def receive(fd: int):
    """The next message; EOFError when the writer has ended."""
    return pickle.loads(_read(fd, int.from_bytes(_read(fd, _LENGTH), "little")))


def _read(fd: int, n: int) -> bytes:
    parts = []
    while n:
        part = os.read(fd, min(n, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        n -= len(part)
    return b"".join(parts)
