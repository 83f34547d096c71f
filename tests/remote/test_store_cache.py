"""One S3 client per endpoint the environment names: a process that runs kdump twice with
another endpoint (as the test suite does, one moto server after another) does not reach the
first one's dead port."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")


def test_the_s3_client_follows_the_endpoint(monkeypatch):
    from kdump.storage.remote import store_for

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    first, path = store_for("s3://bucket/key")
    assert path == "bucket/key" and "127.0.0.1:1" in first.where
    assert store_for("s3://other/key")[0] is first          # the same endpoint: the same client
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    second, _ = store_for("s3://bucket/key")
    assert second is not first and "127.0.0.1:2" in second.where
