"""One partition dir that cannot be listed: reported, and the rest covered.

As a user other than root, a partition dir of mode 0311 cannot be listed. ``verify`` and
``recover`` reported that one error and went on; ``dump``, ``info`` and ``index --verify``
printed nothing for the whole log dir and exited 3. Now each reports the one error (exit
3: the run is incomplete) and gives for the rest exactly what it gives for a log dir
without that partition.

Root may list any directory, so the run drops to ``nobody`` in a forked child (the
interpreter and kdump's modules, loaded as root by a first run, stay loaded).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from support.run import GENERATED, run_kdump

NOBODY = 65534
PARTITIONS = ("gzip-v2-0", "headers-0", "zstd-v2-0")
HIDDEN = "gzip-v2-0"


def _as_nobody(args: list[str], warm: list[str] | None = None) -> tuple[int, str, str]:
    """``kdump ARGS`` in a forked child that has dropped to uid/gid nobody (after ``warm``, by
    default ARGS, run as root to load the modules)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:    # pragma: no cover - the child
        try:
            os.close(read)
            run_kdump(*(warm or args))              # loads every module the run needs, as root
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            r = run_kdump(*args)
            os.write(write, json.dumps([r.code, r.out, r.err]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    assert data, "the child did not report"
    return tuple(json.loads(data))


@pytest.fixture(scope="module")
def logdirs():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to nobody (as a user, run it as that user with a 0311 dir)")
    root = Path(tempfile.mkdtemp(prefix="kdump-unlistable-"))
    try:
        root.chmod(0o755)
        whole, rest = root / "whole", root / "rest"
        for p in PARTITIONS:
            shutil.copytree(GENERATED / p, whole / p)
            if p != HIDDEN:
                shutil.copytree(GENERATED / p, rest / p)
        for dirpath, dirnames, names in os.walk(root):
            os.chmod(dirpath, 0o755)
            for n in names:
                os.chmod(os.path.join(dirpath, n), 0o644)
        (whole / HIDDEN).chmod(0o311)
        yield whole, rest
    finally:
        (root / "whole" / HIDDEN).chmod(0o755)
        shutil.rmtree(root)


@pytest.mark.parametrize("command", [["dump", "--records"], ["info"], ["index", "--verify"], ["timeindex", "--verify"],
                                     ["verify"]], ids=lambda c: " ".join(c))
def test_one_unlistable_partition_is_reported_and_the_rest_covered(logdirs, command):
    whole, rest = logdirs
    code, out, err = _as_nobody(command + ["-j", "1", "--format", "text", str(whole)])
    expected = run_kdump(*command, "-j", "1", "--format", "text", rest)
    assert code == 3, err
    lines = err.splitlines()
    assert f"kdump: error: {whole / HIDDEN}: cannot list directory: Permission denied" in lines, err
    assert [line for line in lines if line.startswith("kdump: error:")] == \
        [f"kdump: error: {whole / HIDDEN}: cannot list directory: Permission denied"], err
    assert out.replace(str(whole), str(rest)) == expected.out


@pytest.mark.parametrize("fmt", ["parquet", "ndjson"])
def test_export_writes_the_rest_marked_incomplete(logdirs, fmt):
    """export: the one error, the rest written exactly as for a log dir without that partition,
    and --out never marked complete: _INCOMPLETE names the dir instead of _SUCCESS (exit 3)."""
    pytest.importorskip("pyarrow")
    whole, rest = logdirs
    outs = Path(tempfile.mkdtemp(prefix="kdump-unlistable-out-"))
    try:
        outs.chmod(0o777)       # nobody writes the export here
        got, expected = outs / "got", outs / "expected"
        args = ["export", str(whole), "--format", fmt, "-j", "1", "--out"]
        code, out, err = _as_nobody(args + [str(got)], args + [str(outs / "warm")])
        assert code == 3, err
        line = f"kdump: error: {whole / HIDDEN}: cannot list directory: Permission denied"
        assert [x for x in err.splitlines() if x.startswith("kdump: error:")] == [line], err
        assert f"kdump: {got} is incomplete: it holds the rest, with _INCOMPLETE (what was not read) " \
               f"instead of _SUCCESS" in err
        assert not (got / "_SUCCESS").exists()
        assert (got / "_INCOMPLETE").read_text() == f"{whole / HIDDEN}: cannot list directory: Permission denied\n"
        r = run_kdump("export", rest, "--out", expected, "--format", fmt, "-j", "1")
        assert r.code == 0, r.err
        names = sorted(str(p.relative_to(got)) for p in got.rglob("*") if p.is_file())
        assert names == sorted([str(p.relative_to(expected)) for p in expected.rglob("*") if p.is_file()
                                if p.name != "_SUCCESS"] + ["_INCOMPLETE"])
        assert not any(HIDDEN in n for n in names)
        for name in names:
            if name == "_INCOMPLETE":
                continue
            if fmt == "ndjson":
                assert (got / name).read_text() == (expected / name).read_text()
            else:
                import pyarrow.parquet as pq

                a, b = pq.read_table(got / name).to_pylist(), pq.read_table(expected / name).to_pylist()
                assert [dict(x, file=x["file"].replace(str(whole), str(rest))) for x in a] == b
    finally:
        shutil.rmtree(outs, ignore_errors=True)
