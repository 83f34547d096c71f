"""Gentle reads for a live broker: ``--io-limit`` (MB/s) and the page cache left as it was.

The one home of both rules; ``storage.mapped`` calls it where every read goes through (a
sequential reader's ``follow``, a small file's read, a mapping's close):

- ``charge(n)`` counts ``n`` bytes read. With a limit set, it sleeps until the run is back
  under it: the theoretical arrival time of the bytes (a GCRA, ``SLACK`` of burst) is kept in a page
  shared with the forked ``-j`` workers, behind a one-byte pipe token, so the limit holds
  for the run as a whole, however many workers read. The C accelerator reads from a mapping
  Python hands it (at most a walk's span, 32 MiB, at a time): that is the granularity, and
  over seconds it averages out.
- ``Residency``: which pages of a file were in the page cache before kdump read it
  (``mincore`` on a mapping of its own). With a limit set, what kdump read is dropped behind
  it (``POSIX_FADV_DONTNEED``) except those pages: a broker's hot pages stay cached, and the
  ones kdump brought in do not push them out. Where the kernel will not say (Linux answers
  ``mincore`` about the page cache only to the file's owner or a writer), nothing is dropped.
"""

from __future__ import annotations

import mmap
import os
import select
import struct
import sys
import time
from collections.abc import Callable

MB = 1000 * 1000        # --io-limit is in MB/s (decimal, as disks and `iostat -m` count)
_TAT = struct.Struct("d")
# Seconds of idle a run may make up for: the bytes are counted after the work on them
# (decoding, writing), so without it a chunk's work longer than its wait (a busy machine)
# would be lost. At most SLACK * rate bytes above the limit in any window: 5% over 10 s;
# never at the start (the first bytes are waited for in full).
SLACK = 0.5
_LOCK_WAIT = 1.0        # seconds; a worker killed holding the token must not stop the others


class Throttle:
    """At most ``rate`` bytes a second, counted after each read. ``clock`` and ``sleep`` are
    injectable (tests); ``shared`` keeps the state in a page the forked workers share."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, shared: bool = False) -> None:
        if not rate > 0:
            raise ValueError("an I/O limit must be above 0")
        self.rate = rate
        self.clock = clock
        self.sleep = sleep
        self.total = 0
        self._state: bytearray | mmap.mmap = mmap.mmap(-1, _TAT.size) if shared else bytearray(_TAT.size)
        self._lock = os.pipe() if shared else None
        if self._lock is not None:      # (inherited by the -j workers: fork keeps every descriptor)
            os.set_blocking(self._lock[0], False)
            os.write(self._lock[1], b"t")
        _TAT.pack_into(self._state, 0, float("nan"))

    def charge(self, n: int) -> None:
        """``n`` bytes were read: wait until the run is back under the limit."""
        if n <= 0:
            return
        self.total += n
        held = self._acquire()
        try:
            now = self.clock()
            last = _TAT.unpack_from(self._state, 0)[0]
            tat = (now if last != last else max(last, now - SLACK)) + n / self.rate     # NaN: the first
            _TAT.pack_into(self._state, 0, tat)
        finally:
            if held:
                os.write(self._lock[1], b"t")   # type: ignore[index]  # held implies a lock
        if tat > now:
            self.sleep(tat - now)

    def _acquire(self) -> bool:
        if self._lock is None:
            return False
        r, deadline = self._lock[0], time.monotonic() + _LOCK_WAIT
        while True:
            if not select.select([r], [], [], max(0.0, deadline - time.monotonic()))[0]:
                return False
            try:
                return os.read(r, 1) == b"t"
            except BlockingIOError:     # another worker took it first
                continue


_throttle: Throttle | None = None


def set_io_limit(mb_per_s: float | None) -> None:
    """The run's limit in MB/s (None: none). Set before any worker is forked."""
    global _throttle
    _throttle = None if mb_per_s is None else Throttle(mb_per_s * MB, shared=True)


def active() -> bool:
    return _throttle is not None


def charge(n: int) -> None:
    if _throttle is not None:
        _throttle.charge(n)


# --- the page cache ------------------------------------------------------------------------

PAGE = mmap.PAGESIZE
_DONTNEED = getattr(os, "POSIX_FADV_DONTNEED", None)
_SEQUENTIAL = getattr(os, "POSIX_FADV_SEQUENTIAL", None)
_RESIDENT_BIT = bytes(i & 1 for i in range(256))


def advise_sequential(fd: int, start: int, end: int) -> None:
    """Tell the kernel a reader goes through [start, end) once, in order (a larger readahead)."""
    if _SEQUENTIAL is not None and end > start:
        try:
            os.posix_fadvise(fd, start, end - start, _SEQUENTIAL)
        except OSError:
            pass


class Residency:
    """Which pages of the file behind ``fd`` were cached when it was opened; ``drop`` then
    drops from the page cache the others of a range read (the ones kdump brought in)."""

    def __init__(self, fd: int, size: int, path: str) -> None:
        self.fd = fd
        self.path = path
        self.cached = _cached_pages(fd, size, path)     # one byte a page, 1: cached; None: unknown

    def drop(self, start: int, end: int) -> None:
        cached = self.cached
        if cached is None or _DONTNEED is None:
            return
        first, last = start // PAGE, min(-(-end // PAGE), len(cached))
        i = first
        while i < last:
            j = cached.find(b"\x01", i, last)
            j = last if j < 0 else j
            if j > i:
                try:
                    os.posix_fadvise(self.fd, i * PAGE, (j - i) * PAGE, _DONTNEED)
                except OSError:
                    return
            k = cached.find(b"\x00", j, last)
            i = last if k < 0 else k


def _cached_pages(fd: int, size: int, path: str) -> bytes | None:
    # (imported here: a run without --io-limit starts without it)
    import ctypes

    if size <= 0 or _DONTNEED is None or not sys.platform.startswith("linux") or not _mincore_answers(fd, path):
        return None
    libc = _libc()
    if libc is None:
        return None
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        return None
    try:
        vec = ctypes.create_string_buffer(-(-size // PAGE))
        if libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
            return None
        return vec.raw.translate(_RESIDENT_BIT)
    finally:
        libc.munmap(ctypes.c_void_p(addr), size)


def _mincore_answers(fd: int, path: str) -> bool:
    """Linux tells the page cache's state of a file (not just this process's pages) to its
    owner, to root and to whoever may write it."""
    euid = os.geteuid()
    return euid == 0 or os.fstat(fd).st_uid == euid or os.access(path, os.W_OK)


_libc_cache: list = []


def _libc():
    import ctypes

    if not _libc_cache:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        except (OSError, AttributeError):
            libc = None
        _libc_cache.append(libc)
    return _libc_cache[0]
