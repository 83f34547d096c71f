"""Builds kdump as one file to copy to a broker host without internet: a shiv zipapp.

    python packaging/zipapp.py [--arch x86_64] [--arch aarch64] [--python 3.11 ...] [--out dist]

Run it on a machine that reaches PyPI (or give --find-links DIR --no-index with the wheels
in DIR). For each architecture it writes ``dist/kdump-<version>-linux-<arch>.pyz``, holding
kdump and every dependency's manylinux2014 wheel (glibc
2.17 or newer) for each --python version, side by side: their compiled modules carry the
Python version in their names. The
host needs one of those Pythons; nothing is installed on it. On first run the zipapp
unpacks itself under ``~/.shiv`` (``SHIV_ROOT`` to choose) and then starts from there.

kdump's optional C accelerator is compiled only for this machine's architecture and Python
(the one running this script): elsewhere kdump takes its pure-Python path, which gives the
same answers, slower (``kdump._accel.status()`` says which runs).
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

try:
    import tomllib
except ImportError:     # Python 3.10: kdump runs there, this build script does not
    raise SystemExit("packaging/zipapp.py needs Python 3.11 or newer to run (the zipapp it builds runs on 3.10+)")

ROOT = Path(__file__).resolve().parents[1]
ARCHES = ("x86_64", "aarch64")
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# manylinux2014 = glibc 2.17: RHEL/CentOS 7 and every later broker distribution.
PLATFORM = "manylinux2014_{arch}"
MIN_PYTHON = (3, 10)
# The full bundle adds what a host without internet cannot pip install later: Schema Registry
# payloads, Parquet export and s3:// / hdfs:// reads.
FULL_EXTRAS = ("schemas", "parquet", "remote")

# The zipapp's __main__.py: a Python too old for kdump (RHEL/CentOS 7 to 9 ship 3.6 to 3.9)
# gets one line and exit 3 before shiv's bootstrap, which needs a newer Python too, is imported.
# Python 2.7 and 3.0+ syntax alone.
GUARD_MAIN = """\
# -*- coding: utf-8 -*-
import sys
if sys.version_info < {min_version!r}:
    sys.stderr.write("kdump: error: this kdump needs Python {min_text} or newer; %s is Python %d.%d "
                     "(RHEL/CentOS 8 and 9: dnf install python3.11, then run it with python3.11)\\n"
                     % (sys.executable or "python", sys.version_info[0], sys.version_info[1]))
    sys.exit(3)
import _bootstrap
_bootstrap.bootstrap()
"""


def _step(message: str) -> None:
    """Progress on stderr: a build takes minutes, most of them in pip."""
    print(f"zipapp: {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def guard_main(pyz: Path, min_version: tuple[int, int] = MIN_PYTHON) -> None:
    """Replace shiv's __main__.py in ``pyz`` by GUARD_MAIN (the rest copied as it is)."""
    main = GUARD_MAIN.format(min_version=tuple(min_version), min_text=".".join(map(str, min_version)))
    data = pyz.read_bytes()
    prefix = data[:data.index(b"PK\x03\x04")]          # the shebang line
    out = io.BytesIO()
    out.write(prefix)
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "a") as dst:
        for info in src.infolist():
            body = main.encode("utf-8") if info.filename == "__main__.py" else src.read(info)
            dst.writestr(info, body)
    tmp = pyz.with_name(pyz.name + ".tmp")
    tmp.write_bytes(out.getvalue())
    tmp.chmod(pyz.stat().st_mode)
    os.replace(tmp, pyz)


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True)


def _version() -> str:
    for line in (ROOT / "kdump" / "__init__.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise SystemExit("kdump/__init__.py has no __version__")


def _kdump_wheel(work: Path, native: bool) -> Path:
    """kdump's own wheel: with the C accelerator when built for this machine, else pure."""
    out = work / ("wheel-native" if native else "wheel-pure")
    env = dict(os.environ, **({} if native else {"KDUMP_NO_EXTENSION": "1"}))
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "wheel", "--no-deps",
                    str(ROOT), "-w", str(out)], check=True, env=env)
    (wheel,) = out.glob("*.whl")
    return wheel


def _merge(src: Path, dst: Path) -> None:
    for path in src.rglob("*"):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif not target.exists():
            shutil.copy2(path, target)


def build(arch: str, pythons: list[str], out: Path, pip_sources: list[str], full: bool = False) -> Path:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = FULL_EXTRAS if full else ()
    deps = list(dict.fromkeys(project["dependencies"] + [d for e in extras
                                                         for d in project["optional-dependencies"][e]]))
    native = arch == platform.machine() and f"{sys.version_info[0]}.{sys.version_info[1]}" in pythons
    with tempfile.TemporaryDirectory(prefix="kdump-zipapp-") as tmp:
        work = Path(tmp)
        site = work / "site"
        site.mkdir()
        for i, py in enumerate(pythons, 1):
            _step(f"[{i}/{len(pythons) + 2}] {arch}: dependency wheels for CPython {py} ({', '.join(extras) or 'no'} "
                  "extras)")
            target = work / f"deps-{py}"
            _pip("install", "--target", str(target), "--only-binary=:all:", "--implementation", "cp",
                 "--python-version", py, "--platform", PLATFORM.format(arch=arch), *pip_sources, *deps)
            _merge(target, site)
        # kdump last, without its dependencies (above): with --no-deps pip installs any wheel.
        _step(f"[{len(pythons) + 1}/{len(pythons) + 2}] {arch}: kdump's own wheel"
              + (" (with the C accelerator)" if native else " (pure Python)"))
        _pip("install", "--target", str(work / "kdump"), "--no-deps", str(_kdump_wheel(work, native)))
        _merge(work / "kdump", site)
        out.mkdir(parents=True, exist_ok=True)
        pyz = out / f"kdump{'-full' if full else ''}-{_version()}-linux-{arch}.pyz"
        _step(f"[{len(pythons) + 2}/{len(pythons) + 2}] {arch}: compressing into {pyz}")
        subprocess.run([sys.executable, "-m", "shiv", "--site-packages", str(site), "-e", "kdump.cli:entry",
                        "-p", "/usr/bin/env python3", "--compressed", "--reproducible", "-o", str(pyz)], check=True)
        guard_main(pyz)
        unpacked = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    _step(f"{pyz}: {pyz.stat().st_size / 1e6:.0f} MB; its first run unpacks {unpacked / 1e6:.0f} MB under ~/.shiv")
    return pyz


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", action="append", choices=ARCHES, help="default: both")
    p.add_argument("--python", action="append", help=f"target Python X.Y (default: {', '.join(PYTHONS)})")
    p.add_argument("--out", type=Path, default=ROOT / "dist")
    p.add_argument("--find-links", help="a folder of wheels to take the dependencies from")
    p.add_argument("--no-index", action="store_true", help="do not reach PyPI (with --find-links)")
    p.add_argument("--full", action="store_true",
                   help=f"also bundle the {', '.join(FULL_EXTRAS)} extras (kdump-full-*.pyz): no pip install "
                        "needed on the host for Schema Registry payloads, Parquet or s3:// and hdfs://")
    a = p.parse_args(argv)
    sources = (["--find-links", a.find_links] if a.find_links else []) + (["--no-index"] if a.no_index else [])
    for arch in a.arch or ARCHES:
        print(build(arch, a.python or list(PYTHONS), a.out, sources, full=a.full))
    return 0


if __name__ == "__main__":
    sys.exit(main())
