"""Commands that print as they go (``dump``, ``index``) over worker processes, with the
bytes of ``-j 1`` on stdout: ``ordered_output``.

A worker runs a range of units (``kdump.parallel``'s tasks) with what they write to stdout
and stderr captured, in order; when the units before the range are written (a turn counter
the workers share) it writes the range's output to the file descriptors itself, so hundreds
of MB of dump do not go through the parent. The turn passes once per range, and a range
writes 64 KiB at a time. Where stdout is not a file (a test's buffer), the output goes back
to the parent with the results and is written there.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kdump.parallel import fan_out, in_process


def ordered_output(fn: Callable[[Any, Any], Any], units: Sequence[Any], jobs: int, out) -> Iterator[Any]:
    """``fn(unit, out)`` for every unit, for commands that print as they go: in a worker,
    what ``fn`` writes to ``out.stream`` and to stderr is collected, in order, and written
    when its range's turn comes, so stdout gets the same bytes as from ``-j 1``. One unit,
    or ``jobs`` 1, runs here and writes straight through."""
    if in_process(units, jobs):
        for u in units:
            yield fn(u, out)
        return
    jobs = min(jobs, len(units))
    if _fd(out.stream) is None or _fd(sys.stderr) is None:
        for result, chunks, raised in fan_out(functools.partial(_captured, fn, out), units, jobs):
            _replay(chunks, out.stream)
            if raised is not None:
                raise raised
            yield result
        return
    # Real files: each worker writes a range's output itself when the range before it is
    # written (a turn counter), so hundreds of MB of dump do not go through this process.
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    turn = _Turn(ctx.Condition(), ctx.Value("q", 0, lock=False))
    for results in fan_out(functools.partial(_write_in_turn, fn, out, turn), list(enumerate(units)), jobs,
                           ranged=True):
        yield from results


class _Turn:
    def __init__(self, cond, value) -> None:
        self.cond, self.value = cond, value
        self.parent = os.getpid()


def _fd(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _write_in_turn(fn, out, turn: _Turn, items: list) -> tuple[list, BaseException | None]:
    """A range of units in a worker, their output written when the range's turn comes: the
    turn passes once per range, not once per unit (each pass wakes a process, which cost
    more than an index check itself)."""
    _keep_freed_memory()
    first = items[0][0]
    spill = _Spill(turn, first, out.stream)
    results, raised = [], None
    with _capturing(out, spill.chunks, spill) as local:
        for _, unit in items:
            try:
                results.append(fn(unit, local))
            except Exception as e:  # noqa: BLE001 - raised in the parent once the output before it is written
                raised = e
                break
    if not spill.mine:
        spill.take()
    _write_fds(spill.chunks, out.stream, spill.err_fd)   # EPIPE (the reader went away) stops the run
    if raised is None:                  # after a failure nothing more is written: the turn stays here
        with turn.cond:
            turn.value.value = first + len(items)
            turn.cond.notify_all()
    return [results], raised


_kept_in: int | None = None     # the process that has asked the allocator to keep memory


def _keep_freed_memory() -> None:
    """A worker holds each range's output (megabytes of dump) until its turn, then frees it.
    glibc's malloc hands freed memory at the top of the heap back to the kernel and maps
    big blocks afresh each time, so the next range faulted it all back in a page at a time
    (320,000 page faults, a third of a dump's time at -j 2). Ask it, once per worker, to
    keep what it has; a worker holds at most SPILL_AT plus a range anyway. Other C
    libraries lack ``mallopt`` and are left as they are."""
    global _kept_in
    if _kept_in == os.getpid():
        return
    _kept_in = os.getpid()
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):
        return
    mallopt(_M_TRIM_THRESHOLD, 64 << 20)
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3    # glibc's mallopt parameters (malloc.h)


class _Spill:
    """A range's output in a worker: held while an earlier range is being written, written
    once its turn has come, FLUSH_AT characters at a time. A range that has written SPILL_AT
    characters waits for its turn there, so no worker holds more than that (a dump of a 1 GiB
    segment is several GB of text)."""

    SPILL_AT = 16 << 20
    FLUSH_AT = 64 << 10     # a system call per 64 KiB, not per line

    def __init__(self, turn: _Turn, i: int, stream) -> None:
        self.turn, self.i, self.stream = turn, i, stream
        self.err_fd = _fd(sys.stderr)       # taken before the unit's stderr is captured
        self.chunks: list = []
        self.size = 0
        self.check_at = min(self.FLUSH_AT, self.SPILL_AT)
        self.mine = False

    def wrote(self, n: int) -> None:
        self.size += n
        if self.size < self.check_at:
            return
        if not self.mine and (self.size >= self.SPILL_AT or self.turn.value.value == self.i):
            self.take()
        if self.mine:
            _write_fds(self.chunks, self.stream, self.err_fd)
            self.chunks.clear()
            self.size = 0
            self.check_at = self.FLUSH_AT
        else:
            self.check_at = min(self.size + self.FLUSH_AT, self.SPILL_AT)

    def take(self) -> None:
        """Wait until the units before this one are written."""
        turn = self.turn
        with turn.cond:
            while turn.value.value != self.i:
                turn.cond.wait(0.5)
                if os.getppid() != turn.parent:     # the parent was killed: nobody will take a turn
                    turn.cond.release()             # (the other workers must be able to see it too)
                    os._exit(1)
        self.mine = True


def _write_fds(chunks: list, stream, err_fd: int) -> None:
    """Write captured ``(fd, parts)`` chunks in pieces of about FLUSH_AT characters. A piece
    of megabytes would be a fresh mapping of memory each time, twice (joined, then encoded):
    a dump at -j 2 spent more in page faults (320,000 of them) than in writing."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "strict"
    for fd_kind, parts in chunks:
        fd = _fd(stream) if fd_kind == 1 else err_fd
        how = errors if fd_kind == 1 else "backslashreplace"
        start = size = 0
        for i, part in enumerate(parts):
            size += len(part)
            if size >= _Spill.FLUSH_AT:
                _write_all(fd, "".join(parts[start:i + 1]).encode(encoding, how))
                start, size = i + 1, 0
        if start < len(parts):
            _write_all(fd, "".join(parts[start:]).encode(encoding, how))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Tap:
    """A text stream that keeps what is written, tagged 1 (stdout) or 2 (stderr), in order.
    It answers ``isatty`` as the stream it stands for, so tables and colours come out as
    they would there."""

    encoding = "utf-8"
    errors = "backslashreplace"

    def __init__(self, chunks: list, fd: int, tty: bool, spill: _Spill | None = None) -> None:
        self.chunks, self.fd, self.tty, self.spill = chunks, fd, tty, spill

    def write(self, s: str) -> int:
        if not isinstance(s, str):      # as a text stream does (Click probes with b"")
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.chunks and self.chunks[-1][0] == self.fd:
            self.chunks[-1][1].append(s)
        else:
            self.chunks.append((self.fd, [s]))
        if self.spill is not None:
            self.spill.wrote(len(s))
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.tty

    def writable(self) -> bool:
        return True


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _captured(fn, out, unit):
    """``fn(unit, out)`` with what it writes kept: (result, [(fd, text)], exception)."""
    chunks: list = []
    result = raised = None
    with _capturing(out, chunks) as local:
        try:
            result = fn(unit, local)
        except Exception as e:  # noqa: BLE001 - raised in the parent once the output before it is written
            raised = e
    return result, _joined(chunks), raised


@contextlib.contextmanager
def _capturing(out, chunks: list, spill: _Spill | None = None):
    """A copy of ``out`` whose stream, and sys.stdout and sys.stderr meanwhile, keep what is
    written in ``chunks``."""
    local = copy.copy(out)
    local.stream = _Tap(chunks, 1, _isatty(out.stream), spill)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = local.stream, _Tap(chunks, 2, _isatty(sys.stderr), spill)
    try:
        yield local
    finally:
        sys.stdout, sys.stderr = saved


def _joined(chunks: list) -> list:
    return [(fd, "".join(parts)) for fd, parts in chunks]


def _replay(chunks: list, stream) -> None:
    for fd, text in chunks:
        if fd == 1:
            stream.write(text)
        else:
            stream.flush()
            sys.stderr.write(text)
            sys.stderr.flush()
