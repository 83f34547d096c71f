"""Commands that print as they go (``dump``, ``index``) over worker processes, with the
bytes of ``-j 1`` on stdout: ``ordered_output``.

A worker runs a range of units (``kdump.jobs.fanout``'s tasks) with what they write to stdout
and stderr captured, in order; when the units before the range are written (a turn counter
the workers share) it writes the range's output to the file descriptors itself, so hundreds
of MB of dump do not go through the parent. The turn passes once per range, and a range
writes 64 KiB at a time. Where stdout is not a file (a test's buffer), the output goes back
to the parent with the results and is written there.

A unit's result may cut the units after it, up to a later one (``cut``): ``dump`` splits one
segment into ranges, and a range whose walk ends early (damage) ends the segment there, as
``-j 1`` would. A cut unit writes nothing (what it wrote before the cut was known is dropped
when its turn comes) and its result is None.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kdump.jobs.fanout import fan_out, in_process


def ordered_output(fn: Callable[[Any, Any], Any], units: Sequence[Any], jobs: int, out,
                   cut: Callable[[Any], int | None] | None = None) -> Iterator[Any]:
    """``fn(unit, out)`` for every unit, for commands that print as they go: in a worker,
    what ``fn`` writes to ``out.stream`` and to stderr is collected, in order, and written
    when its range's turn comes, so stdout gets the same bytes as from ``-j 1``. One unit,
    or ``jobs`` 1, runs here and writes straight through. ``cut(result)``: the index of the
    last unit that result cuts (None: none); a cut unit gives None."""
    through = -1            # the units up to here are cut
    if in_process(units, jobs):
        for i, u in enumerate(units):
            if i <= through:
                yield None
                continue
            result = fn(u, out)
            through = _cut_through(cut, result, through)
            yield result
        return
    jobs = min(jobs, len(units))
    if _fd(out.stream) is None or _fd(sys.stderr) is None:
        for i, (result, chunks, raised) in enumerate(fan_out(functools.partial(_captured, fn, out), units, jobs)):
            if i <= through:
                yield None
                continue
            _replay(chunks, out.stream)
            if raised is not None:
                raise raised
            through = _cut_through(cut, result, through)
            yield result
        return
    # Real files: each worker writes a range's output itself when the range before it is
    # written (a turn counter), so hundreds of MB of dump do not go through this process.
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    turn = _Turn(ctx.Condition(), ctx.Value("q", 0, lock=False),
                 ctx.Array("b", len(units), lock=False) if cut is not None else None, cut)
    i = 0
    for results in fan_out(functools.partial(_write_in_turn, fn, out, turn), list(enumerate(units)), jobs,
                           ranged=True):
        for result in results:
            yield None if i <= through else result
            if i > through:
                through = _cut_through(cut, result, through)
            i += 1


def _cut_through(cut, result, through: int) -> int:
    c = None if cut is None or result is None else cut(result)
    return through if c is None else max(through, c)


class _Turn:
    def __init__(self, cond, value, cuts=None, cut=None) -> None:
        self.cond, self.value = cond, value
        self.cuts, self.cut = cuts, cut     # shared: a byte per unit, 1 once it is cut
        self.parent = os.getpid()

    def is_cut(self, i: int) -> bool:
        return self.cuts is not None and self.cuts[i] == 1

    def cut_after(self, i: int, result) -> None:
        """Mark the units ``result`` cuts (after unit ``i``): before this range passes the turn on."""
        if self.cuts is not None:
            for j in range(i + 1, _cut_through(self.cut, result, i) + 1):
                self.cuts[j] = 1


def _fd(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _write_in_turn(fn, out, turn: _Turn, items: list) -> tuple[list, BaseException | None]:
    """A range of units in a worker, their output written when the range's turn comes: the
    turn passes once per range, not once per unit (each pass wakes a process, which cost
    more than an index check itself)."""
    keep_freed_memory()
    first = items[0][0]
    spill = _Spill(turn, first, out.stream)
    results, raised = [], None
    with _capturing(out, spill.chunks, spill) as local:
        for i, unit in items:
            if turn.is_cut(i):
                results.append(None)
                continue
            spill.begin_unit(i)
            try:
                result = fn(unit, local)
            except Exception as e:  # noqa: BLE001 - raised in the parent once the output before it is written
                raised = e
                break
            results.append(result)
            turn.cut_after(i, result)
        spill.begin_unit(None)
    if not spill.mine:
        spill.take()
    spill.drop_cut()
    _write_fds(spill.chunks, out.stream, spill.err_fd, spill.out_fd)   # EPIPE (the reader went away) stops the run
    if raised is None:                  # after a failure nothing more is written: the turn stays here
        with turn.cond:
            turn.value.value = first + len(items)
            turn.cond.notify_all()
    return [results], raised


_kept_in: int | None = None     # the process that has asked the allocator to keep memory


def keep_freed_memory() -> None:
    """A worker holds each range's output (megabytes of dump) until its turn, then frees it.
    glibc's malloc hands freed memory at the top of the heap back to the kernel and maps
    big blocks afresh each time, so the next range faulted it all back in a page at a time
    (320,000 page faults, a third of a dump's time at -j 2). Ask it, once per worker, to
    keep what it has; a worker holds at most SPILL_AT plus a range anyway. Other C
    libraries lack ``mallopt`` and are left as they are. Worth its ctypes call: ``dump
    --records --json -j 2`` of a 268 MB segment takes 2.80 s of CPU without it, 2.18 s with
    (1.28x; wall 1.7x; peak 59 -> 71 MB; interleaved A/B, 2026-11-27, machine at load 7-10)."""
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
        # and stdout's: on a terminal ``stream`` looks up sys.stdout, the capture meanwhile
        out_fd = _fd(stream)
        self.out_fd = 1 if out_fd is None else out_fd      # (ordered_output came here as it has one)
        self.chunks: list = []
        self.size = 0
        self.check_at = min(self.FLUSH_AT, self.SPILL_AT)
        self.mine = False
        self.marks: list[tuple[int, int]] = []     # (unit, the chunk its output starts at)
        self.dropping = False                      # the unit running is cut: its output is dropped

    def begin_unit(self, i: int | None) -> None:
        """The output from here on is unit ``i``'s (None: no unit's)."""
        self.dropping = False
        if i is not None:
            self.chunks.append((0, []))            # a mark: the unit's first write starts a chunk
            self.marks.append((i, len(self.chunks)))

    def drop_cut(self) -> None:
        """Drop the output of the units found cut once this range's turn has come."""
        turn = self.turn
        if turn.cuts is None or not self.marks:
            return
        bounds = [start for _, start in self.marks[1:]] + [len(self.chunks)]
        kept = self.chunks[:self.marks[0][1]]
        for (i, start), end in zip(self.marks, bounds):
            if turn.is_cut(i):
                if end == len(self.chunks):
                    self.dropping = True           # the unit still running: what it writes next too
            else:
                kept += self.chunks[start:end]
        self.chunks[:] = kept
        # From now on this range has the turn: a unit found cut later is cut by one of its own,
        # before it starts (``_write_in_turn`` skips it), so no mark is needed any more.
        self.marks = []

    def wrote(self, n: int) -> None:
        self.size += n
        if self.size < self.check_at:
            return
        if not self.mine and (self.size >= self.SPILL_AT or self.turn.value.value == self.i):
            self.take()
        if self.mine:
            self.drop_cut()
            _write_fds(self.chunks, self.stream, self.err_fd, self.out_fd)
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


