"""``clean``: no AWS settings but the test's own (credentials and config files in
``tmp_path``), no instance metadata service, nothing kept from an earlier lookup."""

from __future__ import annotations

import os

import pytest

from kdump.storage import aws_keys


@pytest.fixture
def clean(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(aws_keys, "_kept", {})
    return tmp_path
