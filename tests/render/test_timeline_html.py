"""``kdump info --timeline --html FILE`` opened in a real headless Chromium, with no network:
the page loads with nothing on the console, draws every segment (its name as a rendered
axis label), the damaged one in red, and a screenshot is taken.

Chromium is Debian's ``chromium`` package (.ci/run installs it); without it this skips."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from support.run import REAL, run_kdump

PINTEREST = REAL / "pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test"
SEGMENTS = ["00000000000000000000", "00000000000000007729", "00000000000000015363", "00000000000000022964"]
RED = "#d62728"                 # render.timeline_html's damage colour


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium: apt-get install chromium (.ci/run does)")


def _offline() -> list[str]:
    ok = shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    return ["unshare", "-n"] if ok else []


def _open(page, *args: str, tmp_path) -> subprocess.CompletedProcess:
    """Chromium on the page, headless and (where allowed) without any network; its console
    messages go to stderr as ``CONSOLE`` lines."""
    cmd = [*_offline(), _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1400", "--virtual-time-budget=10000",
           "--enable-logging=stderr", "--v=0", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=tmp_path)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timeline")
    part = tmp / "orders-0"
    shutil.copytree(PINTEREST, part)
    log = part / f"{SEGMENTS[0]}.log"
    data = bytearray(log.read_bytes())
    data[20000] ^= 0xFF
    log.write_bytes(bytes(data))
    out = tmp / "timeline.html"
    r = run_kdump("info", part, "--html", out)
    assert r.code == 1 and f"kdump: wrote {out}" in r.err
    return out


def test_the_page_is_self_contained(page):
    text = page.read_text()
    scripts = re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", text)
    assert not scripts, f"the page loads scripts from elsewhere: {scripts}"
    assert "<script" not in text and "<svg" in text


def test_a_detector_sees_console_errors(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>console.error('boom'); nope();</script></body></html>")
    r = _open(bad, "--dump-dom", tmp_path=tmp_path)
    page_lines = [line for line in r.stderr.splitlines() if "CONSOLE" in line and "source: chrome://" not in line]
    assert any("boom" in line for line in page_lines) and any("nope" in line for line in page_lines)


def test_chromium_shows_every_segment_without_console_errors(page, tmp_path):
    dom = _open(page, "--dump-dom", tmp_path=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The page's own console (Chromium's internal pages log too: their source is chrome://).
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line and "source: chrome://" not in line]
    assert not console, console
    assert dom.stdout.count("<svg") == 1, "one chart: one partition"
    for name in SEGMENTS:     # each segment's row, its name as a label of the chart
        assert re.search(rf"<text[^>]*>{name} ", dom.stdout), name
    assert f'fill="{RED}"' in dom.stdout, "the damaged segment is not drawn red"
    assert 'id="problems"' in dom.stdout and "crc_mismatch" in dom.stdout
    shot = tmp_path / "timeline.png"
    r = _open(page, f"--screenshot={shot}", tmp_path=tmp_path)
    assert r.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", r.stderr[-2000:]
    assert shot.stat().st_size > 20_000, "the screenshot is (nearly) blank"


def test_a_thousand_partitions_make_a_small_page_problems_first(tmp_path):
    """A whole broker's page: 1,000 partitions (one damaged) stay well under 2 MB, the damaged
    one is listed and charted first, and every partition has its row."""
    import shutil as sh

    logdir = tmp_path / "logs"
    src = REAL.parent / "generated" / "headers-0"
    for i in range(1000):
        sh.copytree(src, logdir / f"t{i:04d}-0")
    bad = logdir / "t0500-0" / "00000000000000000000.log"
    data = bytearray(bad.read_bytes())
    data[30] ^= 0xFF
    bad.write_bytes(bytes(data))
    out = tmp_path / "broker.html"
    r = run_kdump("info", logdir, "--html", out, "-j", "1")
    assert r.code == 1, r.err
    text = out.read_text()
    assert out.stat().st_size < 2_000_000
    assert text.index("t0500-0") < text.index("t0000-0")          # problems first
    assert text.count("<svg") == 1                              # one segment each: only the damaged one drawn
    assert text.count("<tr><td>") >= 1000
