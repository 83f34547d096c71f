"""The one way kdump writes a file: every writing command (``verify --truncate``, ``recover
--apply``, ``--salvage``, ``index``/``timeindex --rebuild``) goes through here.

- A file is written to a temporary file beside it, fsynced, then renamed over the old one
  (``os.replace``) and the directory fsynced: old or new, never half.
- Temporary names are unique (``<name>.<pid>-<random>.kdump-tmp``): two runs never share
  one, and the suffix lets a later run (holding the partition lock, ``writelock``) find and
  remove what a killed run left, in the partition and in its quarantine directories.
- A symbolic link is never written through, nor replaced: the write is refused, naming the
  link. New files take the owner, mode and extended attributes of the file they stand
  beside (kdump often runs as root on a broker's directory); new directories those of theirs.
- A file with more than one name (hard links, as ``cp -al`` keeps evidence) is never written
  in place: a repair writes a new file under its name (``link_count``), the other names keep
  the old bytes.
- A copy of user data (cut bytes, quarantine copies, backups) is checked before it is
  published: its size and a CRC-32 computed while copying are compared with the file
  written, read back, so a log is never cut against a copy that does not hold its bytes.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Iterable
from typing import NamedTuple

from kdump.errors import InputError, WriteError
from kdump.storage.mapped import data_at, hole_at

TEMP_SUFFIX = ".kdump-tmp"
QUARANTINE_PREFIX = "kdump-quarantine-"     # recover's quarantine directories inside a partition
COPY_CHUNK = 1 << 20
# What read_range yields for a whole chunk of a file's hole, and atomic_write leaves a hole
# for: a preallocated segment's zero tail (1 GiB by default) is copied without being read
# or written, and its copy takes no disk space either.
ZERO_CHUNK = bytes(COPY_CHUNK)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_Chunk = bytes | bytearray | memoryview


class Change(NamedTuple):
    """One thing a repair did (or, for ``skipped``, could not do)."""

    action: str      # saved | truncated | rebuilt | trimmed | moved | renamed | wrote | removed_temp | skipped
    path: str
    detail: str

    def to_dict(self) -> dict:
        return self._asdict()


def write_error(path: str, what: str, e: OSError) -> WriteError:
    return WriteError(f"cannot {what}: {e.strerror or e}", file=path)


def is_cross_device(e: OSError) -> bool:
    return e.errno == errno.EXDEV


def refuse_symlink(path: str) -> None:
    """Writes go to the file named, never through a link to somewhere else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise write_error(path, "inspect", e) from None
    if stat.S_ISLNK(st.st_mode):
        raise WriteError("is a symbolic link; kdump does not write through links", file=path)


def fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _like(fd: int, like: str | None) -> None:
    """Give a new file (or directory) the mode, the extended attributes (ACLs, labels, a backup
    tool's marks) and, when we may, the owner of the one it stands for."""
    if like is None:
        return
    try:
        st = os.stat(like)
    except OSError:
        return
    try:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            os.fchown(fd, st.st_uid, st.st_gid)     # first: a change of owner may clear set-id bits
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | stat.S_IRUSR)
    except OSError:
        pass
    copy_xattrs(like, fd)


