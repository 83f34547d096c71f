"""On S3 (the moto server of tests/remote): ``--out`` is checked as a local one is,
``--overwrite`` keeps the previous complete export until the new one is complete, and the
local temporary directories of killed exports are removed by the next run."""

from __future__ import annotations

import fcntl
import os

import pytest

from support.damage import make_partition
from support.run import run_kdump

pytestmark = pytest.mark.slow
BUCKET = "kdump-out"


def _keys(client, prefix: str) -> list[str]:
    """The objects under a prefix (not the empty "dir/" markers pyarrow leaves)."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []) if not o["Key"].endswith("/"))


@pytest.fixture
def broker(s3, tmp_path):
    """A log dir uploaded as s3://kdump-out/<test>/broker-1/data (meta.properties, one partition)."""
    src = tmp_path / "data"
    make_partition(src, name="records-0")
    (src / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    prefix = f"{os.urandom(4).hex()}/broker-1/data"
    return s3.upload(BUCKET, src, prefix), s3.client(), prefix


def test_overwrite_of_the_log_dir_read_is_refused(broker):
    """Item 1: all 199 objects of the log dir were replaced by 3, one of them _SUCCESS."""
    url, client, prefix = broker
    before = _keys(client, prefix)
    r = run_kdump("export", url + "/records-0", "--out", url, "--format", "ndjson", "--overwrite")
    assert r.code == 2, r.err
    assert r.err == (f"kdump: error: {url}: is a Kafka log dir: a folder there would take the log dir offline or "
                     f"pass for a partition; choose another --out\n")
    r = run_kdump("export", url + "/records-0", "--out", url.rpartition("/")[0], "--format", "ndjson", "--overwrite")
    assert r.code == 2 and r.err.endswith(f"holds the input PATH {url}/records-0: choose another --out\n"), r.err
    r = run_kdump("export", url + "/records-0", "--out", url + "/exported", "--format", "ndjson")
    assert r.code == 2 and f"is inside the Kafka log dir {url}" in r.err, r.err
    assert _keys(client, prefix) == before and len(before) == 14


def test_overwrite_keeps_the_old_export_until_the_new_one_is_complete(broker, tmp_path):
    from kdump.export.remote_out import staged_remote

    url, client, prefix = broker
    out = url.rpartition("/")[0].rpartition("/")[0] + "/exported"
    out_prefix = prefix.split("/")[0] + "/exported"
    assert run_kdump("export", url, "--out", out, "--format", "ndjson").code == 0
    first = {k: client.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in _keys(client, out_prefix)}
    assert out_prefix + "/_SUCCESS" in first
    with pytest.raises(RuntimeError):       # a run that fails half-way (as one killed)
        with staged_remote(out, True, [url]) as target:
            client.put_object(Bucket=BUCKET, Key=target.partition(f"{BUCKET}/")[2] + "/part", Body=b"new")
            raise RuntimeError
    now = {k: client.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in _keys(client, prefix.split("/")[0])
           if not k.startswith(prefix)}
    assert now == first             # the old export whole, and no staging left beside it
    make_partition(tmp_path / "more", name="other-1")
    r = run_kdump("export", str(tmp_path / "more"), "--out", out, "--format", "ndjson", "--overwrite")
    assert r.code == 0, r.err
    keys = [k for k in _keys(client, prefix.split("/")[0]) if not k.startswith(prefix)]
    assert keys == [f"{out_prefix}/_SUCCESS", f"{out_prefix}/topic=other/partition=1/part-00000.ndjson"]


def test_a_staging_left_by_a_killed_commit_is_kept_until_a_run_completes(broker):
    from kdump.export.remote_out import INCOMPLETE, staging_name

    url, client, prefix = broker
    top = prefix.split("/")[0]
    out = f"s3://{BUCKET}/{top}/x"
    # killed while copying a complete staged export into `out`: `out` is partial, the staging whole
    staging = f"{top}/{staging_name('x')}"
    client.put_object(Bucket=BUCKET, Key=f"{staging}/part", Body=b"complete")
    client.put_object(Bucket=BUCKET, Key=f"{staging}/_SUCCESS", Body=b"")
    client.put_object(Bucket=BUCKET, Key=f"{top}/x/{INCOMPLETE}", Body=b"")
    other = f"{top}/{staging_name('x.y')}/part"
    client.put_object(Bucket=BUCKET, Key=other, Body=b"x.y's")
    r = run_kdump("export", url, "--out", out, "--format", "ndjson")
    assert r.code == 0, r.err
    keys = [k for k in _keys(client, top) if not k.startswith(prefix)]
    assert keys == sorted([other, f"{top}/x/_SUCCESS", f"{top}/x/topic=records/partition=0/part-00000.ndjson"])


def test_local_temporary_directories_of_killed_exports_are_removed(broker, tmp_path, monkeypatch):
    """``kill -9`` during an S3 export left /tmp/kdump-export-* behind."""
    url, client, prefix = broker
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setenv("KDUMP_SPOOL_DIR", str(spool))
    (spool / "kdump-export-dead").mkdir()
    (spool / "kdump-export-dead" / "part-00000.ndjson").write_text("{}\n")
    (spool / "kdump-export-live").mkdir()
    fd = os.open(spool / "kdump-export-live", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)          # a running export's
        r = run_kdump("export", url, "--out", f"s3://{BUCKET}/{prefix.split('/')[0]}/t", "--format", "ndjson")
        assert r.code == 0, r.err
        assert sorted(p.name for p in spool.iterdir()) == ["kdump-export-live"]
    finally:
        os.close(fd)
