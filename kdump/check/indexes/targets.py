"""Which index files ``kdump index`` / ``kdump timeindex`` work on for a PATH, each with the
segment it belongs to (it may be missing: then it is reported, never created)."""

from __future__ import annotations

from typing import NamedTuple

from kdump.errors import KdumpError, NothingToDoError, UnknownFileKindError
from kdump.storage import fs
from kdump.storage.levels import expand
from kdump.storage.logdir import INDEX, LOG, TIMEINDEX, TXNINDEX, LogFile
from kdump.storage.names import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    TXNINDEX_SUFFIX,
    segment_file,
    segment_stem,
)

EXT = {INDEX: INDEX_SUFFIX, TIMEINDEX: TIMEINDEX_SUFFIX, TXNINDEX: TXNINDEX_SUFFIX, LOG: LOG_SUFFIX}


class Item(NamedTuple):
    """One index file to work on (it may be missing) and the segment it belongs to."""

    kind: str
    path: str
    log: str | None          # the .log it indexes; None for a .txnindex listing
    base_offset: int
    explicit: bool


def _sibling(f: LogFile, kind: str) -> str:
    if f.leftover is None and f.kind in EXT:    # the usual name: swap the extension (15,000 a log dir)
        return segment_file(f.path[:-len(EXT[f.kind])], EXT[kind])
    stem, leftover = segment_stem(f.path)
    return segment_file(stem, EXT[kind], leftover)


def _log_of(f: LogFile) -> str:
    """The .log an index belongs to; a cleaner leftover may sit beside a .log.swap or .log.cleaned."""
    first = _sibling(f, LOG)
    if f.leftover in (CLEANED_SUFFIX, SWAP_SUFFIX) and not fs.exists(first):
        stem, _ = segment_stem(f.path)
        for other in (SWAP_SUFFIX, CLEANED_SUFFIX):
            candidate = segment_file(stem, LOG_SUFFIX, other)
            if fs.exists(candidate):
                return candidate
    return first


def _item(f: LogFile, kind: str, explicit: bool) -> Item:
    base = f.base_offset if f.base_offset is not None else 0
    if kind == TXNINDEX:
        return Item(kind, f.path, _log_of(f), base, explicit)
    if f.kind == LOG:
        return Item(kind, _sibling(f, kind), f.path, base, explicit)
    return Item(kind, f.path, _log_of(f), base, explicit)


def items_for(path: str, kind: str, jobs: int = 1, errors: list[KdumpError] | None = None) -> list[Item]:
    """The index files of ``kind`` a PATH stands for (txnindex too for ``kdump index``); a log
    dir's thousands of partitions are listed by ``jobs`` processes. ``errors``: where the
    partition dirs that cannot be listed go (``levels.expand``)."""
    files = expand(path, jobs, errors)
    if not fs.isdir(path):
        f = files[0]
        if f.kind in (kind, LOG):
            return [_item(f, kind, True)]
        if f.kind == TXNINDEX and kind == INDEX:
            return [_item(f, TXNINDEX, True)]
        other = "kdump timeindex" if f.kind == TIMEINDEX else "kdump index" if f.kind in (INDEX, TXNINDEX) else None
        hint = f"use {other} for it" if other else None
        raise UnknownFileKindError(f"kdump {kind} does not read {f.kind.replace('_', ' ')} files", file=path,
                                   hint=hint)
    out: list[Item] = []
    seen: set[str] = set()
    for f in files:
        item = None
        if f.kind == LOG:
            sibling = _sibling(f, kind)
            if f.leftover is None or fs.exists(sibling):
                item = _item(f, kind, False)
        elif f.kind == kind or (f.kind == TXNINDEX and kind == INDEX):
            item = _item(f, f.kind, False)
        if item is not None and item.path not in seen:
            seen.add(item.path)
            out.append(item)
    if not out and not errors:
        raise NothingToDoError(f"no log segments or {EXT[kind]} files found here", file=path)
    return out


def segments_for(path: str) -> list[str]:
    """The live ``.log`` files a PATH stands for (what --rebuild works on)."""
    from kdump.check.indexes.forward_pass import segment_log_path

    files = expand(path)
    if not fs.isdir(path):
        f = files[0]
        if f.kind not in (LOG, INDEX, TIMEINDEX, TXNINDEX):
            raise UnknownFileKindError(f"cannot rebuild indexes from a {f.kind.replace('_', ' ')} file", file=path)
        return [segment_log_path(f.path)]
    logs = [f.path for f in files if f.kind == LOG and f.leftover is None]
    if not logs:
        raise NothingToDoError("no live log segments found here", file=path)
    return logs
