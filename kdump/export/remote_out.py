"""An export whose ``--out`` is an ``s3://`` or ``hdfs://`` URL.

The files are written locally first (a task's, or the local engine's, in a temporary
directory) and copied up with ``upload_tree``. What makes the result trustworthy is the
order, as Hadoop's committers do it:

- HDFS has an atomic rename: everything goes to a hidden staging directory beside ``--out``,
  ``_SUCCESS`` is written last, and the directory is renamed to ``--out``.
- S3 has no rename: ``--out`` gets a ``.kdump-incomplete`` marker first, then the files, then
  ``_SUCCESS``, and only then is the marker deleted. A reader that waits for ``_SUCCESS`` (as
  Spark's and Hadoop's do) never takes a partial export; a rerun recognises the marker and
  replaces what the interrupted run left without needing ``--overwrite``. A previous complete
  export (``--overwrite``) is replaced only once the new one is complete beside it
  (``staged_remote``).
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kdump.errors import InputError, StoreUnusable, UsageError
from kdump.storage import fs, remote
from kdump.storage.outpath import check_output

SUCCESS = "_SUCCESS"
INCOMPLETE = ".kdump-incomplete"
# Instead of _SUCCESS on an export that finished without some of its input: one line per
# input not read (kdump.export.outdir, local or remote).
UNREAD = "_INCOMPLETE"
STAGING = ".kdump-staging-"
_COPY = 8 << 20


def upload_tree(local_dir: str, url: str) -> None:
    """Copy every file under ``local_dir`` to the same relative name under ``url``."""
    store, _ = remote.store_for(url)
    for dirpath, _, names in os.walk(local_dir):
        for name in sorted(names):
            src = os.path.join(dirpath, name)
            rel = os.path.relpath(src, local_dir).replace(os.sep, "/")
            target = remote.join(url, rel)
            _, path = remote.store_for(target)
            _copy_up(store, src, target, path)


def _copy_up(store, src: str, url: str, path: str) -> None:
    def put() -> None:
        out = store.output_stream(path)
        try:
            with open(src, "rb") as f:
                while chunk := f.read(_COPY):
                    out.write(chunk)
        finally:
            out.close()
    store.call(url, put)


def _names(out: str) -> list[str] | None:
    if fs.stat(out).kind != "dir":
        return None
    return [e.name for e in fs.scandir(out)]


def staging_name(name: str, prefix: str = STAGING) -> str:
    """The hidden staging directory of an export to ``name``: ``.kdump-staging-<8 hex>.<name>``.
    The random part has a fixed length, so the name it belongs to is read back exactly (``x``'s
    staging is never taken for ``x.y``'s)."""
    return f"{prefix}{secrets.token_hex(4)}.{name}"


def is_staging_of(entry: str, name: str, prefix: str = STAGING) -> bool:
    """Is ``entry`` (a name in the parent of ``--out``) a staging name ``staging_name(name)`` made?"""
    return re.fullmatch(re.escape(prefix) + r"[0-9a-f]{8}\." + re.escape(name), entry) is not None


@contextmanager
def staged_remote(out: str, overwrite: bool, inputs: Iterable[str] = (), missing: list | None = None) -> Iterator[str]:
    """Yield the URL the export's files go to; on success, make ``out`` complete (``missing``:
    inputs not read, and then UNREAD instead of _SUCCESS).

    A previous complete export in ``out`` (replaced with --overwrite) stays until the new one
    is complete beside it: the new files go to a staging prefix beside ``out``, get their
    _SUCCESS there, and only then is the old export deleted and the new one copied into ``out``
    (server-side, INCOMPLETE first, _SUCCESS last). A run killed at any point leaves one
    complete export, in ``out`` or in the staging prefix; the next run that completes removes
    the staging prefixes left beside ``out``."""
    out = fs.abspath(out)
    check_output(out, inputs)
    names = _names(out)
    store, path = remote.store_for(out)
    ours = names is not None and INCOMPLETE in names
    if names and not ours and not overwrite:
        raise UsageError("output directory is not empty (use --overwrite to replace it)", file=out)
    hdfs = out.startswith("hdfs://")
    parent, _, name = out.rpartition("/")
    beside = hdfs or bool(names and not ours)
    if beside:
        target = remote.join(parent, staging_name(name))
    else:
        if names:           # what an interrupted run left in `out`: never complete
            store.delete_tree(out, path)
        store.write(out, _child(path, INCOMPLETE), b"")
        target = out
    _, target_path = remote.store_for(target)
    marker = UNREAD if missing else SUCCESS
    complete = False        # the staged export holds its marker: never deleted after that
    try:
        yield target
        store.write(target, _child(target_path, marker),
                    "".join(f"{e}\n" for e in missing).encode() if missing else b"")
        complete = True
        if hdfs:
            if names is not None:
                store.delete_tree(out, path)
            store.move(out, target_path, path)
        elif beside:
            store.delete_tree(out, path)
            store.write(out, _child(path, INCOMPLETE), b"")
            store.copy_tree(out, target_path, path, last=marker)
            store.delete_file(out, _child(path, INCOMPLETE))
        else:
            store.delete_file(out, _child(path, INCOMPLETE))
    except BaseException:
        if beside and not complete:
            try:
                store.delete_tree(target, target_path)
            except (Exception, StoreUnusable):   # noqa: BLE001 - the error being raised is the one to report
                pass
        raise
    _remove_stale_staging(parent, name)


def _remove_stale_staging(parent: str, name: str) -> None:
    """The staging prefixes of ``name`` that runs killed before this one left beside it."""
    store, _ = remote.store_for(parent)
    try:
        entries = fs.scandir(parent)
    except (OSError, InputError):
        return
    for e in entries:
        if e.is_dir() and is_staging_of(e.name, name):
            store.delete_tree(e.path, remote.store_for(e.path)[1])


def _child(path: str, name: str) -> str:
    return path.rstrip("/") + "/" + name


_LOCAL_PREFIX = "kdump-export-"


@contextmanager
def local_then_upload(out: str, overwrite: bool, inputs: Iterable[str] = (),
                      missing: list | None = None) -> Iterator[str]:
    """For the local engine: a local temporary directory, uploaded to ``out`` once complete."""
    with staged_remote(out, overwrite, inputs, missing) as target, scratch_dir() as tmp:
        yield tmp
        upload_tree(tmp, target)


@contextmanager
def scratch_dir() -> Iterator[str]:
    """A local temporary directory for files on their way up (the local engine's, a Spark
    task's), in ``KDUMP_SPOOL_DIR`` or the system's. It is locked (``flock``) while the run
    lives: those a killed run left, whose lock the kernel let go, are removed by the next."""
    root = os.environ.get("KDUMP_SPOOL_DIR") or tempfile.gettempdir()
    remove_stale_local(root)
    tmp = tempfile.mkdtemp(prefix=_LOCAL_PREFIX, dir=root)
    fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(fd)


def remove_stale_local(root: str) -> None:
    """Remove the local temporary directories of exports whose process is gone (unlocked)."""
    try:
        with os.scandir(root) as it:
            stale = [e.path for e in it if e.name.startswith(_LOCAL_PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for path in stale:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue            # a live export's
        else:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
