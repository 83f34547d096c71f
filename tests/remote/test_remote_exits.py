"""Exits on S3: ``info`` said damage (1) when a segment was gone or cut short after it
was listed; it could not complete (3), as verify says."""

from __future__ import annotations

import pytest
from servers import LOG_DIRS

from support.run import run_kdump

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("change", ["deleted", "truncated"])
def test_info_on_an_object_changed_while_read_could_not_complete(s3, change, jobs, monkeypatch):
    from kdump.storage import fs

    url = s3.upload("kdump-logs", LOG_DIRS["generated"] / "headers-0", f"info-{change}-{jobs}/headers-0")
    key = url.partition("kdump-logs/")[2] + "/00000000000000000000.log"
    client = s3.client()
    listed = fs.scan_pages

    def list_then_change(directory):
        pages = list(listed(directory))
        if change == "deleted":
            client.delete_object(Bucket="kdump-logs", Key=key)
        else:
            client.put_object(Bucket="kdump-logs", Key=key, Body=b"\0" * 100)
        yield from pages

    monkeypatch.setattr(fs, "scan_pages", list_then_change)
    r = run_kdump("info", "-j", jobs, url)
    assert r.code == 3, r.err
    message = "cannot read: no such file or directory" if change == "deleted" else \
        "the object ends at byte 100, before its listed size 2859 (cut or replaced while kdump read it)"
    assert f"{url}/00000000000000000000.log" in r.err and message in r.err, r.err
    assert "Traceback" not in r.err
