"""The single-file zipapp for brokers without internet (packaging/zipapp.py): built for this
machine's architecture and Python, then run by a bare venv (no pip, nothing installed)
with no network at all (``unshare -n``; where that is not allowed, proxies pointing at a
closed port). Its ``verify`` must print what the installed kdump prints."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import zipfile

import pytest

import kdump
from support.run import ROOT

FIXTURE = ROOT / "fixtures/generated/torn-tail-0"
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _offline_prefix() -> tuple[list[str], dict[str, str]]:
    """A command prefix and environment that cut the network off."""
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-n"], {}
    with socket.socket() as s:      # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    return [], {k: dead for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy")}


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    pytest.importorskip("shiv", reason="shiv is a test extra: pip install -e '.[test]'")
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"the zipapp is built for Linux x86_64 and aarch64, not {platform.machine()}")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, str(ROOT / "packaging/zipapp.py"), "--arch", platform.machine(),
                        "--python", PYTHON, "--out", str(out)], capture_output=True, text=True, check=False,
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    (built,) = out.glob("*.pyz")
    assert built.name == f"kdump-{kdump.__version__}-linux-{platform.machine()}.pyz"
    return built


@pytest.mark.slow
def test_the_zipapp_holds_kdump_and_every_dependency_for_its_architecture(pyz):
    names = zipfile.ZipFile(pyz).namelist()
    for package in ("kdump/cli/__init__.py", "click/", "rich/", "crc32c/", "lz4/", "cramjam/", "zstandard/", "xxhash/"):
        assert any(n.startswith(f"site-packages/{package}") for n in names), package
    machine = platform.machine()
    shared = [n for n in names if n.endswith(".so")]
    assert shared and all(f"-{machine}-linux-gnu" in n or ".abi3." in n for n in shared), shared
    assert any("kdump/_speedups/native" in n for n in shared), "the C accelerator for this machine is in it"


@pytest.mark.slow
def test_the_zipapp_verifies_in_a_bare_venv_without_network(pyz, tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    prefix, proxies = _offline_prefix()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(proxies, SHIV_ROOT=str(tmp_path / "shiv"), HOME=str(tmp_path))
    copied = tmp_path / "kdump.pyz"     # as an operator copies it to a broker host
    shutil.copy2(pyz, copied)
    run = [*prefix, str(venv / "bin" / "python"), str(copied)]
    version = subprocess.run([*run, "--version"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert version.stdout == f"kdump, version {kdump.__version__}\n", version.stderr
    got = subprocess.run([*run, "verify", str(FIXTURE), "--format", "text"], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    want = subprocess.run([sys.executable, "-m", "kdump", "verify", str(FIXTURE), "--format", "text"],
                          capture_output=True, text=True)
    assert got.returncode == want.returncode == 1, got.stderr
    assert got.stdout == want.stdout and "torn_tail at byte 667" in got.stdout
    page = tmp_path / "timeline.html"      # the timeline page too, written on the "broker"
    html = subprocess.run([*run, "info", str(FIXTURE), "--html", str(page)], env=env, cwd=tmp_path,
                          capture_output=True, text=True)
    text = page.read_text()
    assert html.returncode == 1 and "<svg" in text and "<rect" in text and "<script" not in text, html.stderr
    # It ran from the zipapp's own unpacked copy, not from this checkout.
    assert any((tmp_path / "shiv").glob("kdump.pyz_*/site-packages/kdump/__init__.py"))


ELF_MACHINE = {"x86_64": 62, "aarch64": 183}       # e_machine in an ELF header


@pytest.mark.slow
def test_the_other_architecture_carries_its_own_compiled_dependencies(tmp_path):
    """The aarch64 file (or x86_64 on an aarch64 machine) cannot run here; every compiled
    module in it must be built for its architecture, and kdump is there on its pure-Python
    path (its C accelerator is built only for the machine that builds the file)."""
    pytest.importorskip("shiv", reason="shiv is a test extra: pip install -e '.[test]'")
    other = {"x86_64": "aarch64", "aarch64": "x86_64"}.get(platform.machine())
    if other is None:
        pytest.skip(f"the zipapp is built for Linux x86_64 and aarch64, not {platform.machine()}")
    r = subprocess.run([sys.executable, str(ROOT / "packaging/zipapp.py"), "--arch", other, "--python", PYTHON,
                        "--out", str(tmp_path)], capture_output=True, text=True, check=False, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    (built,) = tmp_path.glob(f"kdump-*-linux-{other}.pyz")
    z = zipfile.ZipFile(built)
    shared = [n for n in z.namelist() if n.endswith(".so")]
    assert shared and not any("kdump/" in n for n in shared)
    for name in shared:
        head = z.read(name)[:20]
        assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == ELF_MACHINE[other], name
    assert "site-packages/kdump/run/info.py" in z.namelist()


def _fake_pyz(tmp_path):
    """A pyz shaped as shiv writes one (shebang, _bootstrap, __main__.py), whose bootstrap says hi."""
    pyz = tmp_path / "fake.pyz"
    with open(pyz, "wb") as f:
        f.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(f, "w") as z:
            z.writestr("_bootstrap/__init__.py", "def bootstrap():\n    print('bootstrapped')\n")
            z.writestr("__main__.py", "import _bootstrap\n_bootstrap.bootstrap()\n")
    pyz.chmod(0o755)
    return pyz


def _packaging():
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        import zipapp as packaging_zipapp
    finally:
        sys.path.pop(0)
    return packaging_zipapp


@pytest.mark.parametrize("too_old", [False, True])
def test_the_zipapp_refuses_too_old_a_python_in_one_line(tmp_path, too_old):
    """RHEL/CentOS 7 to 9 ship Python 3.6 to 3.9: the zipapp's own __main__ says so in one line
    and exits 3 before shiv's bootstrap (which would fail with a traceback or a SyntaxError).
    The Python here is new, so the test raises the bar above it to see the refusal."""
    pyz = _fake_pyz(tmp_path)
    floor = (sys.version_info[0], sys.version_info[1] + 1) if too_old else (3, 10)
    _packaging().guard_main(pyz, floor)
    r = subprocess.run([sys.executable, str(pyz)], capture_output=True, text=True)
    if too_old:
        assert r.returncode == 3 and r.stdout == ""
        assert r.stderr == (f"kdump: error: this kdump needs Python {floor[0]}.{floor[1]} or newer; {sys.executable} "
                            f"is Python {PYTHON} (RHEL/CentOS 8 and 9: dnf install python3.11, then run it with "
                            "python3.11)\n")
    else:
        assert (r.returncode, r.stdout, r.stderr) == (0, "bootstrapped\n", "")
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env python3\n")
