"""Object stores and HDFS: the few operations kdump needs, one class per kind of store.

A remote PATH is a URL: ``s3://bucket/prefix`` (``s3a://`` too, Hadoop's name for it) or
``hdfs://namenode:port/path``. S3 goes through ``pyarrow.fs.S3FileSystem`` (native C++:
the AWS SDK's own credential chain, environment variables and ``~/.aws`` files, bounded
retries); HDFS through ``hdfs_native`` (the HDFS protocol in Rust: no JVM, no libhdfs).
Both are optional (the ``remote`` extra). The choice, and the figures behind it,
are in the README.

Every call is bounded: it runs on a daemon thread and is given up after
``KDUMP_REMOTE_TIMEOUT`` seconds (default 60), so an endpoint that does not answer ends the
run with one located error instead of hanging it. A store that cannot be used at all (no
answer, no connection, credentials or access refused) stops the run with one line
(``StoreUnusable``), not one per file; once it has, later calls to it (a -j worker's) fail at
once with the same error.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from itertools import islice
from typing import NamedTuple

from kdump.errors import InputError, RemoteError, StoreUnusable, install_hint
from kdump.storage.remote_settings import (
    LIST_MEMORY,
    LIST_POLL,
    aws_endpoint,
    list_keys,
    list_timeout,
    retries,
    timeout,
    too_many,
)
from kdump.storage.remote_settings import aws_config_value as _aws_config_value
from kdump.storage.remote_settings import rss as _rss
from kdump.storage.s3_paged import PagedListing

SCHEMES = ("s3://", "s3a://", "hdfs://")
FILE_SCHEME = "file://"


def is_remote(path: str) -> bool:
    return path.startswith(SCHEMES)


class Entry(NamedTuple):
    name: str
    is_dir: bool
    size: int


class Stat(NamedTuple):
    kind: str | None        # "file", "dir", or None (not there)
    size: int


def split(url: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a remote URL: ``s3://b/k`` -> ("s3", "b", "/k")."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not authority:
        raise RemoteError("no bucket or namenode in the URL", file=url)
    return ("s3" if scheme == "s3a" else scheme), authority, "/" + path.strip("/") if path.strip("/") else "/"


def join(url: str, name: str) -> str:
    return url + name if url.endswith("/") else url + "/" + name


_stores: dict[tuple[str, str], Store] = {}
_S3_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
           "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
_lock = threading.Lock()


# The parent's clients, never freed in a child: freeing one there waits for threads (the
# HDFS client's runtime) that were not forked, forever.
_inherited: list = []


def keep_inherited(client) -> None:
    """Keep a parent's client (or a reader holding one) alive in a forked child, never freed."""
    _inherited.append(client)


def _after_fork() -> None:
    """A -j worker makes its own clients: a client's connections and threads are its parent's."""
    global _lock
    _lock = threading.Lock()
    _inherited.extend(_stores.values())
    _stores.clear()


os.register_at_fork(after_in_child=_after_fork)


def store_for(url: str) -> tuple[Store, str]:
    """The store of a URL and the path inside it."""
    scheme, authority, path = split(url)
    # One S3 client per endpoint and credentials the environment names: a process whose
    # environment changes (a test run, an embedding program) does not reuse another's.
    key = (scheme, authority if scheme == "hdfs" else "|".join(os.environ.get(k, "") for k in _S3_ENV))
    with _lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = S3Store() if scheme == "s3" else HdfsStore(authority)
    return store, (authority + path).rstrip("/") if scheme == "s3" else path