def copy_xattrs(src: str, fd: int) -> None:
    """The extended attributes of ``src`` onto ``fd``; one we may not set (a ``security.``
    or ``trusted.`` one, not root) is left out."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(src, name))
        except OSError:
            pass


def link_count(path: str) -> int:
    """How many names the file has (``cp -al`` evidence shares the inode: never write through it)."""
    try:
        return os.lstat(path).st_nlink
    except OSError:
        return 1


def make_dir_like(path: str, like: str) -> None:
    """``os.makedirs`` of ``path``, the new directory with the mode, attributes and owner of
    ``like`` (a quarantine under a 750 partition is 750 too)."""
    os.makedirs(path, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        _like(fd, like)
    finally:
        os.close(fd)


def temp_name(path: str) -> str:
    return f"{path}.{os.getpid()}-{os.urandom(4).hex()}{TEMP_SUFFIX}"


def _open_temp(path: str, like: str | None) -> tuple[str, int]:
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    while True:
        tmp = temp_name(path)
        try:
            fd = os.open(tmp, flags, 0o644)
        except FileExistsError:
            continue
        except OSError as e:
            raise write_error(tmp, "create", e) from None
        _like(fd, like)
        return tmp, fd


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _is_zero(chunk) -> bool:
    """A chunk of zeros, to leave as a hole (memcmp stops at the first byte that differs)."""
    if chunk is ZERO_CHUNK:
        return True
    return type(chunk) is bytes and chunk == (ZERO_CHUNK if len(chunk) == COPY_CHUNK else bytes(len(chunk)))


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fd_chunks(fd: int, start: int, end: int) -> Iterable[bytes]:
    """Bytes [start, end) through a descriptor, in chunks; the holes of a sparse file are not
    read: their whole chunks come as ZERO_CHUNK."""
    pos = start
    while pos < end:
        data = data_at(fd, pos, end)
        if data > pos:
            n = min(COPY_CHUNK, data - pos)
            yield ZERO_CHUNK if n == COPY_CHUNK else bytes(n)
            pos += n
            continue
        chunk = os.pread(fd, min(COPY_CHUNK, hole_at(fd, pos, end) - pos), pos)
        if not chunk:
            return
        yield chunk
        pos += len(chunk)


def _check_copy(fd: int, size: int, crc: int, path: str) -> None:
    """The temporary file holds ``size`` bytes with this CRC-32, read back from the disk."""
    got_size = os.fstat(fd).st_size
    got = 0
    for chunk in _fd_chunks(fd, 0, got_size):
        got = zlib.crc32(chunk, got)
    if got_size != size or got != crc:
        raise WriteError(f"the copy does not hold what was read ({got_size} bytes, CRC-32 {got:08x}; expected "
                         f"{size} bytes, CRC-32 {crc:08x}); nothing was changed", file=path)


def atomic_write(path: str, chunks: Iterable[_Chunk] | _Chunk, like: str | None = None, verify: bool = False) -> None:
    """Write ``path`` through a temporary file in its directory: old or new, never half.

    ``verify``: the file written is read back and its size and CRC-32 compared with those of
    the chunks before it replaces anything (for copies of user data)."""
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        chunks = [chunks]
    refuse_symlink(path)
    tmp, fd = _open_temp(path, like if like is not None else (path if os.path.exists(path) else None))
    try:
        size = written = crc = 0
        for chunk in chunks:
            if verify:
                crc = zlib.crc32(chunk, crc)
            if _is_zero(chunk):             # left as a hole: reads back as zeros
                size += len(chunk)
                continue
            if written != size:
                os.lseek(fd, size, os.SEEK_SET)
            _write_all(fd, chunk)
            size = written = size + len(chunk)
        if written != size:
            os.ftruncate(fd, size)
        os.fsync(fd)
        if verify:
            _check_copy(fd, size, crc, path)
    except OSError as e:
        os.close(fd)
        _discard(tmp)
        raise write_error(path, "write", e) from None
    except BaseException:
        os.close(fd)
        _discard(tmp)
        raise
    os.close(fd)
    try:
        refuse_symlink(path)
        os.replace(tmp, path)
    except (OSError, WriteError) as e:
        _discard(tmp)           # the old file stands; leave no temporary behind
        if isinstance(e, WriteError):
            raise
        raise write_error(path, "replace", e) from None
    fsync_dir(os.path.dirname(path))


def read_range(path: str, start: int, end: int) -> Iterable[bytes]:
    """Bytes [start, end) of a file, in chunks (never the whole range in memory); the holes
    of a sparse file are not read: their whole chunks come as ZERO_CHUNK. An error names
    this file (not the one being written from it)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise WriteError("is a symbolic link; kdump does not write through links", file=path) from None
        raise InputError(f"cannot read: {e.strerror or e}", file=path) from None
    try:
        yield from _fd_chunks(fd, start, end)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=path) from None
    finally:
        os.close(fd)


