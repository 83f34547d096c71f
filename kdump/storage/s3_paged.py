"""``S3Store``'s listing (mixed into ``storage.remote.S3Store``): a page at a time through
kdump's own client (``storage.s3_listing``) when ``storage.aws_keys`` finds keys, each
failure one located line; else pyarrow's one call, capped when it returns."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kdump.errors import InputError, RemoteError, StoreUnusable


class PagedListing:
    # what S3Store gives it
    entry: Callable[..., Any]
    _down: RemoteError | None
    where: str
    endpoint: str | None
    region: str
    fs: Any
    _fs_mod: Any
    call: Callable[..., Any]
    _capped: Callable[[str, list], list]
    _list_stopped: Callable[[str, str], StoreUnusable]
    _no_answer: Callable[[str], StoreUnusable]

    def _paged(self, url: str, path: str, name: str = "") -> Iterator[list] | None:
        """``s3_listing.stream``'s pages as entries, its failures as one located line each; None
        when it leaves the listing to pyarrow (no keys at hand, the first page refused)."""
        # (http, ssl, xml, email: imported by a listing, not by every local run)
        from kdump.storage import aws_keys, s3_listing

        if self._down is not None:
            raise StoreUnusable(RemoteError(self._down.message, file=url))
        creds = aws_keys.keys(self.region)
        if creds is None:
            return None
        bucket, _, key = path.partition("/")
        try:
            pages = s3_listing.stream(self.endpoint, self.region, creds, bucket, key + "/" if key else "", name)
        except (s3_listing.Stopped, TimeoutError, s3_listing.Refused) as e:
            raise self._listing_failed(url, e) from None
        return None if pages is None else self._entries(url, pages)

    def _entries(self, url: str, pages) -> Iterator[list]:
        from kdump.storage import s3_listing

        try:
            for page in pages:
                yield [self.entry(*e) for e in page]
        except (s3_listing.Stopped, TimeoutError, s3_listing.Refused) as e:
            raise self._listing_failed(url, e) from None

    def _listing_failed(self, url: str, e: Exception) -> InputError | StoreUnusable:
        from kdump.storage import s3_listing

        if isinstance(e, s3_listing.Stopped):
            return self._list_stopped(url, str(e))
        if isinstance(e, TimeoutError):
            return self._no_answer(url)
        return RemoteError(f"the listing from {self.where} failed: {e}", file=url)

    def list_pages(self, url: str, path: str) -> Iterator[list]:
        # A page at a time (s3_listing) when the keys are at hand, else through pyarrow: one call
        # of a request per 1,000 keys, each bounded by the AWS SDK (request_timeout, retries).
        paged = self._paged(url, path)
        if paged is None:
            yield self._listed_by_pyarrow(url, path)
        else:
            yield from paged

    def named(self, url: str, path: str, name: str) -> list:
        paged = self._paged(url, path, name)
        if paged is None:
            return [e for e in self._listed_by_pyarrow(url, path) if e.name.startswith(name)]
        return [e for page in paged for e in page]

    def _listed_by_pyarrow(self, url: str, path: str) -> list:
        selector = self._fs_mod.FileSelector(path, recursive=False)
        infos = self.call(url, self.fs.get_file_info, selector, bounded=False)
        directory = self._fs_mod.FileType.Directory
        return self._capped(url, [self.entry(i.base_name, i.type == directory, i.size or 0) for i in infos])

    def list(self, url: str, path: str) -> list:     # last: the name shadows list below it
        return [e for page in self.list_pages(url, path) for e in page]
