"""Installing kdump as a tool: the distribution's name, version, license and changelog, and
``pipx install`` from a wheel and from the clone (a real pipx, into a temporary home)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys

import pytest
import tomllib

import kdump
from support.run import ROOT, run_kdump

DIST = "kafka-kdump"


def test_the_distribution_is_not_named_like_the_unrelated_pypi_project():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DIST
    assert project["scripts"] == {"kdump": "kdump.cli:entry"}


def test_kdump_version_is_the_distribution_version_and_the_changelog_head():
    r = run_kdump("--version")
    assert r.code == 0 and r.out == f"kdump, version {kdump.__version__}\n"
    assert importlib.metadata.version(DIST) == kdump.__version__, "reinstall: pip install -e ."
    head = re.search(r"^## (\S+) — ", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert head and head.group(1) == kdump.__version__, "CHANGELOG.md's newest entry is not this version"


def test_the_license_is_apache_2_in_full():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS AND CONDITIONS" in text  # noqa: E501
    assert "License :: " not in text and len(text) > 11_000
    assert importlib.metadata.metadata(DIST)["License"] == "Apache-2.0"


def _pipx(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"),
               PIPX_MAN_DIR=str(tmp_path / "man"))
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-m", "pipx", *args], env=env, capture_output=True, text=True,
                          check=False, timeout=900)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["wheel", "clone"])
def test_pipx_installs_the_kdump_command(tmp_path, source):
    pytest.importorskip("pipx", reason="pipx is a test extra: pip install -e '.[test]'")
    if source == "wheel":
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w",
                                str(tmp_path / "dist")], capture_output=True, text=True, check=False, timeout=900)
        assert built.returncode == 0, built.stderr
        (target,) = (tmp_path / "dist").glob("kafka_kdump-*.whl")
        import zipfile

        names = zipfile.ZipFile(target).namelist()
        assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    else:
        # A copy of the clone's tracked files, so that the build leaves nothing in the checkout.
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False).stdout
        if not files:
            pytest.skip("not a git checkout")
        target = tmp_path / "clone"
        for rel in files.decode().split("\0"):
            if rel and (ROOT / rel).is_file():
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / rel, target / rel)
    r = _pipx(tmp_path, "install", str(target))
    assert r.returncode == 0, r.stdout + r.stderr
    exe = tmp_path / "bin" / "kdump"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert version.stdout == f"kdump, version {kdump.__version__}\n"
    verify = subprocess.run([str(exe), "verify", "-q", str(ROOT / "fixtures/generated/torn-tail-0")],
                            capture_output=True, text=True, check=False, cwd=tmp_path)
    assert verify.returncode == 1 and "torn_tail at byte 667" in verify.stdout, verify.stderr
    assert "kafka-kdump" in _pipx(tmp_path, "list", "--short").stdout
