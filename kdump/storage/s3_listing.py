"""An S3 prefix listed a page at a time (ListObjectsV2, 1,000 keys a request), with a cap on the keys.

pyarrow lists a prefix in one call that returns only when the last page has come: a server
whose pages never end holds the run, with no output, until the call's time or memory limit
(``remote.Store._watch``). Here each page is asked for, read (at most ``PAGE_BYTES``) and
reduced to the names it holds before the next is asked for, so the listing stops at the
first page past ``list_keys()`` (``KDUMP_REMOTE_LIST_KEYS``) or past ``list_timeout()``, and
says how many keys it had listed.

The requests are signed (AWS Signature Version 4) with the keys ``storage.aws_keys`` finds
(the environment, a profile's keys or credential_process, a container's role). Without such
keys (a web identity, SSO, an instance role ...) or when the first page is refused (a region redirect, no right to
list ...), ``listing`` returns None and the caller lists through pyarrow, whose credential
chain and error messages are the AWS SDK's.
"""

from __future__ import annotations

import http.client
import itertools
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import quote

from kdump.storage.aws_sign import Keys, signed
from kdump.storage.remote_settings import list_keys, list_timeout, timeout, too_many

PAGE_KEYS = 1000            # S3's own page size
PAGE_BYTES = 16 << 20       # a page of 1,000 keys is about 300 KB: more is not an S3 answer
EMPTY_PAGES = 100           # pages in a row that hold no key, yet say more follow: no S3 answers so


class Page(NamedTuple):
    entries: list[tuple[str, bool, int]]    # (name, is_dir, size) below the prefix
    next_token: str | None                  # None: the last page


class Refused(Exception):
    """The server did not answer a page as S3 does (status, body): ``str`` says how."""


class Stopped(Exception):
    """The listing was given up: past its keys or its time (``str``: which, and the setting)."""


def listed(endpoint: str | None, region: str, creds: Keys, bucket: str, prefix: str) -> list | None:
    """The (name, is_dir, size) of the keys below ``prefix``, a page at a time; Stopped past
    ``list_keys()`` keys or ``list_timeout()`` seconds, TimeoutError when a request goes
    unanswered ``timeout()`` seconds, Refused when a later page is; None when the first page is
    refused or unanswered (pyarrow then lists, and says why)."""
    pages = stream(endpoint, region, creds, bucket, prefix)
    return None if pages is None else [e for page in pages for e in page]


def stream(endpoint: str | None, region: str, creds: Keys, bucket: str, prefix: str,
           name: str = "") -> Iterator[list[tuple[str, bool, int]]] | None:
    """``listed``'s entries a page at a time, the next page asked for only when this one has
    been taken (a log dir's first partitions are checked while its later pages are still to
    come); None as ``listed``. ``name``: only the names below ``prefix`` that start with it."""
    gen = _pages(Lister(endpoint, region, creds, timeout()), bucket, prefix, name)
    try:
        first = next(gen)
    except _Fallback:
        return None
    return itertools.chain((first,), gen)


class _Fallback(Exception):
    """The first page was refused or unanswered: pyarrow lists instead."""


def _pages(lister: Lister, bucket: str, prefix: str, name: str) -> Iterator[list[tuple[str, bool, int]]]:
    cap, limit = list_keys(), list_timeout()
    deadline = time.monotonic() + limit
    pages = empty = n = 0
    try:
        for page in lister.pages(bucket, prefix, deadline, name):
            pages += 1
            n += len(page.entries)
            empty = 0 if page.entries else empty + 1
            if n > cap:
                raise Stopped(too_many(n))
            if empty >= EMPTY_PAGES:
                raise Stopped(f"answered {empty} pages in a row with no key, each saying more follow, after "
                              f"{n:,} keys")
            if time.monotonic() > deadline:
                raise TimeoutError
            yield page.entries
    except Refused as e:
        if not pages:
            raise _Fallback from None
        raise Refused(f"{e}, after {n:,} keys") from None
    except TimeoutError:
        if time.monotonic() > deadline:
            raise Stopped(f"did not end within {limit:g} s (KDUMP_REMOTE_LIST_TIMEOUT), after {n:,} keys") from None
        if not pages:       # (a proxy or firewall in the way, say: pyarrow's client may get through)
            raise _Fallback from None
        raise
    finally:
        lister.close()


