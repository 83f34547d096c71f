"""A side file read a slice at a time: what the index checks walk, so that a 100 MB ``.index``
costs a chunk of memory, not the file."""

from __future__ import annotations

import os

from kdump.errors import InputError
from kdump.storage import views
from kdump.storage.mapped import input_error, open_local
from kdump.storage.remote import is_remote

SLICED_ABOVE = 1 << 20     # a side file larger than this is read a slice at a time


class SliceReader:
    """A side file read a slice at a time (``data[a:b]``: one ``pread``), never whole: what the
    index checks walk, so a 100 MB ``.index`` costs a chunk of memory, not the file. ``len()``
    is the size when opened; a file cut meanwhile is a located error. Refuses what
    ``read_small`` refuses (not a regular file, larger than ``limit``)."""

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        if is_remote(path) or views.has(path):
            from kdump.storage import spool  # (only where a remote file or a view is read)

            s = spool.local_copy(path)
            s.need(0, s.size)
            # (an empty file's spool holds no local file: nothing to read)
            self.fd, self.size = (os.dup(s.fd) if s.size else -1), s.size
        else:
            self.fd, st = open_local(path)
            self.size = st.st_size
        self.whole: bytes | None = None
        if self.size > limit:
            self.close()
            raise InputError(f"{self.size} bytes is more than kdump reads of this kind of file ({limit})", file=path)
        if self.size <= SLICED_ABOVE:       # the usual index: one read, then slices of it
            try:
                self.whole = self._read(0, self.size) if self.size else b""
            finally:
                self.close()

    def __len__(self) -> int:
        return self.size

    def data(self) -> bytes | SliceReader:
        """The bytes of a small file (read once), else this reader."""
        return self if self.whole is None else self.whole

    def __getitem__(self, k: slice) -> bytes:
        if self.whole is not None:
            return self.whole[k]
        start, stop, _ = k.indices(self.size)
        want = max(0, stop - start)
        return self._read(start, want) if want else b""

    def _read(self, start: int, want: int) -> bytes:
        try:
            data = os.pread(self.fd, want, start)
        except OSError as e:
            raise input_error(self.path, e) from None
        if len(data) != want:
            raise InputError(f"the file was cut to fewer than {start + want} bytes while it was read",
                             file=self.path, position=start + len(data))
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> SliceReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
