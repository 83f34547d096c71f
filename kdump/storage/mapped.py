"""Opening log-dir files read-only (the file-name rules are in ``kdump.storage.names``).

Segments are mapped with ``mmap`` (ACCESS_READ): nothing is read until it is touched, a
segment larger than 2 GiB works, and nothing kdump opens this way can be changed or
resized. Opening never creates a file. Mapped pages count as the process's memory once
touched, so large mappings drop their pages behind sequential readers (``SegmentMap``).
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Callable
from stat import S_ISREG

from kdump import _accel
from kdump.errors import InputError
from kdump.storage import gentle, views
from kdump.storage.remote import is_remote

# Mapped pages count as the process's memory once touched: walking a 4 GiB segment would
# leave 4 GiB resident. Mappings larger than TRIM_ABOVE are a SegmentMap, which sequential
# readers (the Walker, the scanner) tell where they are; pages more than FOLLOW_BEHIND
# bytes behind that position are dropped (MADV_DONTNEED). A page needed again comes back
# from the page cache with a minor fault, so this bounds memory without changing results.
TRIM_ABOVE = 64 << 20
FOLLOW_BEHIND = 16 << 20
# A small file is read rather than mapped: one copy costs less than mapping, faulting in
# and unmapping it, which dominates on a log dir of thousands of small partitions.
READ_BELOW = 256 << 10


# Who hears how far sequential readers have got: ``callback(path, position)`` (the CLI's
# progress bar), or None. One at a time: the CLI runs one command.
_listener: Callable[[str, int], None] | None = None


def listen(callback: Callable[[str, int], None] | None) -> None:
    global _listener
    _listener = callback


class SegmentMap(mmap.mmap):
    """A read-only mapping that tells the listener how far a sequential reader has got and,
    for a large file, drops its pages behind the reader and knows where the file's holes are."""

    _dropped = 0              # [0, _dropped) has been advised away
    _charged = 0              # [0, _charged) counted against --io-limit (storage.gentle)
    counting = True           # False: a walk hopping header to header (storage.split), not reading
    sequential = False        # advised so: read whole, counted whole if no follow said less
    path = ""                 # set right after the mapping is made
    big = False
    cache: gentle.Residency | None = None     # with --io-limit: what to drop from the page cache
    need: Callable[[int, int], None]    # a remote file's: Spool.need

    def data_from(self, position: int, end: int) -> int:
        """The first position >= ``position`` (and <= ``end``) that is not in a hole of the
        file: a preallocated segment (Kafka's ``preallocate``, a sparse file) reads as zeros
        there, and mapping its holes would fill memory with zero pages for nothing."""
        if not self.big:
            return position
        try:
            fd = os.open(self.path, _OPEN_FLAGS)
        except OSError:
            return position
        try:
            return data_at(fd, position, end)
        finally:
            os.close(fd)

    def follow(self, position: int) -> None:
        """A sequential reader has reached ``position``; drop what lies well behind it."""
        if _listener is not None:
            _listener(self.path, position)
        if position > self._charged:
            if self.counting:
                gentle.charge(position - self._charged)
            self._charged = position
        if not self.big and self.cache is None:
            return
        cut = (position - FOLLOW_BEHIND) // mmap.PAGESIZE * mmap.PAGESIZE
        if cut + 2 * FOLLOW_BEHIND < self._dropped:     # a second walk from the start (verify's index checks)
            self._dropped = max(0, cut)
        self._drop(cut)

    def _drop(self, cut: int) -> None:
        """Unmap [_dropped, cut) (a page still mapped stays in the page cache), then drop from
        the page cache the pages of it that were not cached before (--io-limit)."""
        if cut <= self._dropped:
            return
        try:
            self.madvise(mmap.MADV_DONTNEED, self._dropped, cut - self._dropped)
        except (ValueError, OSError):     # closed, or not supported: memory is not trimmed
            return
        if self.cache is not None:
            self.cache.drop(self._dropped, cut)
        self._dropped = cut

    def finish(self) -> None:
        """Closing (--io-limit): a reader that advised sequential reading but never said how
        far it got read it all; a lookup (an index entry's batch) is not counted. What was
        read is dropped behind the reader."""
        if not gentle.active():
            return
        if self.sequential and not self._charged and self.counting:
            gentle.charge(len(self))
        self._charged = len(self)
        if self.cache is not None and hasattr(mmap, "MADV_DONTNEED"):
            self._drop(len(self) // mmap.PAGESIZE * mmap.PAGESIZE)
            self.cache.drop(self._dropped, len(self))


def data_at(fd: int, pos: int, end: int) -> int:
    """The first position in [pos, end] that is not in a hole of the file (SEEK_DATA; ``pos``
    where holes cannot be asked about)."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return pos
    try:
        return min(os.lseek(fd, pos, seek_data), end)
    except OSError as e:        # ENXIO: holes only, up to the end of the file
        return min(end, os.fstat(fd).st_size) if e.errno == errno.ENXIO else pos


def hole_at(fd: int, pos: int, end: int) -> int:
    """Where the data run holding ``pos`` ends (SEEK_HOLE; the end of the file counts), at most ``end``."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return end
    try:
        hole = os.lseek(fd, pos, seek_hole)
    except OSError:
        return end
    return min(hole, end) if hole > pos else end


def input_error(path: str, e: OSError) -> InputError:
    """An OSError opening or reading ``path`` as the one-line error naming it."""
    reasons: dict[int | None, str | None] = {errno.ENOENT: "no such file", errno.EACCES: "permission denied",
                                             errno.EISDIR: "is a directory", errno.EPERM: "operation not permitted"}
    reason = reasons.get(e.errno, e.strerror)
    return InputError(f"cannot read: {reason}", file=path)


# A file truncated by another process while mapped (a broker truncating a follower's log)
# makes a read past its new end raise SIGBUS. The CLI calls exit_on_sigbus(); from then
# on every mapping is registered with the C accelerator, whose handler names the file
# and the byte in one error line and exits with status 3 instead of "Bus error".
_sigbus = {"wanted": False, "installed": False}


def exit_on_sigbus() -> None:
    """For the command line: a truncated mapped file ends the run with one located error line."""
    _sigbus["wanted"] = True


def _watch(mm: mmap.mmap, path: str) -> int | None:
    if not _sigbus["wanted"]:
        return None
    c = _accel.native()
    if c is None:
        return None
    if not _sigbus["installed"]:
        _sigbus["installed"] = c.catch_sigbus()
    return c.watch_mapping(mm, os.fsencode(path))


def _unwatch(slot: int | None) -> None:
    if slot is not None:    # registered while the accelerator was on: undone even if now off
        _accel.built().unwatch_mapping(slot)  # type: ignore[union-attr]  # a slot comes from the built module


def open_regular(path: str) -> int:
    """A read-only descriptor of ``path``, which must be a regular file. Opened without
    blocking, then checked on the descriptor: opening a FIFO (or a tape, or a terminal)
    named like a segment must not wait forever for a writer. A remote file is fetched
    first; the descriptor is then its local copy's (a layout's view: its bytes' copy)."""
    if is_remote(path) or views.has(path):
        s = _local_copy(path)
        s.need(0, s.size)
        return os.open(f"/proc/self/fd/{s.fd}", _OPEN_FLAGS) if s.size else os.open(os.devnull, _OPEN_FLAGS)
    return open_local(path)[0]


def _local_copy(path: str):
    from kdump.storage import spool  # (only where a remote file or a view is read)

    return spool.local_copy(path)


# Read-only, not inherited, and never waiting for a writer (a FIFO named like a segment).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def open_local(path: str) -> tuple[int, os.stat_result]:
    """A local file's read-only descriptor (``open_regular``'s checks) and its ``fstat``: one
    call for both the checks and the size."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        raise input_error(path, e) from None
    try:
        st = os.fstat(fd)
        if not S_ISREG(st.st_mode):
            raise InputError("not a regular file", file=path)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


class MappedFile:
    """A read-only view of a whole file: ``.buf`` supports slicing, ``len`` and buffer access.

    A remote file (an ``s3://`` or ``hdfs://`` URL) is mapped from its local copy. With
    ``lazy``, nothing of it is fetched yet: the reader calls ``need(start, end)`` for the
    ranges it will touch (a no-op for a local file). A layout's chunked object read lazily is
    its buffer for a forward walk (``views.stream``), whose own ``need`` the walk calls as it goes.
    With ``stream``, only such an object is read so (its readers call its ``need``: verify's
    checks do), anything else whole as without."""

    def __init__(self, path: str, lazy: bool = False, stream: bool = False) -> None:
        self.path = path
        self._mm: SegmentMap | None = None
        self._watch_slot: int | None = None
        self.need = _nothing_needed
        if is_remote(path) or views.has(path):
            self._map_remote(path, lazy, stream)
            return
        fd, st = open_local(path)
        try:
            self.size = st.st_size
            if st.st_size == 0:
                self.buf: bytes | mmap.mmap = b""
            elif st.st_size <= READ_BELOW:
                self.buf = _read_gently(fd, st.st_size, path)
            else:
                self._mm = SegmentMap(fd, 0, access=mmap.ACCESS_READ)
                self._mm.path = path
                self._mm.big = st.st_size > TRIM_ABOVE and hasattr(mmap, "MADV_DONTNEED")
                if gentle.active():
                    self._mm.cache = gentle.Residency(os.dup(fd), st.st_size, path)
                self.buf = self._mm
                self._watch_slot = _watch(self._mm, path)
        except OSError as e:
            raise input_error(path, e) from None
        finally:
            os.close(fd)

    def _map_remote(self, path: str, lazy: bool, stream: bool) -> None:
        s = _local_copy(path)     # (a layout's: its size, nothing copied yet)
        streamed = views.stream(path) if (lazy or stream) and views.has(path) and s.size else None
        if streamed is not None:    # a layout's view walked forward: filled as the walk asks (buf.need)
            self.size = len(streamed)
            if self.size > READ_BELOW:
                self._mm = self.buf = streamed
                return
            try:        # a small one whole, as a small file is read
                streamed.need(0, self.size)
                self.buf = bytes(streamed)
            finally:
                streamed.close()
            gentle.charge(self.size)
            return
        self.size = s.size
        if not lazy or s.size <= READ_BELOW:
            s.need(0, s.size)
        if s.size == 0:
            self.buf = b""
        elif s.size <= READ_BELOW:
            self.buf = _read_fd(s.fd, s.size)
            gentle.charge(len(self.buf))
        else:
            self._mm = SegmentMap(s.fd, 0, access=mmap.ACCESS_READ)
            self._mm.path = path
            self._mm.big = s.size > TRIM_ABOVE and hasattr(mmap, "MADV_DONTNEED")
            self._mm.need = self.need = s.need
            self.buf = self._mm

    def advise_sequential(self) -> None:
        if self._mm is not None and hasattr(self._mm, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
            self._mm.madvise(mmap.MADV_SEQUENTIAL)
        if self._mm is not None:
            self._mm.sequential = True
        if self._mm is not None and self._mm.cache is not None:
            gentle.advise_sequential(self._mm.cache.fd, 0, self.size)

    def reading_from(self, start: int) -> None:
        """A sequential reader starts at ``start`` (one piece of a segment cut for -j, a seek):
        what lies before it is not counted against --io-limit."""
        if self._mm is not None and start > self._mm._charged:
            self._mm._charged = start

    def reading_to(self, stop: int | None) -> None:
        """A sequential reader means to stop at ``stop`` (None: the end): a streamed buffer
        fills what lies before it in larger pieces."""
        to = getattr(self._mm, "reading_to", None)
        if to is not None:
            to(stop)

    def close(self) -> None:
        if self._mm is not None:
            _unwatch(self._watch_slot)
            self._watch_slot = None
            cache = self._mm.cache
            try:
                self._mm.finish()
                self._mm.close()
            except BufferError:     # a caller still holds a view; the GC closes it later
                pass
            finally:
                if cache is not None:
                    os.close(cache.fd)
            self._mm = None

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _nothing_needed(start: int, end: int) -> None:
    """A local file needs nothing fetched."""


def file_size(path: str) -> int:
    """Size of a file, 0 if it cannot be read (for progress totals and summaries)."""
    try:
        if views.has(path):
            return _local_copy(path).size
        if is_remote(path):
            from kdump.storage import fs

            return fs.getsize(path)
        return os.path.getsize(path)
    except (OSError, InputError):
        return 0


def _read_gently(fd: int, size: int, path: str) -> bytes:
    """``_read_fd``, counted against --io-limit, and with it dropped from the page cache
    where it was not cached before."""
    if not gentle.active():
        return _read_fd(fd, size)
    cache = gentle.Residency(fd, size, path)
    data = _read_fd(fd, size)
    gentle.charge(len(data))
    cache.drop(0, len(data))
    return data


def _read_fd(fd: int, size: int) -> bytes:
    """The file's bytes, up to ``size`` (a file cut meanwhile gives fewer, as a map would fault)."""
    chunks, got = [], 0
    while got < size:
        chunk = os.pread(fd, size - got, got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_small(path: str, limit: int = 64 << 20) -> bytes:
    """Read a small side file (checkpoint, metadata, snapshot) whole, refusing absurd sizes."""
    if is_remote(path) or views.has(path):
        s = _local_copy(path)
        if s.size > limit:
            raise InputError(f"{s.size} bytes is more than kdump reads of this kind of file ({limit})", file=path)
        data = s.read(0, s.size)
        gentle.charge(len(data))
        return data
    fd, st = open_local(path)
    try:
        size = st.st_size
        if size > limit:        # refused unread: it may be a sparse file of any size
            raise InputError(f"{size} bytes is more than kdump reads of this kind of file ({limit})", file=path)
        # Ask for the size seen (+1 to notice growth), not for the limit: a read of `limit`
        # bytes allocates that much for every small file. Read on the descriptor (a file
        # object costs three more system calls), once: a regular file read short has ended.
        cache = gentle.Residency(fd, size, path) if gentle.active() else None
        data = os.pread(fd, size + 1, 0)
        if len(data) != size:       # grown, or cut meanwhile: read what there is now
            data = _read_fd(fd, limit + 1)
        if cache is not None:
            gentle.charge(len(data))
            cache.drop(0, len(data))
    except OSError as e:
        raise input_error(path, e) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(f"more than {limit} bytes: more than kdump reads of this kind of file", file=path)
    return data
