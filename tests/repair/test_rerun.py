"""Killed at a random point, then run again: the same tree as one uninterrupted run.

For every writing command (``verify --truncate``, ``recover --apply``, ``recover --salvage``,
``index --rebuild``, ``timeindex --rebuild``) a child process runs it and SIGKILLs itself at
its n-th file-system change (``support/killpoint.py``: n drawn among the changes an
uninterrupted run makes); the same command is then run again to the end. Every file below
the work directory (partition, quarantine, salvage output) must then hold what one
uninterrupted run leaves, with no temporary or lock file behind. The only names that may
differ are in the quarantine: the time stamp of a default quarantine directory
(``kdump-quarantine-<time>``: the rerun makes its own), and so the ``.N`` a name taken in
one of them adds. Quarantined files are compared as a multiset of (name without that
suffix, bytes) across all such directories: a file lost, or kept twice, still shows.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.damage import damage_middle, make_partition, messy_partition, subprocess_env, write_at
from support.run import run_kdump

KILLPOINT = Path(__file__).resolve().parents[1] / "support" / "killpoint.py"
QUARANTINE = "kdump-quarantine-"


def _garbage_indexes(d: Path, suffix: str) -> None:
    for base in (0, 9):
        p = d / f"{base:020d}{suffix}"
        write_at(p, 0, b"\x7f" * 8)


# name -> (build the work tree under a root, the command's arguments)
SETUPS = {
    "verify --truncate": (lambda r: damage_middle(make_partition(r / "logs")),
                          lambda r: ["verify", "--truncate", "-q", r / "logs" / "orders-0"]),
    "recover --apply": (lambda r: messy_partition(r / "logs"),
                        lambda r: ["recover", "--apply", "--yes", "-q", r / "logs" / "orders-0"]),
    "recover --salvage": (lambda r: damage_middle(make_partition(r / "logs")),
                          lambda r: ["recover", "--salvage", r / "out", "-q", r / "logs" / "orders-0"]),
    "index --rebuild": (lambda r: _garbage_indexes(make_partition(r / "logs"), ".index"),
                        lambda r: ["index", "--rebuild", "-q", r / "logs" / "orders-0"]),
    "timeindex --rebuild": (lambda r: _garbage_indexes(make_partition(r / "logs"), ".timeindex"),
                            lambda r: ["timeindex", "--rebuild", "-q", r / "logs" / "orders-0"]),
}


def _tree(root: Path) -> Counter:
    """(path with quarantine stamps blanked, bytes) of every file below ``root``, as a multiset."""
    out: Counter = Counter()
    for dirpath, _, names in os.walk(root):
        rel = Path(os.path.relpath(dirpath, root))
        rel = Path(*[QUARANTINE + "*" if part.startswith(QUARANTINE) else part for part in rel.parts])
        quarantined = any(part.startswith(QUARANTINE) for part in rel.parts)
        for n in names:
            shown = re.sub(r"\.\d+$", "", n) if quarantined else n
            out[(str(rel / shown), (Path(dirpath) / n).read_bytes())] += 1
    return out


def _killed_at(n: int, args: list, count_file: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(KILLPOINT), str(n), str(count_file)] + [str(a) for a in args],
                          env=subprocess_env(), capture_output=True, text=True, timeout=300)


def _reference(name: str) -> tuple[Counter, int]:
    """The tree one uninterrupted run leaves, and how many changes it makes."""
    build, args = SETUPS[name]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "w"
        build(root)
        r = _killed_at(0, args(root), Path(tmp) / "count")
        assert r.returncode in (0, 1), r.stderr
        return _tree(root), int((Path(tmp) / "count").read_text())


_REFERENCES: dict[str, tuple[Counter, int]] = {}


def _rerun(args: list):
    """The rerun, in this process, with a quarantine time stamp of its own (as a rerun a
    second or more later has)."""
    from unittest import mock

    with mock.patch("kdump.repair.recover.timestamp", lambda: "RERUN"), \
            mock.patch("kdump.repair.truncate.timestamp", lambda: "RERUN"):
        return run_kdump(*args)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETUPS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.floats(0, 1, exclude_max=True))
def test_killed_anywhere_then_rerun_reaches_the_uninterrupted_tree(name, where):
    if name not in _REFERENCES:
        _REFERENCES[name] = _reference(name)
    reference, changes = _REFERENCES[name]
    assert changes >= 3, "the command changed almost nothing: no kill point to draw"
    n = 1 + int(where * changes)
    build, args = SETUPS[name]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "w"
        build(root)
        killed = _killed_at(n, args(root), Path(tmp) / "count")
        assert killed.returncode == -signal.SIGKILL, (n, killed.returncode, killed.stderr)
        again = _rerun(args(root))
        assert again.code in (0, 1), again.err
        got = _tree(root)
        assert not [p for p, _ in got if p.endswith((".kdump-tmp", ".kdump.lock"))]
        assert got == reference, (f"killed at change {n} of {changes}", sorted(
            p for p, _ in (got - reference) + (reference - got)))


def test_a_killed_index_rebuild_leaves_no_second_bak(tmp_path):
    """Killed after its ``.bak`` was made, before the index was replaced,
    ``index --rebuild`` run again made a second, identical ``.bak.1``."""
    d = make_partition(tmp_path / "logs")
    _garbage_indexes(d, ".index")
    bad = (d / f"{0:020d}.index").read_bytes()
    for n in range(1, 6):
        killed = _killed_at(n, ["index", "--rebuild", "-q", d], tmp_path / "count")
        if (d / f"{0:020d}.index.bak").exists() and (d / f"{0:020d}.index").read_bytes() == bad:
            break
    else:
        raise AssertionError("no kill point between the backup and the replace")
    assert killed.returncode == -signal.SIGKILL
    assert run_kdump("index", "--rebuild", "-q", d).code == 0
    assert sorted(p.name for p in d.glob("*.bak*")) == [f"{0:020d}.index.bak", f"{9:020d}.index.bak"]
    assert (d / f"{0:020d}.index.bak").read_bytes() == bad
