"""A tiered partition whose remote store is on hdfs:// (the MiniDFSCluster the other tests
share): LocalTieredStorage's tree uploaded there, its metadata in the local log dir
(tests/support/tiered.py). verify finds nothing wrong, then names a segment deleted there by
its hdfs:// path; dump reads every offset once, the remote ones from the cluster."""

from __future__ import annotations

import json

import pytest

from kdump.encode import build_v2_batch
from kdump.format.index import encode_index
from support.run import run_kdump
from support.tiered import offload

pytestmark = pytest.mark.slow


def _segments(d, per_segment: int = 20, count: int = 3) -> list:
    """``count`` segments of ``per_segment`` one-record batches (leader epoch 3), with .index files."""
    d.mkdir(parents=True)
    out = []
    for s in range(count):
        base, data, entries = s * per_segment, b"", []
        for i in range(per_segment):
            if i % 5 == 0:
                entries.append((base + i, len(data)))
            data += build_v2_batch([(0, 1000 + base + i, b"k%d" % (base + i), b"v" * 100)], base_offset=base + i,
                                   partition_leader_epoch=3)
        (d / f"{base:020d}.log").write_bytes(data)
        (d / f"{base:020d}.index").write_bytes(encode_index(entries, base))
        out.append(d / f"{base:020d}.log")
    return out


def test_tiered_partition_on_hdfs(hdfs, tmp_path):
    logs = _segments(tmp_path / "src")
    logdir = tmp_path / "logs"
    offload("tiered", logs[:2], 40, logdir, tmp_path / "rsm")
    part = logdir / "tiered-0"
    (part / logs[2].name).write_bytes(logs[2].read_bytes())
    (part / logs[2].with_suffix(".index").name).write_bytes(logs[2].with_suffix(".index").read_bytes())
    url = hdfs.upload(tmp_path / "rsm", "tiered-rsm")
    r = run_kdump("verify", str(logdir), "--remote-storage", url, "--problems")
    assert (r.code, r.out) == (0, ""), r.out + r.err
    assert "kdump: tiered-0: 2 live remote segments, 1 local; 0 tiered problems" in r.err.splitlines()
    r = run_kdump("dump", str(part), "--remote-storage", url, "--records", "--json")
    assert r.code == 0, r.err
    batches = [json.loads(line) for line in r.out.splitlines()]
    assert [rec["offset"] for b in batches for rec in b["records"]] == list(range(60))
    remote = f"{url}/kafka-tiered-storage/tiered-0-"
    assert sorted({b["file"] for b in batches if b["file"].startswith(remote)}) == [
        f"{remote}Uj5wn_FqTXirEASvVZRY1w/{logs[i].name[:20]}-{sid}.log"
        for i, sid in enumerate(("surWMNpmXk5bl_Ry5tkAEA", "surWMNpmXk5bl_Ry5tkBEA"))]
    import hdfs_native

    gone = (f"/tiered-rsm/kafka-tiered-storage/tiered-0-Uj5wn_FqTXirEASvVZRY1w/"
            f"{logs[1].name[:20]}-surWMNpmXk5bl_Ry5tkBEA.log")
    hdfs_native.Client(hdfs.url).delete(gone)
    r = run_kdump("verify", str(logdir), "--remote-storage", url, "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert r.code == 1
    assert [(f["kind"], f["file"], f["offset"]) for f in found] == [
        ("remote_segment_missing", f"{hdfs.url}{gone}", 20)]
