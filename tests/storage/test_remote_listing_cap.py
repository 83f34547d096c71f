"""An HDFS listing that never ends stops one name past KDUMP_REMOTE_LIST_KEYS (the client's
iterator is read no further), with the one line an S3 listing gives."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from kdump.errors import StoreUnusable
from kdump.storage import remote


class _EndlessClient:
    def __init__(self) -> None:
        self.read = 0

    def list_status(self, path: str):
        for i in itertools.count():
            self.read += 1
            yield SimpleNamespace(path=f"{path}/f-{i}", isdir=False, length=1)


def test_an_endless_hdfs_listing_stops_past_its_key_limit(monkeypatch):
    monkeypatch.setenv("KDUMP_REMOTE_LIST_KEYS", "1000")
    store = object.__new__(remote.HdfsStore)
    store.where, store.client = "namenode nn:8020", _EndlessClient()
    with pytest.raises(StoreUnusable) as e:
        store.list("hdfs://nn:8020/logs", "/logs")
    assert e.value.error.message == ("the listing of hdfs://nn:8020/logs from namenode nn:8020 listed 1,001 keys, more "
                                     "than 1,000 (KDUMP_REMOTE_LIST_KEYS raises the limit for a prefix this large): "
                                     "its pages go on without end?")
    assert store.client.read == 1001
