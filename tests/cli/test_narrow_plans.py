"""`info --timeline` and `recover` on a terminal 80 and 73 columns wide: no line wider
than the terminal, no name cut or split, and what the wide view says is all still there."""

from __future__ import annotations

import io
import shutil

import pytest
from rich.cells import cell_len

from support.run import FIXTURES, GENERATED, run_kdump

CRASH = FIXTURES / "broker" / "cleaner-crash"
WIDTHS = [73, 80]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(monkeypatch, width: int, *args) -> tuple[int, list[str]]:
    monkeypatch.setenv("COLUMNS", str(width))
    r = run_kdump(*args, "--color", "never", out=Terminal())
    assert r.code in (0, 1), r.err
    lines = r.out.splitlines()
    assert [line for line in lines if cell_len(line) > width] == []
    assert "…" not in r.out
    return r.code, [line.rstrip() for line in lines]


@pytest.mark.parametrize("width", WIDTHS)
def test_recover_groups_steps_alike_and_keeps_every_file(monkeypatch, tmp_path, width):
    shutil.copytree(CRASH, tmp_path / "crash")
    monkeypatch.chdir(tmp_path)     # (a path is never folded: a short one, wherever the checkout is)
    code, lines = _run(monkeypatch, width, "recover", "crash")
    text = "\n".join(lines)
    assert code == 0
    assert lines[:2] == ["crash/compacted-crash-0", "log end offset 2000, recovery point 0; 10 steps"]
    # the six quarantined files: two rows (one per reason), every name whole on its own line
    assert text.count("quarantine") == 2
    assert text.count("output of an interrupted log-cleaner run") == 1
    assert text.count("file awaiting asynchronous deletion") == 1
    for name in ("00000000000000000825.log.cleaned", "00000000000000000825.index.cleaned",
                 "00000000000000000825.timeindex.cleaned", "00000000000000000000.log.deleted",
                 "00000000000000000000.index.deleted", "00000000000000000000.timeindex.deleted",
                 "00000000000000000825.index", "00000000000000001624.timeindex"):
        assert sum(1 for line in lines if line.strip().endswith(name)) == 1, name
    # the long reason folds at spaces: every word of it is there, in order
    words = "differs from what recovery writes (a preallocated tail, the last time index entry): rewritten"
    assert " ".join(text.split()).count(words) == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_recover_truncation_and_partitions_with_nothing_to_do(monkeypatch, tmp_path, width):
    for name in ("torn-tail-0", "headers-0", "zstd-v2-0"):
        shutil.copytree(GENERATED / name, tmp_path / "logs" / name)
    monkeypatch.chdir(tmp_path)     # (a path is never folded: short ones here)
    code, lines = _run(monkeypatch, width, "recover", "logs/headers-0", "logs/torn-tail-0", "logs/zstd-v2-0")
    text = " ".join(" ".join(lines).split())
    assert code == 1
    assert lines[:2] == ["logs", "nothing to do in 1 partition:"]
    assert lines.count("nothing to do in 1 partition:") == 2 and lines.count("logs") == 2
    assert "log end offset 6, recovery point 0; 3 steps" in lines
    assert "00000000000000000000.log.corrupt-667" in text and "113 bytes cut and saved" in text
    rows = {line.split("│")[1].strip(): line for line in lines if "│" in line and "-0 " in line}
    assert set(rows) == {"headers-0", "zstd-v2-0"}
    assert rows["headers-0"].split("│")[2].strip() == "18" and rows["zstd-v2-0"].split("│")[2].strip() == "20"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_timeline_names_what_it_leaves_out(monkeypatch, width):
    code, lines = _run(monkeypatch, width, "info", "--timeline", GENERATED / "torn-tail-0",
                       GENERATED / "compacted-0")
    text = "\n".join(lines)
    assert code == 1
    assert "torn-tail-0: 1 segment, offsets 0..5" in lines and "compacted-0: 2 segments, offsets 0..110" in lines
    row = next(line for line in lines if line.startswith("00000000000000000000") and "✗" in line)
    assert row.split("│")[1].strip() == "0..5" and row.endswith("torn_tail")      # the name whole
    assert any(line.startswith("(missing)") and "28..99" in line for line in lines)
    # the time strip is not drawn at this width, so the legend does not explain it; it says so
    assert "record rate" not in text
    said = " ".join(" ".join(lines[-3:]).split())
    assert f"not shown at {width} columns:" in said and "time" in said and "rate/s" in said


def test_the_wide_timeline_leaves_nothing_out(monkeypatch):
    _, lines = _run(monkeypatch, 200, "info", "--timeline", GENERATED / "compacted-0")
    assert "not shown" not in "\n".join(lines) and "record rate" in lines[-1]