def _write_fds(chunks: list, stream, err_fd: int, out_fd: int) -> None:
    """Write captured ``(fd, parts)`` chunks in pieces of about FLUSH_AT characters. A piece
    of megabytes would be a fresh mapping of memory each time, twice (joined, then encoded):
    a dump at -j 2 spent more in page faults (320,000 of them) than in writing."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "strict"
    for fd_kind, parts in chunks:
        if not fd_kind:
            continue                # a unit's mark
        if fd_kind == BYTES:
            _write_bytes(out_fd, parts, encoding, errors)
            continue
        fd = out_fd if fd_kind == 1 else err_fd
        how = errors if fd_kind == 1 else "backslashreplace"
        start = size = 0
        for i, part in enumerate(parts):
            size += len(part)
            if size >= _Spill.FLUSH_AT:
                _write_all(fd, "".join(parts[start:i + 1]).encode(encoding, how))
                start, size = i + 1, 0
        if start < len(parts):
            _write_all(fd, "".join(parts[start:]).encode(encoding, how))


# A chunk of stdout given as UTF-8 bytes (render.line_buffer.ByteLines: the C renderers'
# output), kept as bytes, not decoded to be encoded again.
BYTES = 3


def _write_bytes(fd: int, parts: list, encoding: str, errors: str) -> None:
    """Write UTF-8 ``parts`` about FLUSH_AT bytes at a time, as a text stream of ``encoding``
    would have (a line's surrogate, written with surrogatepass, goes through its codec)."""
    utf8 = encoding.lower().replace("-", "").replace("_", "") == "utf8"
    start = size = 0
    for i in range(len(parts)):
        size += len(parts[i])
        if size >= _Spill.FLUSH_AT or i == len(parts) - 1:
            data = b"".join(parts[start:i + 1])
            if not utf8 or b"\xed" in data:
                data = data.decode("utf-8", "surrogatepass").encode(encoding, errors)
            _write_all(fd, data)
            start, size = i + 1, 0


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
        if self.spill is not None and self.spill.dropping:
            return len(s)
        if self.chunks and self.chunks[-1][0] == self.fd:
            self.chunks[-1][1].append(s)
        else:
            self.chunks.append((self.fd, [s]))
        if self.spill is not None:
            self.spill.wrote(len(s))
        return len(s)

    def write_bytes(self, b: bytes | bytearray) -> None:
        """UTF-8 lines as bytes (stdout only): kept so, written as they are in turn."""
        if self.spill is not None and self.spill.dropping:
            return
        if self.chunks and self.chunks[-1][0] == BYTES:
            self.chunks[-1][1].append(b)
        else:
            self.chunks.append((BYTES, [b]))
        if self.spill is not None:
            self.spill.wrote(len(b))

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
    around = getattr(out.stream, "around", None)     # a terminal's guard (render.escape.TerminalStream)
    if around is not None:
        local.stream = around(local.stream)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = local.stream, _Tap(chunks, 2, _isatty(sys.stderr), spill)
    try:
        yield local
    finally:
        sys.stdout, sys.stderr = saved


def _joined(chunks: list) -> list:
    return [(1, b"".join(parts).decode("utf-8", "surrogatepass")) if fd == BYTES else (fd, "".join(parts))
            for fd, parts in chunks]


def _replay(chunks: list, stream) -> None:
    for fd, text in chunks:
        if fd == 1:
            stream.write(text)
        else:
            stream.flush()
            sys.stderr.write(text)
            sys.stderr.flush()
