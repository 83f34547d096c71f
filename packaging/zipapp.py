"""Builds kdump as one file to copy to a broker host without internet: a shiv zipapp.

    python packaging/zipapp.py [--arch x86_64] [--arch aarch64] [--python 3.11 ...] [--out dist]

Run it on a machine that reaches PyPI (or give --find-links DIR --no-index with the wheels
in DIR). For each architecture it writes ``dist/kdump-<version>-linux-<arch>.pyz``, holding
kdump (with plotly, for ``info --html``) and every dependency's manylinux2014 wheel (glibc
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
import os
import platform
import shutil
import subprocess
import sys
import tempfile
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


def build(arch: str, pythons: list[str], out: Path, pip_sources: list[str]) -> Path:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # The timeline extra too: a page written on the broker is what one copies off it.
    deps = project["dependencies"] + project["optional-dependencies"]["timeline"]
    native = arch == platform.machine() and f"{sys.version_info[0]}.{sys.version_info[1]}" in pythons
    with tempfile.TemporaryDirectory(prefix="kdump-zipapp-") as tmp:
        work = Path(tmp)
        site = work / "site"
        site.mkdir()
        for py in pythons:
            target = work / f"deps-{py}"
            _pip("install", "--target", str(target), "--only-binary=:all:", "--implementation", "cp",
                 "--python-version", py, "--platform", PLATFORM.format(arch=arch), *pip_sources, *deps)
            _merge(target, site)
        # kdump last, without its dependencies (above): with --no-deps pip installs any wheel.
        _pip("install", "--target", str(work / "kdump"), "--no-deps", str(_kdump_wheel(work, native)))
        _merge(work / "kdump", site)
        out.mkdir(parents=True, exist_ok=True)
        pyz = out / f"kdump-{_version()}-linux-{arch}.pyz"
        subprocess.run([sys.executable, "-m", "shiv", "--site-packages", str(site), "-e", "kdump.cli:entry",
                        "-p", "/usr/bin/env python3", "--compressed", "--reproducible", "-o", str(pyz)], check=True)
    return pyz


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", action="append", choices=ARCHES, help="default: both")
    p.add_argument("--python", action="append", help=f"target Python X.Y (default: {', '.join(PYTHONS)})")
    p.add_argument("--out", type=Path, default=ROOT / "dist")
    p.add_argument("--find-links", help="a folder of wheels to take the dependencies from")
    p.add_argument("--no-index", action="store_true", help="do not reach PyPI (with --find-links)")
    a = p.parse_args(argv)
    sources = (["--find-links", a.find_links] if a.find_links else []) + (["--no-index"] if a.no_index else [])
    for arch in a.arch or ARCHES:
        print(build(arch, a.python or list(PYTHONS), a.out, sources))
    return 0


if __name__ == "__main__":
    sys.exit(main())