class Lister:
    """ListObjectsV2 pages of one endpoint: path-style when an endpoint is given, virtual-host
    style on AWS itself (as pyarrow addresses them)."""

    def __init__(self, endpoint: str | None, region: str, creds: Keys, timeout: float) -> None:
        self.region, self.creds, self.timeout = region, creds, timeout
        if endpoint:
            scheme, _, host = endpoint.partition("://")
            self.scheme, self.host, self.virtual = (scheme, host, False) if host else ("https", scheme, False)
            self.host = self.host.rstrip("/")
        else:
            self.scheme, self.host, self.virtual = "https", f"s3.{region}.amazonaws.com", True
        self.conn: http.client.HTTPConnection | None = None

    def pages(self, bucket: str, prefix: str, deadline: float, name: str = "") -> Iterator[Page]:
        """The pages of ``bucket``'s keys below ``prefix`` ("a/b/"), one directory level deep
        (``name``: those whose name there starts with it)."""
        token = None
        try:
            while True:
                page = self.page(bucket, prefix, token, deadline, name)
                yield page
                if page.next_token is None:
                    return
                token = page.next_token
        finally:
            self.close()

    def page(self, bucket: str, prefix: str, token: str | None, deadline: float, name: str = "") -> Page:
        params = {"list-type": "2", "delimiter": "/", "max-keys": str(PAGE_KEYS), "prefix": prefix + name}
        if token is not None:
            params["continuation-token"] = token
        virtual = self.virtual and "." not in bucket
        host = f"{bucket}.{self.host}" if virtual else self.host
        path = "/" if virtual else "/" + quote(bucket, safe="-_.~")
        query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(params.items()))
        headers = signed(self.creds, self.region, "s3", "GET", host, path, query)
        body = self._get(host, path + "?" + query, headers, deadline)
        return _parse(body, prefix)

    def _get(self, host: str, target: str, headers: dict[str, str], deadline: float) -> bytes:
        if self.conn is None or self.conn.host != host.partition(":")[0]:
            self.close()
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            self.conn = cls(host, timeout=self.timeout)
        try:
            self.conn.request("GET", target, headers=headers)
            r = self.conn.getresponse()
            chunks, got = [], 0
            while chunk := r.read(1 << 16):     # each read within the socket's time limit, all within the deadline
                chunks.append(chunk)
                got += len(chunk)
                if got > PAGE_BYTES:
                    raise Refused(f"a page of more than {PAGE_BYTES >> 20} MB")
                if time.monotonic() > deadline:
                    raise TimeoutError
        except (OSError, http.client.HTTPException) as e:
            self.close()
            if isinstance(e, TimeoutError):
                raise
            raise Refused(f"{type(e).__name__}: {e}") from None
        if r.status != 200:
            raise Refused(f"HTTP {r.status} {r.reason}")
        return b"".join(chunks)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _parse(body: bytes, prefix: str) -> Page:
    """A ListObjectsV2 answer: the names below ``prefix`` (its directories without their "/")."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        raise Refused(f"not a listing ({e})") from None
    if _local(root.tag) != "ListBucketResult":
        raise Refused(f"not a listing (<{_local(root.tag)}>)")
    entries: list[tuple[str, bool, int]] = []
    truncated, token = False, None
    for child in root:
        tag = _local(child.tag)
        if tag == "Contents":
            key, size = _text(child, "Key"), _text(child, "Size")
            name = key[len(prefix):] if key.startswith(prefix) else ""
            if name:        # (not the marker object of the prefix itself)
                entries.append((name, False, int(size) if size.isdigit() else 0))
        elif tag == "CommonPrefixes":
            p = _text(child, "Prefix")
            name = p[len(prefix):].rstrip("/") if p.startswith(prefix) else ""
            if name:
                entries.append((name, True, 0))
        elif tag == "IsTruncated":
            truncated = (child.text or "").strip() == "true"
        elif tag == "NextContinuationToken":
            token = (child.text or "").strip() or None
    if truncated and token is None:
        raise Refused("a page that says more follow, without the token to ask for them")
    return Page(entries, token if truncated else None)


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _text(element: ET.Element, name: str) -> str:
    for child in element:
        if _local(child.tag) == name:
            return child.text or ""
    return ""
