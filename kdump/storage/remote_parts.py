"""A remote segment's side files under the names a partition directory gives them, so that
``verify``'s side-file checks (``kdump.check.partition``) read them unchanged.

Each is a view (``kdump.storage.views``): ``alias``, an object read as it is stored under a
second name (LocalTieredStorage's ``<offset>-<id>.index`` as ``<offset>.index``, a segment's
``.log`` beside its indexes); a layout registers its own kinds (Aiven's pieces of the
``.indexes`` object: ``kdump.storage.aiven_store``), whose bytes are held in a ``BytesSpool``.
"""

from __future__ import annotations

import os
import tempfile

from kdump.storage import spool, views
from kdump.storage.mapped import open_local
from kdump.storage.remote import is_remote


class BytesSpool:
    """Bytes made here (a piece detransformed), in anonymous memory behind a descriptor (a
    memfd; an unlinked temporary file where there is none)."""

    def __init__(self, data: bytes) -> None:
        self.size = len(data)
        self.fd = -1
        if data:
            memfd = getattr(os, "memfd_create", None)
            if memfd is not None:
                self.fd = memfd("kdump-part", getattr(os, "MFD_CLOEXEC", 0))
            else:
                self.fd, name = tempfile.mkstemp(prefix="kdump-part-",
                                                 dir=os.environ.get("KDUMP_SPOOL_DIR") or None)
                os.unlink(name)
            view, done = memoryview(data), 0
            while done < len(view):
                done += os.pwrite(self.fd, view[done:], done)

    def need(self, start: int, end: int) -> None:
        """Everything is here."""

    def read(self, start: int, length: int) -> bytes:
        return os.pread(self.fd, length, start) if length > 0 else b""

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _LocalFile(BytesSpool):
    """A local file as a spool: its own descriptor, nothing copied."""

    def __init__(self, path: str) -> None:
        self.fd, st = open_local(path)
        self.size = st.st_size


class Alias:
    """``view.target``'s bytes under another name: the target's own spool (a remote or
    layout-transformed object's, shared, so nothing is fetched twice) or the local file."""

    def __init__(self, path: str, view: views.View) -> None:
        self.target = view.target or ""
        self._local = None if is_remote(self.target) or views.has(self.target) else _LocalFile(self.target)

    def _spool(self):
        return self._local if self._local is not None else spool.local_copy(self.target)

    @property
    def size(self) -> int:
        return self._spool().size

    @property
    def fd(self) -> int:
        return self._spool().fd

    def need(self, start: int, end: int) -> None:
        self._spool().need(start, end)

    def read(self, start: int, length: int) -> bytes:
        return self._spool().read(start, length)

    def close(self) -> None:
        if self._local is not None:
            self._local.close()


def read_range(path: str, position: int, size: int) -> bytes:
    """``size`` bytes of an object from ``position`` (short if it ends first)."""
    if is_remote(path) or views.has(path):
        s = spool.local_copy(path)
        end = min(s.size, position + size)
        return s.read(position, max(0, end - position))
    fd, _ = open_local(path)
    try:
        return os.pread(fd, size, position)
    finally:
        os.close(fd)


def alias(path: str, target: str) -> str:
    """Register ``path`` as another name of ``target``; ``path`` back."""
    views.register(path, views.View("alias", "", None, target))
    return path


def _alias_stream(path: str, view: views.View):
    """The target's own buffer for a forward walk, where its layout has one (else None)."""
    return views.stream(view.target or "")


views.reader_for("alias", Alias, _alias_stream)
