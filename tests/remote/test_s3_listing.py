"""``storage/s3_listing``: the pages kdump asks for itself are signed as S3 checks them (moto's
server that checks every signature), wrong keys leave the listing to pyarrow, and the keys
come from the environment, else the shared credentials file."""

from __future__ import annotations

import pytest
from servers import LOG_DIRS

from kdump.storage import s3_listing

pytestmark = pytest.mark.slow


def test_pages_are_signed_as_s3_checks_them(s3_checking_keys):
    server = s3_checking_keys
    bucket, _, prefix = server.url.partition("s3://")[2].partition("/")
    listed = s3_listing.listed(server.endpoint, "us-east-1", s3_listing.Keys(*server.keys, None), bucket, prefix + "/")
    assert listed is not None
    assert sorted(name for name, is_dir, _ in listed if is_dir) == sorted(
        p.name for p in LOG_DIRS["generated"].iterdir() if p.is_dir())
    wrong = s3_listing.Keys(server.keys[0], "wrong secret", None)
    assert s3_listing.listed(server.endpoint, "us-east-1", wrong, bucket, prefix + "/") is None


def test_keys_from_the_environment_then_the_credentials_file(tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AK1\naws_secret_access_key = S1\n\n"
                     "[other]\naws_access_key_id = AK2\naws_secret_access_key = S2\naws_session_token = T2\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    assert s3_listing.keys() == s3_listing.Keys("AK1", "S1", None)
    monkeypatch.setenv("AWS_PROFILE", "other")
    assert s3_listing.keys() == s3_listing.Keys("AK2", "S2", "T2")
    monkeypatch.setenv("AWS_PROFILE", "missing")
    assert s3_listing.keys() is None
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AK3")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3")
    assert s3_listing.keys() == s3_listing.Keys("AK3", "S3", None)
