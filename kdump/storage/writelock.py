"""One writer per partition directory, and none while a broker has the log dir open.

Every writing command takes ``PartitionLock(directory)`` before it reads what it will
change and keeps it until it is done:

- kdump's own lock is ``fcntl.flock`` on ``<partition>/.kdump.lock`` (a name no reader of
  kdump or of the broker takes for a log file). A second writer does not wait: it refuses
  at once (``WriteError``, exit status 3). The file is removed when the lock is released;
  a run killed with the lock leaves it behind, and the next run takes it over (the kernel
  released the lock with the process).
- A broker holds ``<log dir>/.lock`` while it runs. The log dir is the parent of the
  partition's resolved path (``log_dir_of``): a symbolic link to the partition, to the log
  dir or to any parent must not hide the broker's lock. The JVM's ``FileChannel.tryLock`` is a
  POSIX record lock (``fcntl(F_SETLK)``), which ``flock`` does not see: it is probed with
  ``fcntl.lockf``, the same call, non-blocking and shared, then let go at once. While it is
  held, writing is refused unless ``force`` (``--force``) is given.
- Holding the lock, the temporary files of interrupted runs are removed
  (``safewrite.remove_stale_temps``); ``cleaned`` lists them.

Where the lock file cannot be created because the directory is read-only or not ours
(EROFS, EACCES, EPERM), no file can be written there by this run either, and it goes on
without a lock: a clean partition on a read-only mount still verifies with ``--truncate``.
"""

from __future__ import annotations

import errno
import fcntl
import os

from kdump.errors import WriteError
from kdump.storage import fs
from kdump.storage.safewrite import Change, remove_stale_temps

LOCK_NAME = ".kdump.lock"
BROKER_LOCK = ".lock"       # Kafka's LogManager.LockFileName, in each log dir
_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NOT_OURS = (errno.EROFS, errno.EACCES, errno.EPERM)


def broker_holds(logdir: str) -> bool:
    """Does a running broker hold ``<logdir>/.lock``? (Never creates the file.)"""
    path = os.path.join(logdir, BROKER_LOCK)
    try:
        fd = os.open(path, os.O_RDONLY | _FLAGS | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EAGAIN, errno.EACCES)
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def log_dir_of(partition: str) -> str:
    """The log dir a partition directory really lives in (every link on the way resolved; a
    remote URL's parent prefix)."""
    return os.path.dirname(fs.realpath(partition))


class PartitionLock:
    """``with PartitionLock(directory, force):`` the exclusive right to write ``directory``."""

    def __init__(self, directory: str, force: bool = False) -> None:
        self.directory = directory
        self.force = force
        self.path = os.path.join(directory, LOCK_NAME)
        self.fd: int | None = None
        self.cleaned: list[Change] = []

    def acquire(self) -> PartitionLock:
        logdir = log_dir_of(self.directory)
        if not self.force and broker_holds(logdir):
            raise WriteError(f"a running Kafka broker holds {os.path.join(logdir, BROKER_LOCK)}; stop it first "
                             f"(or use --force); nothing was changed", file=self.directory)
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _FLAGS, 0o644)
            except OSError as e:
                if e.errno in _NOT_OURS:
                    return self
                what = "is a symbolic link" if e.errno == errno.ELOOP else f"cannot create: {e.strerror or e}"
                raise WriteError(f"{what}; kdump could not lock the partition", file=self.path) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise WriteError(f"another kdump run is writing to this partition (it holds {LOCK_NAME}); "
                                     f"nothing was changed", file=self.directory) from None
                raise WriteError(f"cannot lock: {e.strerror or e}", file=self.path) from None
            # A run releasing the lock removes the file: the lock taken must be on the file
            # that is still there, else another run may hold the one that replaced it.
            st = os.fstat(fd)
            try:
                now = os.lstat(self.path)
            except OSError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                self.fd = fd
                self.cleaned = remove_stale_temps(self.directory)
                return self
            os.close(fd)
        raise WriteError("the lock file keeps changing; is another kdump run starting and stopping?", file=self.path)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> PartitionLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class Locks:
    """The locks a command holds, one per directory, taken once and released together."""

    def __init__(self, force: bool = False) -> None:
        self.force = force
        self.held: dict[str, PartitionLock] = {}

    def take(self, directory: str) -> list[Change]:
        """Lock ``directory`` (once); returns the stale temporary files removed."""
        key = os.path.realpath(directory)
        if key in self.held:
            return []
        lock = PartitionLock(directory, self.force).acquire()
        self.held[key] = lock
        return lock.cleaned

    def drop(self, directory: str) -> None:
        lock = self.held.pop(os.path.realpath(directory), None)
        if lock is not None:
            lock.release()

    def release(self) -> None:
        for lock in self.held.values():
            lock.release()
        self.held.clear()

    def __enter__(self) -> Locks:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
