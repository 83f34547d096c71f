"""A folder in a log dir that is not a partition (``export --out LOGDIR/exported``, ``lost+found``):
``LogManager.loadLogs`` asks ``LocalLog.parseTopicPartitionName`` of every folder, and the
KafkaException it throws is not the IOException loadLogs catches, so the broker does not start.
``verify`` reports each such folder on the log dir's ``meta.properties`` (damage, exit 1)."""

from __future__ import annotations

import pytest

from kdump.storage.names import broker_rejects_dir
from support.run import run_kdump  # noqa: E402

META = "version=1\nnode.id=1\ncluster.id=abc\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n"


def _log_dir(tmp_path, *folders: str):
    d = tmp_path / "ld"
    (d / "t-0").mkdir(parents=True)
    (d / "t-0" / "00000000000000000000.log").write_bytes(b"")
    (d / "meta.properties").write_text(META)
    for name in folders:
        (d / name).mkdir()
    return d


def test_a_folder_that_is_not_a_partition_is_damage(tmp_path, monkeypatch):
    d = _log_dir(tmp_path, "exported", "remote-log-index-cache", "t-1.0123456789abcdef0123456789abcdef-delete")
    monkeypatch.chdir(tmp_path)
    r = run_kdump("verify", "ld")
    assert r.code == 1, r.err
    assert r.out.splitlines() == [
        f"ld/meta.properties: damaged, {len(META)} bytes",
        "  logdir_foreign_dir: the folder 'exported' in this log dir is not in the form of topic-partition: a broker "
        "does not start until it is moved out of the log dir",
        "ld/t-0/00000000000000000000.log: ok, 0 batches, 0 records, offsets -, 0 bytes",
    ]
    assert r.err == "kdump: verified 2 files (1 segment, 0 bytes): 1 ok, 1 damaged, 0 torn tail, 0 unreadable\n"
    (d / "exported").rmdir()
    ok = run_kdump("verify", "ld")
    assert ok.code == 0 and "logdir_foreign_dir" not in ok.out, ok.out


@pytest.mark.parametrize("name, rejected", [
    ("t-0", False), ("a-b-3", False), ("t-+1", False), ("__cluster_metadata-0", False),
    ("remote-log-index-cache", False), ("t-0.0123456789abcdef0123456789abcdef-future", False),
    ("exported", True), ("lost+found", True), ("t-x", True), ("t-", True), ("-0", True),
    ("t-99999999999", True), ("t--delete", True), ("t-0.x y-stray", True),
])
def test_the_names_a_broker_parses(name, rejected):
    """``parseTopicPartitionName``: a '-', the suffixed forms matching their pattern, a topic
    and an ``Integer.parseInt`` partition."""
    assert broker_rejects_dir(name) is rejected