class Store:
    """One S3 endpoint or HDFS namenode. Paths are ``bucket/key`` (S3) or ``/path`` (HDFS)."""

    where = ""
    _down: RemoteError | None = None

    def call(self, url: str, fn, *args, bounded: bool = True):
        """``fn(*args)`` within the time limit, its failures turned into a located RemoteError.
        Not ``bounded``: a call of many requests (a listing of any length), each of which the
        library bounds itself, may take up to ``list_timeout()`` and grow memory by up to
        LIST_MEMORY (``_watch``), then the time limit of one request more."""
        if self._down is not None:
            raise StoreUnusable(RemoteError(self._down.message, file=url))
        box: list = []
        done = threading.Event()

        def run() -> None:
            try:
                box.append((True, fn(*args)))
            except BaseException as e:      # noqa: BLE001 - carried to the caller's thread
                box.append((False, e))
            done.set()

        threading.Thread(target=run, daemon=True, name="kdump-remote").start()
        if not bounded:
            self._watch(url, done)
        if not done.wait(timeout()):
            self.abandon()
            raise self._no_answer(url)
        ok, value = box[0]
        return value if ok else self._failed(url, value)

    def _watch(self, url: str, done: threading.Event) -> None:
        """Wait for a call of many requests (a listing) within its whole time and memory limits."""
        start, base, limit = time.monotonic(), _rss(), list_timeout()
        while not done.wait(LIST_POLL):
            spent, grown = time.monotonic() - start, _rss() - base
            if spent > limit or grown > LIST_MEMORY:
                self.abandon()
                raise self._list_stopped(url, f"did not end within {limit:g} s (KDUMP_REMOTE_LIST_TIMEOUT)"
                                         if spent > limit else
                                         f"took {grown >> 20} MB in {spent:.0f} s, more than {LIST_MEMORY >> 20} MB")

    def _list_stopped(self, url: str, why: str) -> StoreUnusable:
        """A listing given up: the store is unusable from here on (its pages go on without end?)."""
        self._down = RemoteError(f"the listing of {url} from {self.where} {why}: its pages go on without end?",
                                 file=url)
        return StoreUnusable(RemoteError(self._down.message, file=url))

    def _no_answer(self, url: str) -> StoreUnusable:
        self._down = RemoteError(f"{self.where} did not answer within {timeout():g} s (KDUMP_REMOTE_TIMEOUT)",
                                 file=url)
        return StoreUnusable(RemoteError(self._down.message, file=url))

    def _capped(self, url: str, entries: list) -> list:
        """A whole listing's entries, refused past ``list_keys()``."""
        if len(entries) > list_keys():
            raise self._list_stopped(url, too_many(len(entries)))
        return entries

    def _failed(self, url: str, value: BaseException):
        if isinstance(value, (InputError, StoreUnusable)):
            raise value
        if isinstance(value, FileNotFoundError):
            raise InputError("cannot read: no such file or directory", file=url) from None
        err = self.explain(value)
        if err.fatal:
            self._down = err
            raise StoreUnusable(RemoteError(err.message, file=url)) from None
        raise RemoteError(err.message, file=url) from None

    def explain(self, e: BaseException) -> RemoteError:
        return RemoteError(_first_line(e))

    def abandon(self) -> None:
        """A call is stuck: the process must be able to end without waiting for it."""

    # What each kind of store answers (S3Store, HdfsStore); ``reader`` returns
    # ``read(start, length) -> bytes``, ``output_stream`` a writable stream.
    def stat(self, url: str, path: str) -> Stat:
        raise NotImplementedError

    def reader(self, url: str, path: str, size: int) -> Callable[[int, int], bytes]:
        raise NotImplementedError

    def write(self, url: str, path: str, data: bytes) -> None:
        raise NotImplementedError

    def output_stream(self, path: str):
        raise NotImplementedError

    def delete_tree(self, url: str, path: str) -> None:
        raise NotImplementedError

    def delete_file(self, url: str, path: str) -> None:
        raise NotImplementedError

    def move(self, url: str, src: str, dst: str) -> None:
        raise NotImplementedError

    def copy_tree(self, url: str, src: str, dst: str, last: str | None = None) -> None:
        raise NotImplementedError

    def list_pages(self, url: str, path: str) -> Iterator[list[Entry]]:
        """``list``'s entries a page at a time, in name order when there is more than one page
        (the S3 pages kdump asks for itself); a store that lists in one call gives one page."""
        yield self.list(url, path)

    def named(self, url: str, path: str, name: str) -> list[Entry]:
        """The entries of ``path`` whose names start with ``name``: asked for by a lister of
        more than one page (``list_pages``), which must then answer it."""
        raise NotImplementedError

    def list(self, url: str, path: str) -> list[Entry]:     # last: the name shadows list below it
        raise NotImplementedError


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip(": ")


