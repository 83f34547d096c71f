"""The questions the readers ask of a path, for local paths and remote URLs alike.

A local path goes straight to ``os`` (one prefix test more per call); a remote URL
(``kdump.storage.remote``) is answered from the listing of its parent when that was made
(a log dir's files are listed once, not asked about one by one), else from the store.
Remote stores are read-only for kdump's repairs: ``refuse_remote`` says so in one line.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from stat import S_ISDIR

from kdump.errors import UsageError
from kdump.storage import remote, views
from kdump.storage.remote import Entry, Stat, is_remote

# The listings of the last directories listed (a partition's files, asked about one by one
# next): a few thousand, not every directory of a run; None for a listing of more than one page
# (a dir, its names not kept).
_listings: OrderedDict[str, dict[str, Entry] | None] = OrderedDict()
LISTINGS_KEPT = 4096


def local_path(path: str) -> str:
    """``file:///x`` -> ``/x``; anything else as given."""
    if path.startswith(remote.FILE_SCHEME):
        rest = path[len(remote.FILE_SCHEME):]
        return rest if rest.startswith("/") else "/" + rest.partition("/")[2]
    return path


def _trim(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rstrip('/')}"


def stat(url: str) -> Stat:
    url = _trim(url)
    if url in _listings:        # listed moments ago: asking again costs requests (a HEAD, a listing)
        return Stat("dir", 0)
    parent, _, name = url.rpartition("/")
    listed = _listings.get(parent)
    if listed is not None:
        e = listed.get(name)
        return Stat(None, 0) if e is None else Stat("dir" if e.is_dir else "file", e.size)
    store, path = remote.store_for(url)
    return store.stat(url, path)


class RemoteEntry:
    """What ``os.scandir`` yields, for one name of a remote listing."""

    __slots__ = ("name", "path", "_dir", "size")

    def __init__(self, directory: str, e: Entry) -> None:
        self.name = e.name
        self.path = remote.join(directory, e.name)
        self._dir = e.is_dir
        self.size = e.size

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return not self._dir

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return self._dir

    def is_symlink(self) -> bool:
        return False


def scandir(directory: str) -> list:
    """The entries of a directory, local (``os.DirEntry``) or remote."""
    if not is_remote(directory):        # (one page: no generator, once a partition dir)
        with os.scandir(directory) as it:
            return list(it)
    return [e for page in scan_pages(directory) for e in page]


def scan_pages(directory: str) -> Iterator[list]:
    """``scandir``'s entries a page at a time: a remote listing of more than one page comes
    in name order, each page asked for when the one before has been taken; a local
    directory, or a store that lists in one call, is one page."""
    if not is_remote(directory):
        with os.scandir(directory) as it:
            yield list(it)
        return
    url = _trim(directory)
    store, path = remote.store_for(url)
    pages = store.list_pages(url, path)
    first = next(pages, [])
    second = next(pages, None)
    if second is None:          # the usual directory: kept, for the questions about its files
        _keep(url, first)
        yield [RemoteEntry(url, e) for e in first]
        return
    _remember(_listings, url, None)     # a dir, its names not kept
    yield [RemoteEntry(url, e) for e in first]
    yield [RemoteEntry(url, e) for e in second]
    for page in pages:
        yield [RemoteEntry(url, e) for e in page]


def named(directory: str, name: str) -> list:
    """The entries of a remote directory whose names start with ``name`` (what a listing of
    more than one page has not reached yet: a log dir's own files)."""
    url = _trim(directory)
    store, path = remote.store_for(url)
    return [RemoteEntry(url, e) for e in store.named(url, path, name)]


def _keep(url: str, entries: list[Entry]) -> None:
    _remember(_listings, url, {e.name: e for e in entries})


def _remember(kept: OrderedDict, url: str, value) -> None:
    kept[url] = value
    kept.move_to_end(url)
    while len(kept) > LISTINGS_KEPT:
        kept.popitem(last=False)


def kind(path: str) -> str | None:
    """"dir", "file" (anything else that is there) or None: what ``exists`` then ``isdir``
    tell, in one question (for a URL, one round of requests instead of two)."""
    if is_remote(path):
        return stat(path).kind
    try:
        return "dir" if S_ISDIR(os.stat(path).st_mode) else "file"
    except (OSError, ValueError):
        return None


def exists(path: str) -> bool:
    return stat(path).kind is not None if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
    return stat(path).kind == "dir" if is_remote(path) else os.path.isdir(path)


def isfile(path: str) -> bool:
    return stat(path).kind == "file" if is_remote(path) else os.path.isfile(path)


def getsize(path: str) -> int:
    if views.has(path):         # a layout's view of an object (kdump.storage.views)
        return views.spool(path).size
    if not is_remote(path):
        return os.path.getsize(path)
    st = stat(path)
    if st.kind != "file":
        raise FileNotFoundError(path)
    return st.size


def abspath(path: str) -> str:
    return _trim(path) if is_remote(path) else os.path.abspath(path)


def realpath(path: str) -> str:
    return _trim(path) if is_remote(path) else os.path.realpath(path)


def normpath(path: str) -> str:
    return _trim(path) if is_remote(path) else os.path.normpath(path)


def refuse_remote(paths, what: str) -> None:
    """A writing command given a remote PATH: one line, exit status 2."""
    for p in paths:
        if is_remote(p):
            raise UsageError(f"{what} writes beside the files it repairs, and a remote store cannot be changed "
                             "in place (no truncate, no rename): copy the log dir to a local disk first", file=p)