def copy_file(src: str, target: str, like: str | None = None) -> None:
    """A verified, atomic copy of a whole file (holes stay holes)."""
    try:
        size = os.lstat(src).st_size
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=src) from None
    atomic_write(target, read_range(src, 0, size), like=like or src, verify=True)


def same_content(path: str, chunks: Iterable[bytes]) -> bool:
    """Does ``path`` hold exactly these bytes? (Compared chunk by chunk; a hole of the file
    where a chunk is ZERO_CHUNK is equal without being read.)"""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        pos = 0
        for chunk in chunks:
            n = len(chunk)
            if not (chunk is ZERO_CHUNK and data_at(fd, pos, pos + n) == pos + n) and \
                    os.pread(fd, n, pos) != chunk:
                return False
            pos += n
        return os.fstat(fd).st_size == pos
    except OSError:
        return False
    finally:
        os.close(fd)


def _holds_the_same(copy: str, path: str) -> bool:
    """Is ``copy`` the same file as ``path``, or one with the same bytes?"""
    try:
        a, b = os.lstat(copy), os.lstat(path)
    except OSError:
        return False
    if (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev):
        return True
    return a.st_size == b.st_size and same_content(copy, read_range(path, 0, b.st_size))


def backup(path: str) -> str:
    """Keep the current file as ``<name>.bak`` (``.bak.N`` if taken): a hard link (atomic, and
    the rename that follows leaves the old bytes there), else a verified copy. A ``.bak``
    that already holds these bytes (the one a killed run made) is kept, not made twice."""
    bak = path + ".bak"
    n = 0
    while os.path.lexists(bak):
        if _holds_the_same(bak, path):
            return bak
        n += 1
        bak = f"{path}.bak.{n}"
    try:
        os.link(path, bak, follow_symlinks=False)
    except OSError:
        copy_file(path, bak)
    else:
        fsync_dir(os.path.dirname(path))
    return bak


def write_file(path: str, data: bytes, keep_backup: bool = False, like: str | None = None) -> tuple[str, str | None]:
    """Write ``data`` to ``path`` atomically, keeping the old file as ``.bak`` if asked.

    Returns (status, backup path): "unchanged" (same bytes: no write, no backup), "replaced"
    or "created". ``like``: where a new file takes its mode and owner from."""
    refuse_symlink(path)
    existing = os.path.lexists(path)
    if existing and same_content(path, [data]):
        return "unchanged", None
    try:
        bak = backup(path) if existing and keep_backup else None
    except OSError as e:
        raise WriteError(f"could not keep a backup: {e.strerror or e}", file=path) from None
    atomic_write(path, data, like=None if existing else like)
    return ("replaced" if existing else "created"), bak


def remove_stale_temps(directory: str) -> list[Change]:
    """Remove the temporary files interrupted kdump runs left in ``directory`` and in its
    quarantine directories (only kdump's own; call it holding the partition's lock, when
    no other run can be writing them). An empty quarantine directory goes too."""
    out: list[Change] = []
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError:
        return out
    for e in entries:
        if e.name.endswith(TEMP_SUFFIX) and e.is_file(follow_symlinks=False):
            _discard(e.path)
            out.append(Change("removed_temp", e.path, "temporary file of an interrupted kdump run"))
        elif e.name.startswith(QUARANTINE_PREFIX) and e.is_dir(follow_symlinks=False):
            out += remove_stale_temps(e.path)
            try:
                os.rmdir(e.path)            # only if nothing else is in it
            except OSError:
                pass
            else:
                out.append(Change("removed_temp", e.path, "empty quarantine directory of an interrupted kdump run"))
    if out:
        fsync_dir(directory)
    return out
