"""Shared test helpers: run the CLI in-process, locate fixtures, write segments.

A plain module (not conftest.py) so that `from support.run import ...` means the same thing in
every test directory; bare `conftest` names clash between tests/ and tests/spark/.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
REAL = FIXTURES / "real"
GENERATED = FIXTURES / "generated"


def fixture_logs() -> list[str]:
    """Every ``.log`` under fixtures/, as paths relative to it, in a stable order."""
    out = []
    for root, dirs, files in os.walk(FIXTURES):
        dirs.sort()
        out.extend(os.path.relpath(os.path.join(root, n), FIXTURES) for n in sorted(files) if n.endswith(".log"))
    return out


class Result(NamedTuple):
    code: int
    out: str
    err: str


def run_kdump(*args: str, out: io.StringIO | None = None, err: io.StringIO | None = None) -> Result:
    """Run ``kdump ARGS`` in this process the way the console script does (through main());
    ``out``/``err`` replace the captured streams (a subclass whose isatty() is True stands
    for a terminal)."""
    from kdump.cli import main

    out, err = out or io.StringIO(), err or io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return Result(code, out.getvalue(), err.getvalue())


def write_segment(directory: Path, batches: list[bytes], base_offset: int = 0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


def snapshot_tree(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Bytes, mtime (ns) and mode of every file below ``root``: to prove nothing changed."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            with open(p, "rb") as f:
                out[p] = (f.read(), st.st_mtime_ns, st.st_mode)
    return out


# Runs kdump in a child and prints its exit code and that child's peak RSS in KB (Linux reports KB).
_MEASURE = """
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    code = subprocess.run([sys.executable, "-m", "kdump", *sys.argv[2:]], stdout=out,
                          stderr=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_rss(out: Path, *args) -> tuple[int, int]:
    """``kdump ARGS`` in a child process, its stdout written to ``out``: (exit code, peak RSS in KB)."""
    r = subprocess.run([sys.executable, "-c", _MEASURE, str(out), *map(str, args)], capture_output=True, text=True,
                       check=True)
    code, kb = r.stdout.split()
    return int(code), int(kb)