def _fatal(message: str) -> RemoteError:
    err = RemoteError(message)
    err.fatal = True
    return err


# -- S3 ----------------------------------------------------------------------------------

class S3Store(PagedListing, Store):
    entry = Entry

    def __init__(self) -> None:
        try:
            from pyarrow import fs
        except ImportError:
            raise RemoteError("reading s3:// needs pyarrow", hint=install_hint("remote")) from None
        endpoint = aws_endpoint("s3")
        region = (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
                  or _aws_config_value("region") or "us-east-1")
        options = {"region": region, "connect_timeout": min(10.0, timeout()), "request_timeout": timeout(),
                   "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=retries())}
        self.where = "S3"
        if endpoint:
            scheme, _, host = endpoint.partition("://")
            options.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
            self.where = f"S3 endpoint {endpoint}"
        self.fs = fs.S3FileSystem(**options)
        self._fs_mod = fs
        self.endpoint, self.region = endpoint, region

    def explain(self, e: BaseException) -> RemoteError:
        text = str(e)
        for marks, message, fatal in (
                (("NO_SUCH_BUCKET",), "no such bucket", False),
                (("InvalidRange", "INVALID_RANGE", "HTTP response code: 416"),
                 "the object is shorter than when it was listed (cut or replaced while kdump read it)", False),
                (("INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "InvalidAccessKeyId",
                  "SignatureDoesNotMatch"), f"{self.where} refused the credentials", True),
                # (a HEAD request's 403 has no body: wrong keys and missing rights look the same)
                (("ACCESS_DENIED", "AccessDenied", "HTTP response code: 403"),
                 f"access denied by {self.where} (wrong or missing credentials, or no right to read it)", True),
                (("NO_SUCH_KEY", "NoSuchKey"), "the object is gone (deleted while kdump read it?)", False),
                (("curlCode: 7,", "Couldn't connect", "Could not connect"), f"cannot connect to {self.where}", True),
                (("curlCode: 28", "Timeout was reached"), f"{self.where} did not answer in time", True),
                (("curlCode: 6,", "resolve host"), f"cannot resolve the host of {self.where}", True),
                (("MISSING_AUTHENTICATION", "No credentials", "credentials"),
                 "no AWS credentials found (environment variables, ~/.aws/credentials)", True)):
            if any(m in text for m in marks):
                return _fatal(message) if fatal else RemoteError(message)
        return RemoteError(_first_line(e))

    def abandon(self) -> None:
        # pyarrow finalizes S3 at exit, waiting for requests in flight (their retries included).
        import atexit

        try:
            from pyarrow import _s3fs
            atexit.unregister(_s3fs.ensure_s3_finalized)
        except (ImportError, AttributeError):
            pass

    def stat(self, url: str, path: str) -> Stat:
        info = self.call(url, self.fs.get_file_info, path)
        kind = {self._fs_mod.FileType.File: "file", self._fs_mod.FileType.Directory: "dir"}.get(info.type)
        if kind is None and "/" in path:        # say so when it is the bucket that is missing
            bucket = self.call(url, self.fs.get_file_info, path.partition("/")[0])
            if bucket.type == self._fs_mod.FileType.NotFound:
                raise RemoteError(f"no such bucket: {path.partition('/')[0]}", file=url)
        return Stat(kind, info.size or 0 if kind == "file" else 0)

    def reader(self, url: str, path: str, size: int):
        f = self.call(url, self.fs.open_input_file, path)
        return lambda start, length: self.call(url, f.read_at, length, start)

    def write(self, url: str, path: str, data: bytes) -> None:
        def put() -> None:
            with self.fs.open_output_stream(path) as out:
                out.write(data)
        self.call(url, put)

    def output_stream(self, path: str):
        """A stream to write ``path`` (call it inside ``call``)."""
        return self.fs.open_output_stream(path)

    def delete_tree(self, url: str, path: str) -> None:
        self.call(url, self.fs.delete_dir, path)

    def delete_file(self, url: str, path: str) -> None:
        self.call(url, self.fs.delete_file, path)

    def move(self, url: str, src: str, dst: str) -> None:
        """S3 has no rename: a copy of every object, then the source deleted."""
        self.copy_tree(url, src, dst)
        self.call(url, self.fs.delete_dir, src)

    def copy_tree(self, url: str, src: str, dst: str, last: str | None = None) -> None:
        """Copy every object under ``src`` to the same name under ``dst`` (server-side); the
        one called ``last`` at the top after all the others (an export's _SUCCESS)."""
        selector = self._fs_mod.FileSelector(src, recursive=True)
        infos = self._capped(url, self.call(url, self.fs.get_file_info, selector, bounded=False))
        files = [i.path for i in infos if i.type == self._fs_mod.FileType.File]
        final = f"{src}/{last}"
        for p in sorted(files, key=lambda p: p == final):
            self.call(url, self.fs.copy_file, p, dst + p[len(src):])


# -- HDFS --------------------------------------------------------------------------------

class HdfsStore(Store):
    def __init__(self, authority: str) -> None:
        try:
            import hdfs_native
        except ImportError:
            raise RemoteError("reading hdfs:// needs hdfs-native", hint=install_hint("remote")) from None
        self.where = f"namenode {authority}"
        self.client = hdfs_native.Client(f"hdfs://{authority}")

    def explain(self, e: BaseException) -> RemoteError:
        text = _first_line(e)
        if isinstance(e, PermissionError) or "AccessControlException" in text:
            return _fatal(f"access denied by {self.where}")
        if isinstance(e, ConnectionError) or "Connection refused" in text:
            return _fatal(f"cannot connect to {self.where}")
        return RemoteError(text)

    def stat(self, url: str, path: str) -> Stat:
        try:
            st = self.call(url, self.client.get_file_info, path)
        except InputError as e:
            if isinstance(e, RemoteError):
                raise
            return Stat(None, 0)
        return Stat("dir" if st.isdir else "file", 0 if st.isdir else st.length)

    def list(self, url: str, path: str) -> list[Entry]:
        # (the client's iterator asks for the listing a batch at a time: one past the cap stops it)
        cap = list_keys()
        statuses = self.call(url, lambda: list(islice(self.client.list_status(path), cap + 1)))
        return self._capped(url, [Entry(s.path.rpartition("/")[2], s.isdir, s.length) for s in statuses])

    def reader(self, url: str, path: str, size: int):
        f = self.call(url, self.client.read, path)
        return lambda start, length: self.call(url, f.read_range, start, length)

    def write(self, url: str, path: str, data: bytes) -> None:
        def put() -> None:
            w = self.client.create(path)
            w.write(data)
            w.close()
        self.call(url, put)

    def output_stream(self, path: str):
        """A stream to write ``path`` (call it inside ``call``)."""
        return self.client.create(path)

    def delete_tree(self, url: str, path: str) -> None:
        self.call(url, self.client.delete, path, True)

    def delete_file(self, url: str, path: str) -> None:
        self.call(url, self.client.delete, path, False)

    def move(self, url: str, src: str, dst: str) -> None:
        self.call(url, self.client.rename, src, dst)
