"""Repairs never write through a hard link (evidence
kept with ``cp -al`` must not shrink), and what they write keeps the extended attributes and
modes of what it stands for."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from support.damage import damage_middle, make_partition, messy_partition
from support.run import run_kdump

needs_xattrs = pytest.mark.skipif(not hasattr(os, "setxattr"), reason="no extended attributes here")


def _cp_al(src: Path, dest: Path) -> None:
    """What ``cp -al`` does: the same tree, every file a hard link."""
    for dirpath, _, names in os.walk(src):
        target = dest / Path(dirpath).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for n in names:
            os.link(Path(dirpath) / n, target / n)


def _sizes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", [["verify", "--truncate"], ["recover", "--apply", "--yes"]])
def test_a_cut_never_shrinks_a_hard_linked_copy(tmp_path, command):
    d = make_partition(tmp_path / "logs")
    log, cut = damage_middle(d)
    size = log.stat().st_size
    _cp_al(d, tmp_path / "evidence")
    before = _sizes(tmp_path / "evidence")
    r = run_kdump(*command, str(d))
    assert r.code == 1, r.err
    assert _sizes(tmp_path / "evidence") == before
    assert log.stat().st_size == cut and log.stat().st_nlink == 1
    assert f"kdump: truncated {log}: cut to {cut} bytes (was {size}); it had 2 hard links: written as a new " \
           f"file, the other links keep all {size} bytes" in r.err.splitlines(), r.err
    assert (tmp_path / "evidence" / log.name).read_bytes()[:cut] == log.read_bytes()


@needs_xattrs
def test_rebuilt_indexes_and_corrupt_copies_keep_extended_attributes(tmp_path):
    d = make_partition(tmp_path / "logs")
    log, cut = damage_middle(d)
    index = d / f"{9:020d}.index"
    for p in (log, index):
        os.setxattr(p, "user.evidence", b"case-41")
    index.write_bytes(b"\x7f" * 8)          # garbage: rebuilt
    assert run_kdump("index", "--rebuild", "-q", str(index)).code in (0, 1)
    assert os.getxattr(index, "user.evidence") == b"case-41"
    assert run_kdump("verify", "--truncate", "-q", str(d)).code == 1
    corrupt = Path(f"{log}.corrupt-{cut}")
    assert corrupt.exists() and os.getxattr(corrupt, "user.evidence") == b"case-41"
    assert os.getxattr(log, "user.evidence") == b"case-41"


def test_the_quarantine_takes_the_partition_s_mode(tmp_path):
    d = messy_partition(tmp_path / "logs")
    os.chmod(d, 0o750)
    old = os.umask(0o022)
    try:
        r = run_kdump("recover", "--apply", "--yes", "-q", str(d))
    finally:
        os.umask(old)
    assert r.code in (0, 1), r.err
    quarantines = [p for p in d.iterdir() if p.name.startswith("kdump-quarantine-")]
    assert quarantines and all(stat.S_IMODE(q.stat().st_mode) == 0o750 for q in quarantines)
