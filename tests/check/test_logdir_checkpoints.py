"""The run's one reading of a log dir's checkpoints: the shortcut for the file a broker writes
reads what the reference (``checkpoint_entries``) reads, and a run reads each file once."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from kdump.check import side_file_views
from kdump.check.side_file_views import checkpoint_entries, offset_table
from kdump.errors import KdumpError
from support.run import run_kdump

ROLLED = Path(__file__).resolve().parents[2] / "fixtures" / "broker" / "all-shapes" / "rolled-0"
NAME = "recovery-point-offset-checkpoint"
KEEP = {("t", 0), ("t", 1), ("a.b-c", 7), ("é", 2), ("t", 10)}


def _reference(path: str, keep: set) -> tuple:
    """(the table of ``keep``'s partitions, the entries of the others)."""
    table, absent = {}, {}
    try:
        for e in checkpoint_entries(path, NAME):
            (table if (e.topic, e.partition) in keep else absent)[(e.topic, e.partition)] = e.offset
    except KdumpError as e:
        return type(e), e.message, e.position
    return table, absent


def _shortcut(path: str, keep: set) -> tuple:
    absent: dict = {}
    try:
        return offset_table(path, NAME, keep, absent), absent
    except KdumpError as e:
        return type(e), e.message, e.position


USUAL = ["t 0 5", "t 1 240", "a.b-c 7 0", "é 2 99", "t 10 123456789012345678", "other 3 1"]
ODD = ["t  0 5", "t 0 5 ", " t 0 5", "t\t0 5", "t 0 +5", "t 0 -1", "t 0 1234567890123456789", "t 2147483648 1",
       "t 0012 4", "t 0", "", "t 0 x", "t\x0b 0 1", "t\u00a0 0 1", "t 0 ١", "t 0 5\r"]


def _file(rnd: random.Random) -> bytes:
    odd = rnd.random() < 0.5
    lines = [rnd.choice(ODD if odd and rnd.random() < 0.2 else USUAL) for _ in range(rnd.randrange(0, 40))]
    count = len(lines) + (rnd.choice([-1, 1]) if rnd.random() < 0.1 else 0)
    head = [rnd.choice(["0", "0", "0", "00", "1", "+0", "x"]) if rnd.random() < 0.1 else "0",
            str(count) if rnd.random() > 0.05 else rnd.choice(["", "-1", "2147483648", " 3"])]
    end = rnd.choice(["\n"] * 8 + ["\r\n", "\r"])
    text = end.join(head + lines) + ("" if rnd.random() < 0.2 else end)
    data = text.encode("utf-8")
    if rnd.random() < 0.05:
        data = data[:len(data) // 2] + b"\xff" + data[len(data) // 2:]
    return data


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 20])
def test_the_shortcut_reads_what_the_reference_reads(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(side_file_views, "READ_CHUNK", chunk)
    rnd = random.Random(chunk)
    path = str(tmp_path / NAME)
    taken = 0
    for _ in range(600):
        Path(path).write_bytes(_file(rnd))
        assert _shortcut(path, KEEP) == _reference(path, KEEP), Path(path).read_bytes()
        taken += side_file_views._usual_table(path, KEEP) is not None
    assert taken > 150         # the file a broker writes takes the shortcut


def test_a_broker_s_file_takes_the_shortcut(tmp_path):
    path = tmp_path / NAME
    path.write_text("0\n4\nt 0 5\nt 1 7\nt 0 9\nfar 3 1\n")
    assert side_file_views._usual_table(str(path), KEEP) == {("t", 0): 9, ("t", 1): 7}


@pytest.fixture
def logdir(tmp_path) -> Path:
    d = tmp_path / "logdir"
    for name in ("rolled-0", "rolled-1"):
        shutil.copytree(ROLLED, d / name)
        for p in (d / name).iterdir():
            os.chmod(p, 0o644)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"):
        (d / name).write_text("0\n2\nrolled 0 240\nrolled 1 240\n")
    return d


def test_a_run_reads_each_checkpoint_once(logdir, monkeypatch):
    reads: list[str] = []
    real_table, real_entries = side_file_views.offset_table, side_file_views.checkpoint_entries

    def table(path, *a):
        reads.append(os.path.basename(path))
        return real_table(path, *a)

    def entries(path, *a):
        if "offset-checkpoint" in path:
            reads.append(os.path.basename(path))
        return real_entries(path, *a)

    monkeypatch.setattr(side_file_views, "offset_table", table)
    monkeypatch.setattr(side_file_views, "checkpoint_entries", entries)
    r = run_kdump("verify", "-j", "1", logdir)
    assert r.code == 0, r.out
    assert sorted(reads) == ["log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
                             "replication-offset-checkpoint"]


def test_a_malformed_checkpoint_is_reported_on_itself(logdir):
    (logdir / "log-start-offset-checkpoint").write_text("0\n2\nrolled 0 240\n")
    (logdir / "replication-offset-checkpoint").write_text("0\n1\nrolled 0 x\n")
    for path in (logdir, f"{logdir}/", f"{logdir}/./"):
        lines = run_kdump("verify", "-j", "1", path).out.splitlines()
        [at] = [i for i, x in enumerate(lines) if "/log-start-offset-checkpoint: " in x]
        name = lines[at].split(": ")[0]
        assert name.startswith(str(path)) and lines[at + 1] == (
            f"  checkpoint_invalid (anomaly): Expected [2] entries in checkpoint file [{name}], "
            "but found only [1] (line 3)")
        [at] = [i for i, x in enumerate(lines) if "/replication-offset-checkpoint: " in x]
        name = lines[at].split(": ")[0]
        assert lines[at + 1] == f"  invalid_file: Malformed line in checkpoint file [{name}]: rolled 0 x (line 3)"


def test_reading_ahead_covers_every_partition(logdir, monkeypatch):
    """A local walk hands every partition dir on with the log dir's files; a remote listing of
    many pages hands them on a batch at a time (the files with the first): either way the
    reading covers every partition of the log dir."""
    from types import SimpleNamespace

    from kdump.check import logdir_checkpoints
    from kdump.check.logdir_checkpoints import logdir_offsets, read_ahead
    from kdump.storage import fs, levels

    own, partitions = [], []
    levels.walk(str(logdir), lambda files, pending: (own.extend(files), partitions.extend(pending), [])[2])
    for first, remote in ((partitions, False), (partitions[:1], True)):
        monkeypatch.setattr(logdir_checkpoints, "fs", SimpleNamespace(
            is_remote=lambda p, r=remote: r, normpath=fs.normpath, isfile=fs.isfile, scandir=fs.scandir))
        cache: dict = {}
        read_ahead(own, first, cache)
        assert [logdir_offsets(p.directory, cache) for p in partitions] == [(240, 240, 240, None)] * 2
