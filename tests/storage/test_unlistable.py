"""One partition dir that cannot be listed (issue #27, item 10): reported, and the rest covered.

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


def _as_nobody(args: list[str]) -> tuple[int, str, str]:
    """``kdump ARGS`` in a forked child that has dropped to uid/gid nobody."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:    # pragma: no cover - the child
        try:
            os.close(read)
            run_kdump(*args)                        # loads every module the run needs, as root
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
