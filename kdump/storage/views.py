"""Segments whose stored bytes are not the segment: a remote layout's chunked, compressed or
encrypted ``.log`` objects (Aiven's), read as the segment they hold.

A layout registers each such object's path with what it takes to read it (``register``); the
mapped-file opener (``kdump.storage.mapped``) then asks ``spool`` for a local buffer of the
original bytes instead of mapping the object. The registry is plain data (paths and the
key ring's path, never keys), so a Spark task is handed it (``table``/``install``, after
importing the layout's module, which names its reader with ``reader_for``) and reads its
remote ranges itself.
"""

from __future__ import annotations

import threading
from typing import NamedTuple


class View(NamedTuple):
    layout: str                 # which layout reads it ("aiven"; "alias": kdump.storage.remote_parts)
    manifest: str               # the path or URL of its manifest object
    keyring: str | None         # the key ring file an encrypted segment needs
    target: str | None = None   # the object whose bytes these are, when not at the registered path
    position: int = 0           # where in ``target`` they start (a piece of Aiven's .indexes object)
    size: int = 0               # and how many there are


_views: dict[str, View] = {}
_spools: dict[str, object] = {}     # the newest few, by path: each holds a local copy on disk
KEEP = 8                            # (a remote segment checked with its side files opens six)
_lock = threading.RLock()           # (an alias's spool asks for its target's)


_makers: dict = {}                  # layout -> its spool class (the layout module registers it)
_streamers: dict = {}               # layout -> its buffer for one forward walk, if it has one
_besides: dict = {}                 # layout -> (path, view, suffix) -> the path of a side file, or None


def reader_for(layout: str, maker, streamer=None, beside=None) -> None:
    _makers[layout] = maker
    if streamer is not None:
        _streamers[layout] = streamer
    if beside is not None:
        _besides[layout] = beside


def register(path: str, view: View) -> None:
    with _lock:
        if _views.get(path, view) != view:      # (another key ring, another piece): made again
            old = _spools.pop(path, None)
            if old is not None:
                old.close()         # type: ignore[attr-defined]
        _views[path] = view


def has(path: str) -> bool:
    return path in _views


def table() -> dict[str, View]:
    return dict(_views)


def install(views: dict[str, View]) -> None:
    _views.update(views)


def spool(path: str):
    """The local buffer of a registered object's original bytes (a Spool: ``size``, ``fd``,
    ``need``, ``read``), made once per process; None for a path no layout registered."""
    view = _views.get(path)
    if view is None:
        return None
    with _lock:
        s = _spools.get(path)
        if s is None:
            s = _spools[path] = _makers[view.layout](path, view)
            while len(_spools) > KEEP:
                _spools.pop(next(iter(_spools))).close()      # type: ignore[attr-defined]
        return s


def stream(path: str):
    """A buffer of a registered object's original bytes for one reader walking it forward (its
    own, never shared: ``need(start, end)`` before reading, ``follow`` frees what is behind), or
    None where its layout has none (then ``spool``)."""
    view = _views.get(path)
    maker = None if view is None else _streamers.get(view.layout)
    return None if maker is None else maker(path, view)


def beside(path: str, suffix: str) -> str | None:
    """The path of a registered object's side file (its ``.index``) where its layout keeps it
    elsewhere than beside it, or None."""
    view = _views.get(path)
    find = None if view is None else _besides.get(view.layout)
    return None if find is None else find(path, view, suffix)
