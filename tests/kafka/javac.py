"""Our Java helpers (DlsBatch.java, LoadLogs.java) compiled once into tests/kafka/target.

pytest-xdist's workers may ask for the same classes at the same moment: the compile runs under
a file lock, into a fresh folder renamed into place, so that no JVM loads a half-written class.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import kafka_jars


def _current(stamp: Path, source: Path) -> bool:
    return stamp.exists() and stamp.stat().st_mtime >= source.stat().st_mtime


def compiled(source: Path, classes: Path, *javac_args: str) -> Path:
    """``classes``, holding ``source`` compiled (``javac_args``: e.g. a class path) unless its
    class file is already newer than the source (javac takes seconds)."""
    stamp = classes / f"{source.stem}.class"
    if _current(stamp, source):
        return classes
    if not shutil.which("javac"):
        kafka_jars._missing("no javac on PATH")
    classes.parent.mkdir(parents=True, exist_ok=True)
    with open(classes.parent / f".{classes.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _current(stamp, source):         # another worker compiled it while this one waited
            return classes
        fresh = Path(tempfile.mkdtemp(prefix=f".{classes.name}-", dir=classes.parent))
        proc = subprocess.run(["javac", "-d", str(fresh), *javac_args, str(source)], capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(fresh)
        assert proc.returncode == 0, proc.stderr
        if classes.exists():
            stale = Path(tempfile.mkdtemp(prefix=f".{classes.name}-stale-", dir=classes.parent))
            os.replace(classes, stale / "classes")
            shutil.rmtree(stale)
        os.replace(fresh, classes)
    return classes
