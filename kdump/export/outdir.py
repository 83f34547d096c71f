"""Where an export is written: a hidden staging directory beside ``--out``, renamed into
place only when the export finished, with a ``_SUCCESS`` marker as Spark's and Hadoop's
committers leave. An interrupted export therefore never looks complete: ``--out`` is
absent (or still the previous complete export), and a rerun clears the leftover staging
directory and just works.

An export that finished without some of its input (a partition dir that could not be
listed) is moved into place too, for what it holds, but never marked complete: it has
``_INCOMPLETE`` (UNREAD: one line per input not read) instead of ``_SUCCESS``, so a reader that
waits for ``_SUCCESS`` never takes it for the whole, and a person sees what is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kdump.errors import UsageError, WriteError
from kdump.export.remote_out import STAGING, UNREAD, is_staging_of, staging_name
from kdump.storage.outpath import check_output
from kdump.storage.remote import is_remote

SUCCESS = "_SUCCESS"
# STAGING + random + out's name: hidden, and never a Hive partition name
_REPLACED = ".kdump-replaced-"


def check_out(out: str, overwrite: bool, inputs: Iterable[str]) -> None:
    """Refuse what ``storage.outpath.check_output`` refuses (an input, a log dir or a partition,
    anything holding Kafka's files), and a non-empty directory unless --overwrite. (A remote
    ``out`` is checked by ``kdump.export.remote_out`` when it is staged.)"""
    if is_remote(out):
        return
    check_output(out, inputs)
    if os.path.isdir(out) and os.listdir(out) and not overwrite:
        raise UsageError("output directory is not empty (use --overwrite to replace it)", file=out)


def _siblings(out: str, prefix: str) -> list[str]:
    parent, name = os.path.split(os.path.abspath(out))
    try:
        return [os.path.join(parent, n) for n in os.listdir(parent) if is_staging_of(n, name, prefix)]
    except OSError:
        return []


def _make_beside(out: str, prefix: str) -> str:
    """A new private directory beside ``out``, named as ``_siblings`` finds it again."""
    parent, name = os.path.split(out)
    while True:
        path = os.path.join(parent, staging_name(name, prefix))
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


@contextmanager
def staged(out: str, overwrite: bool, inputs: Iterable[str], missing: list | None = None) -> Iterator[str]:
    """Yield a fresh staging directory for an export to ``out``; on success mark it
    complete and rename it to ``out`` (replacing what ``check_out`` allowed), otherwise
    remove it. ``missing``: inputs not read (errors); if any, it is marked INCOMPLETE instead.
    An ``s3://`` or ``hdfs://`` ``out``: ``kdump.export.remote_out``."""
    if is_remote(out):
        from kdump.export.remote_out import local_then_upload

        with local_then_upload(out, overwrite, inputs, missing) as tmp:
            yield tmp
        return
    check_out(out, overwrite, inputs)
    out = os.path.abspath(out)
    parent = os.path.dirname(out)
    for leftover in _siblings(out, STAGING) + _siblings(out, _REPLACED):
        shutil.rmtree(leftover, ignore_errors=True)     # from a run that was killed
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = _make_beside(out, STAGING)
    except OSError as e:
        raise WriteError(f"cannot create the export directory: {e.strerror or e}", file=out) from None
    try:
        yield tmp
        if missing:
            with open(os.path.join(tmp, UNREAD), "w", encoding="utf-8", errors="backslashreplace") as f:
                f.writelines(f"{e}\n" for e in missing)
        else:
            with open(os.path.join(tmp, SUCCESS), "w"):
                pass
        _commit(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _commit(tmp: str, out: str) -> None:
    old = None
    try:
        if os.path.isdir(out) and os.listdir(out):
            old = _make_beside(out, _REPLACED)
            os.rename(out, os.path.join(old, "out"))
        elif os.path.isdir(out):
            os.rmdir(out)
        os.rename(tmp, out)
    except OSError as e:
        raise WriteError(f"cannot move the finished export into place: {e.strerror or e}", file=out) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
