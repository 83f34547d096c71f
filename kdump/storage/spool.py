"""A remote file as a local buffer: ranged reads into a sparse temporary file, mapped.

The readers walk a buffer (the C scanner takes a pointer to it), so a remote file is given
to them as one: a temporary file as large as the object, unlinked at once and sparse, into
which only the ranges a reader asks for (``need``) are fetched, ``FETCH`` bytes per request,
``PARALLEL`` requests at a time. It is mapped like a local segment, so the scanner's pages
are dropped behind it as there: memory stays flat on a segment of any size, and nothing is
ever read whole into memory. A Spark task fetches only its slice.

The last few spools are kept (``KEEP``, ``KEEP_BYTES``: the disk they take is bounded): verify
opens a segment again for its index checks, and that second open reads from the local copy.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kdump.errors import InputError, RemoteError
from kdump.storage import fs, remote, views

CHUNK = 4 << 20          # the unit of "already fetched"
FETCH = 16 << 20         # bytes per ranged request (S3 costs a round trip per request)
PARALLEL = 2             # requests in flight for one reader
KEEP = 16                # spools kept for files opened again (a partition's segment and side files),
KEEP_BYTES = 1 << 30     # as long as they add up to no more than this (the newest is always kept)


class Spool:
    def __init__(self, url: str, size: int) -> None:
        self.url = url
        self.size = size
        self._read: Callable[[int, int], bytes] | None = None     # store.reader's, made at the first need
        self._done = bytearray(-(-size // CHUNK))
        self._lock = threading.Lock()
        directory = os.environ.get("KDUMP_SPOOL_DIR") or None
        self.fd = -1
        if size:
            self.fd, name = tempfile.mkstemp(prefix="kdump-spool-", dir=directory)
            os.unlink(name)
            os.ftruncate(self.fd, size)

    def need(self, start: int, end: int) -> None:
        """Fetch what is missing of ``[start, end)``."""
        end = min(end, self.size)
        if start >= end:
            return
        if self.fd < 0:
            raise RemoteError("read after the local copy was let go", file=self.url)
        first, last = start // CHUNK, (end - 1) // CHUNK
        with self._lock:
            missing = [c for c in range(first, last + 1) if not self._done[c]]
            if not missing:
                return
            pieces = []             # (start, end) of runs of missing chunks, cut at FETCH bytes
            run_start = prev = missing[0]
            for c in missing[1:] + [-1]:        # -1: past the last
                if c == -1 or c != prev + 1 or (c - run_start) * CHUNK >= FETCH:
                    pieces.append((run_start * CHUNK, min((prev + 1) * CHUNK, self.size)))
                    run_start = c
                prev = c
            if self._read is None:
                store, path = remote.store_for(self.url)
                self._read = store.reader(self.url, path, self.size)
            if len(pieces) == 1:
                self._fetch(*pieces[0])
            else:
                with ThreadPoolExecutor(PARALLEL) as pool:
                    for _ in pool.map(lambda p: self._fetch(*p), pieces):
                        pass
            for c in missing:
                self._done[c] = 1

    def _fetch(self, start: int, end: int) -> None:
        assert self._read is not None       # need() made it before the first fetch
        data = self._read(start, end - start)
        if len(data) != end - start:
            raise RemoteError(f"the object ends at byte {start + len(data)}, before its listed size "
                              f"{self.size} (cut or replaced while kdump read it)", file=self.url,
                              position=start + len(data))
        view = memoryview(data)
        done = 0
        while done < len(view):
            done += os.pwrite(self.fd, view[done:], start + done)

    def read(self, start: int, length: int) -> bytes:
        self.need(start, start + length)
        return os.pread(self.fd, length, start) if length > 0 else b""

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_spools: OrderedDict[str, Spool] = OrderedDict()
_spools_lock = threading.Lock()


def spool_for(url: str, size: int) -> Spool:
    """The spool of a remote file of ``size`` bytes (a kept one if there is one)."""
    with _spools_lock:
        s = _spools.get(url)
        if s is not None and s.size == size:
            _spools.move_to_end(url)
            return s
        s = _spools[url] = Spool(url, size)
        while len(_spools) > 1 and (len(_spools) > KEEP or sum(k.size for k in _spools.values()) > KEEP_BYTES):
            _spools.popitem(last=False)[1].close()
        return s


def local_copy(path: str):
    """The local buffer of a remote file (a Spool), or of a layout's view of an object (its own:
    ``size``, ``fd``, ``need``, ``read``), nothing fetched yet."""
    transformed = views.spool(path)     # a chunked object (Aiven's layout): its original bytes
    if transformed is not None:
        return transformed
    st = fs.stat(path)
    if st.kind != "file":
        raise InputError("cannot read: no such file" if st.kind is None else "cannot read: is a directory",
                         file=path)
    return spool_for(fs.abspath(path), st.size)


def _after_fork() -> None:
    """A -j worker keeps what was fetched but reads on with its own client (its parent's
    connections and the threads behind them are not in the child)."""
    global _spools_lock
    _spools_lock = threading.Lock()
    for s in _spools.values():
        remote.keep_inherited(s._read)
        s._read = None
        s._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
