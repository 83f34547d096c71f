"""``verify DIR``: a log dir's partition dirs are listed by whoever checks them.

One directory PATH is walked a level at a time (``storage.levels.walk``): its own files, then
its partition dirs, each listed in the process that checks it (a worker with ``-j``), then
the dirs that may hold more log dirs. The output must be what listing everything first gives
(``verify DIR DIR`` still does that: several PATHs are listed first to be checked once), at
``-j 1`` and ``-j 2``, and the first report must not wait for the last partition's listing.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

import kdump.storage.levels as L
import kdump.storage.logdir as K
from kdump import encode as build
from kdump.errors import InputError
from support.damage import FIXTURES
from support.run import run_kdump


def _nested_tree(root: Path) -> Path:
    """Partitions, log dirs named like partitions (``kafka-1``), other dirs, an empty
    partition dir, a leftover, an index without its segment, and the log dir's own file."""
    seg = build.build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")], base_offset=0)
    for d in ("kafka-1/orders-0", "kafka-1/orders-1", "kafka-0/a-3", "t-2", "t-10", "t-1", "z-0.abcd", "y"):
        (root / d).mkdir(parents=True)
        (root / d / "00000000000000000000.log").write_bytes(seg)
    (root / "t-1" / "00000000000000000000.log.deleted").write_bytes(seg)
    (root / "t-10" / "00000000000000000005.index").write_bytes(b"")
    (root / "empty-4").mkdir()
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt-1 0\n")
    return root


DIRS = [FIXTURES / "generated", FIXTURES / "real", FIXTURES / "broker" / "all-shapes"]


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("which", ["generated", "real", "broker", "nested"])
def test_one_dir_walked_gives_what_listing_first_gives(which, fmt, tmp_path):
    path = str(_nested_tree(tmp_path) if which == "nested" else dict(zip(["generated", "real", "broker"], DIRS))[which])
    first = run_kdump("verify", "--format", fmt, path, path, "-j", "1")     # two PATHs: listed first
    for jobs in ("1", "2"):
        walked = run_kdump("verify", "--format", fmt, path, "-j", jobs)
        assert (walked.code, walked.out, walked.err) == (first.code, first.out, first.err)
    assert first.out.count("\n") > 5


def test_nested_log_dirs_come_in_the_order_of_the_listing(tmp_path):
    root = _nested_tree(tmp_path)
    out = run_kdump("verify", "--format", "text", str(root), "-j", "2").out
    names = [os.path.relpath(line.split(":")[0], root) for line in out.splitlines() if line.startswith(str(root))]
    assert names == [os.path.relpath(f.path, root) for f in L.resolve([str(root)])]
    assert names[:4] == ["recovery-point-offset-checkpoint", "t-1/00000000000000000000.log",
                         "t-1/00000000000000000000.log.deleted", "t-2/00000000000000000000.log"]
    assert names[-1] == "z-0.abcd/00000000000000000000.log"


def test_the_first_report_does_not_wait_for_every_listing(tmp_path, monkeypatch):
    root = _nested_tree(tmp_path)
    events = []
    real = L.list_pending

    def listing(p):
        events.append(("list", os.path.basename(p.directory)))
        return real(p)

    class Stream(io.StringIO):
        def write(self, s):
            events.append(("write", s.split(":")[0].rsplit("/", 2)[-2] if "/" in s else s[:10]))
            return super().write(s)

    monkeypatch.setattr(L, "list_pending", listing)
    run_kdump("verify", "--format", "text", str(root), "-j", "1", out=Stream())
    lists = [i for i, e in enumerate(events) if e[0] == "list"]
    writes = [i for i, e in enumerate(events) if e == ("write", "t-1")]
    assert writes and writes[0] < lists[-1]
    assert events.index(("list", "t-2")) > writes[0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_partition_dir_that_cannot_be_listed_is_reported_and_the_rest_checked(tmp_path, monkeypatch, jobs):
    root = _nested_tree(tmp_path)
    real = K.list_directory

    def scandir(directory):
        if os.path.basename(directory) == "t-2":
            raise InputError("cannot list directory: Permission denied", file=directory)
        return real(directory)

    monkeypatch.setattr(K, "list_directory", scandir)
    r = run_kdump("verify", "--format", "text", str(root), "-j", jobs)
    assert r.code == 3
    assert f"kdump: error: {root}/t-2: cannot list directory: Permission denied\n" in r.err
    assert f"{root}/t-10/00000000000000000000.log: ok" in r.out
    assert f"{root}/t-1/00000000000000000000.log: ok" in r.out
    assert f"{root}/t-2/" not in r.out          # (tmp_path itself may hold "t-2/": pytest-2/)


def test_a_dir_of_empty_partition_dirs_has_nothing_to_verify(tmp_path):
    for d in ("a-0", "a-1", "kafka-2/b-0"):
        (tmp_path / d).mkdir(parents=True)
    for jobs in ("1", "2"):
        r = run_kdump("verify", str(tmp_path), "-j", jobs)
        assert r.code == 2
        assert r.out == ""
        assert r.err == (f"kdump: error: {tmp_path}: no Kafka log files of the kind this command reads were found "
                         "here\n")                     # no "verified 0 files" after it
