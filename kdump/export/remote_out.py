"""An export whose ``--out`` is an ``s3://`` or ``hdfs://`` URL.

The files are written locally first (a task's, or the local engine's, in a temporary
directory) and copied up with ``upload_tree``. What makes the result trustworthy is the
order, as Hadoop's committers do it:

- HDFS has an atomic rename: everything goes to a hidden staging directory beside ``--out``,
  ``_SUCCESS`` is written last, and the directory is renamed to ``--out``.
- S3 has no rename: ``--out`` gets a ``.kdump-incomplete`` marker first, then the files, then
  ``_SUCCESS``, and only then is the marker deleted. A reader that waits for ``_SUCCESS`` (as
  Spark's and Hadoop's do) never takes a partial export; a rerun recognises the marker and
  replaces what the interrupted run left without needing ``--overwrite``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kdump.errors import StoreUnusable, UsageError
from kdump.storage import fs, remote
from kdump.storage.outpath import check_output

SUCCESS = "_SUCCESS"
INCOMPLETE = ".kdump-incomplete"
# Instead of _SUCCESS on an export that finished without some of its input: one line per
# input not read (kdump.export.outdir, local or remote).
UNREAD = "_INCOMPLETE"
_STAGING = ".kdump-staging-"
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


@contextmanager
def staged_remote(out: str, overwrite: bool, inputs: Iterable[str] = (), missing: list | None = None) -> Iterator[str]:
    """Yield the URL the export's files go to; on success, make ``out`` complete (``missing``:
    inputs not read, and then UNREAD instead of _SUCCESS)."""
    out = fs.abspath(out)
    check_output(out, inputs)
    names = _names(out)
    store, path = remote.store_for(out)
    ours = names is not None and INCOMPLETE in names
    if names and not ours and not overwrite:
        raise UsageError("output directory is not empty (use --overwrite to replace it)", file=out)
    hdfs = out.startswith("hdfs://")
    if hdfs:
        target = remote.join(out.rpartition("/")[0], f"{_STAGING}{out.rpartition('/')[2]}.{secrets.token_hex(4)}")
    else:
        if names:
            store.delete_tree(out, path)
        store.write(out, _child(path, INCOMPLETE), b"")
        target = out
    _, target_path = remote.store_for(target)
    try:
        yield target
        if missing:
            store.write(target, _child(target_path, UNREAD), "".join(f"{e}\n" for e in missing).encode())
        else:
            store.write(target, _child(target_path, SUCCESS), b"")
        if hdfs:
            if names is not None:
                store.delete_tree(out, path)
            store.move(out, target_path, path)
        else:
            store.delete_file(out, _child(path, INCOMPLETE))
    except BaseException:
        if hdfs:
            try:
                store.delete_tree(target, target_path)
            except (Exception, StoreUnusable):   # noqa: BLE001 - the error being raised is the one to report
                pass
        raise


def _child(path: str, name: str) -> str:
    return path.rstrip("/") + "/" + name


@contextmanager
def local_then_upload(out: str, overwrite: bool, inputs: Iterable[str] = (),
                      missing: list | None = None) -> Iterator[str]:
    """For the local engine: a local temporary directory, uploaded to ``out`` once complete."""
    with staged_remote(out, overwrite, inputs, missing) as target:
        tmp = tempfile.mkdtemp(prefix="kdump-export-", dir=os.environ.get("KDUMP_SPOOL_DIR") or None)
        try:
            yield tmp
            upload_tree(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

