"""The one check of every output path kdump writes a tree to (``export --out``, local, s3:// or
hdfs://, and ``recover --salvage``): no write may reach Kafka's data unless a repair was asked.

``check_output`` refuses, in one line (exit status 2):

- an output that is an input, holds one, or lies inside one (compared as real paths, or as
  URLs: ``s3://b/data`` holds ``s3://b/data/records-0``);
- an output that is a log dir or lies anywhere inside one: a log dir is a directory with a
  broker's own files (``meta.properties``, which every broker writes in each of its log
  dirs, the log-dir checkpoints). Any extra folder directly in a live log dir takes it offline
  ("... is not in the form of topic-partition"), and a partition-named one would be taken
  for a duplicate partition. For salvage, which writes ``<out>/<partition>/``, the directory
  holding an input partition counts as a log dir too, broker files or not: salvage there
  writes into the partition it reads. (An export beside a copied partition is allowed);
- an output inside a partition directory (named ``<topic>-<partition>``, holding segments);
- an existing output holding Kafka files anywhere in it (segments, indexes, a log dir's own
  files), which ``--overwrite`` would delete; salvage's output holds the segments of its
  earlier runs (``salvage``), never a log dir's files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from kdump.errors import InputError, UsageError
from kdump.format.checkpoint import OFFSET_KINDS
from kdump.format.logdir_files import META_PROPERTIES_FILE
from kdump.storage import fs
from kdump.storage.logdir import name_info, parse_partition_dir
from kdump.storage.names import INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX
from kdump.storage.remote import is_remote

# A broker's own files in a log dir. (Not its ``.lock``: other tools, pytest's temporary
# folders among them, leave files of that name.)
LOG_DIR_FILES = frozenset((META_PROPERTIES_FILE, *OFFSET_KINDS))
_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX)


def _parent(path: str) -> str | None:
    """The directory above ``path`` (None at the root, or at a bucket's or namenode's root)."""
    if is_remote(path):
        scheme, _, rest = path.partition("://")
        head, slash, _ = rest.rstrip("/").rpartition("/")
        return f"{scheme}://{head}" if slash and head else None
    up = os.path.dirname(path)
    return None if up == path else up


def _inside(a: str, b: str) -> bool:
    """Is ``a`` the same as ``b``, or below it?"""
    sep = "/" if is_remote(b) else os.sep
    return a == b or a.startswith(b.rstrip(sep) + sep)


def _entries(directory: str) -> list:
    try:
        return fs.scandir(directory)
    except (OSError, InputError):
        return []


def _holds_segments(entries) -> bool:
    """Does a listing hold offset-named segment files (a partition directory)?"""
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            continue
        c, offset_named = name_info(e.name)
        if c is not None and offset_named:
            return True
    return False


def _is_partition(path: str, entries) -> bool:
    """A partition directory: named ``<topic>-<partition>`` (as Kafka requires), holding segments.
    (A scratch folder with a loose segment in it is not one.)"""
    return parse_partition_dir(path.rstrip("/").rpartition("/")[2]) is not None and _holds_segments(entries)


def _input_partitions(inputs: list[str]) -> list[str]:
    """The partition directories the inputs name or are in (a segment's directory)."""
    out = []
    for p in inputs:
        k = fs.kind(p)
        d = _parent(p) if k == "file" else p if k == "dir" else None
        if d is not None and _is_partition(d, _entries(d)):
            out.append(d)
    return out


def _real(path: str) -> str:
    return fs.realpath(path).rstrip("/") if is_remote(path) else os.path.realpath(path)


def check_output(out: str, inputs: Iterable[str], *, option: str = "--out", salvage: bool = False) -> None:
    """Refuse ``out`` when writing there could reach Kafka's data (see the module docstring)."""
    real_out = _real(out)
    real_inputs = [_real(p) for p in inputs]
    log_dirs = {up for up in map(_parent, _input_partitions(real_inputs)) if up is not None} if salvage else set()
    here: str | None = real_out
    while here is not None:
        k = fs.kind(here)
        if k == "file" and here == real_out:
            raise UsageError(f"{option} must be a directory, not a file", file=out)
        entries = _entries(here) if k == "dir" else []
        if _is_partition(here, entries):
            where = "is a partition directory" if here == real_out else f"is inside the partition directory {here}"
            raise UsageError(f"{where}: kdump writes no output into a partition; choose another {option}", file=out)
        if here in log_dirs or any(e.name in LOG_DIR_FILES for e in entries):
            _refuse_log_dir(out, here, real_out, option)
        here = _parent(here)
    for p in real_inputs:
        what = "is an input PATH" if p == real_out else "is inside the input PATH" if _inside(real_out, p) \
            else f"holds the input PATH {p}" if _inside(p, real_out) else None
        if what:
            raise UsageError(f"{what}: choose another {option}", file=out)
    if fs.kind(real_out) == "dir":
        _refuse_kafka_files(out, real_out, option, salvage)


def _refuse_log_dir(out: str, logdir: str, real_out: str, option: str) -> None:
    what = "is a Kafka log dir" if logdir == real_out else f"is inside the Kafka log dir {logdir}"
    raise UsageError(f"{what}: a folder there would take the log dir offline or pass for a partition; "
                     f"choose another {option}", file=out)


def _refuse_kafka_files(out: str, real_out: str, option: str, segments_ok: bool) -> None:
    """An existing output holding Kafka's files anywhere in it is never written over."""
    stack = [real_out]
    while stack:
        d = stack.pop()
        entries = _entries(d)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            elif e.name in LOG_DIR_FILES or (not segments_ok and e.name.endswith(_SEGMENT_SUFFIXES)):
                raise UsageError(f"refusing to write over {d}: it holds Kafka log files; choose another {option}",
                                 file=out)
