"""Opening log-dir files read-only, and the file-name conventions of a log dir.

Segments are mapped with ``mmap`` (ACCESS_READ): nothing is read until it is touched, a
segment larger than 2 GiB works, and nothing kdump opens this way can be changed or
resized. Opening never creates a file. Mapped pages count as the process's memory once
touched, so large mappings are trimmed as they are read (``_Trimmer``).
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import threading
import weakref
from contextlib import contextmanager
from collections.abc import Iterator

from .errors import InputError

# <20-digit base offset>.<ext>, optionally with .deleted/.cleaned/.swap appended.
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap")
_OFFSET_NAME = re.compile(r"^(\d+)\.")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint")


def filename_offset(name: str) -> int | None:
    """The base offset a segment-style name starts with (``00000000000000000042.log`` -> 42)."""
    m = _OFFSET_NAME.match(os.path.basename(name))
    return int(m.group(1)) if m else None


def offset_filename(offset: int, ext: str) -> str:
    return f"{offset:020d}{ext}"


def snapshot_id(name: str) -> tuple[int, int] | None:
    """(end offset, epoch) of a KRaft snapshot named ``<offset>-<epoch>.checkpoint``."""
    m = _SNAPSHOT_NAME.match(os.path.basename(name))
    return (int(m.group(1)), int(m.group(2))) if m else None


def strip_leftover(name: str) -> tuple[str, str | None]:
    """Split ``x.log.deleted`` into (``x.log``, ``.deleted``)."""
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return name, None


# Mappings larger than this have their resident pages dropped every few milliseconds.
# Readers walk a segment once, front to back; a page needed again comes back from the page
# cache. Without this, walking a 4 GiB segment leaves 4 GiB resident in the process.
TRIM_ABOVE = 64 << 20
TRIM_INTERVAL = 0.005


class _Trimmer(threading.Thread):
    """Drops the resident pages of a read-only mapping (MADV_DONTNEED) until stopped.

    For a shared, read-only file mapping this only costs a minor fault when a page is
    touched again. ``mmap.madvise`` holds the GIL, and ``MappedFile.close`` joins this
    thread before unmapping, so it never advises memory that is no longer the file.
    """

    def __init__(self, owner: MappedFile) -> None:
        super().__init__(name="kdump-mmap-trim", daemon=True)
        self._owner = weakref.ref(owner)        # a leaked MappedFile still gets collected
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(TRIM_INTERVAL):
            owner = self._owner()
            mm = owner._mm if owner is not None else None
            del owner
            if mm is None:
                return
            try:
                mm.madvise(mmap.MADV_DONTNEED)
            except (ValueError, OSError):       # closed meanwhile, or not supported
                return


def _input_error(path: str, e: OSError) -> InputError:
    reason = {errno.ENOENT: "no such file", errno.EACCES: "permission denied",
              errno.EISDIR: "is a directory", errno.EPERM: "operation not permitted"}.get(e.errno, e.strerror)
    return InputError(f"cannot read: {reason}", file=path)


class MappedFile:
    """A read-only view of a whole file: ``.buf`` supports slicing, ``len`` and buffer access."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._mm: mmap.mmap | None = None
        self._trimmer: _Trimmer | None = None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise _input_error(path, e) from None
        try:
            st = os.fstat(fd)
            if not os.path.isfile(path):
                raise InputError("not a regular file", file=path)
            self.size = st.st_size
            if st.st_size == 0:
                self.buf: bytes | mmap.mmap = b""
            else:
                self._mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                self.buf = self._mm
                if st.st_size > TRIM_ABOVE and hasattr(mmap, "MADV_DONTNEED"):
                    self._trimmer = _Trimmer(self)
                    self._trimmer.start()
        except OSError as e:
            raise _input_error(path, e) from None
        finally:
            os.close(fd)

    def advise_sequential(self) -> None:
        if self._mm is not None and hasattr(self._mm, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
            self._mm.madvise(mmap.MADV_SEQUENTIAL)

    def close(self) -> None:
        if self._trimmer is not None:
            self._trimmer.stopped.set()
            self._trimmer.join()
            self._trimmer = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:     # a caller still holds a view; the GC closes it later
                pass
            self._mm = None

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextmanager
def open_mapped(path: str) -> Iterator[MappedFile]:
    f = MappedFile(path)
    try:
        yield f
    finally:
        f.close()


def file_size(path: str) -> int:
    """Size of a file, 0 if it cannot be read (for progress totals and summaries)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_small(path: str, limit: int = 64 << 20) -> bytes:
    """Read a small side file (checkpoint, metadata, snapshot) whole, refusing absurd sizes."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise _input_error(path, e) from None
    if len(data) > limit:
        raise InputError(f"file is larger than {limit} bytes; not a metadata file", file=path)
    return data
