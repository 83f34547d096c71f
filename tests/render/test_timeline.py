"""``kdump info --timeline``: the terminal chart (exact at 200 columns, names never cut at any
width), its JSON, compaction gaps, and findings placed on the damaged segment."""

from __future__ import annotations

import json
import shutil

import pytest

from support.run import FIXTURES, REAL, run_kdump

COMPACTED = FIXTURES / "broker/all-shapes/compacted-0"
PINTEREST = REAL / "pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test"
SEGMENTS = ["00000000000000000000", "00000000000000007729", "00000000000000015363", "00000000000000022964"]

COMPACTED_CHART = """\
compacted-0: 3 segments, offsets 57..209
times 2026-11-24T01:56:08.232Z .. 2026-11-24T01:56:09.729Z
segment              ┃  offsets ┃    size ┃ records ┃  rate/s ┃ gaps ┃ offset axis              ┃ time                     ┃ findings
━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━
00000000000000000000 │  57..119 │   324 B │       5 │     7.2 │   51 │ ╌╌╌╌╌╌╌█╌█               │ ▁▁▁▁▁▁▁▁▁▁▁▁             │ ok
(missing)            │ 120..155 │         │         │         │   36 │                          │                          │
00000000000000000133 │ 156..171 │ 2.1 KiB │      15 │    24.0 │      │                ████      │              ▁▁▁▁▁▁▁▁▁▁▁ │ ok
00000000000000000172 │ 172..209 │ 5.1 KiB │      38 │ 1,727.3 │      │                   ██████ │                        █ │ ok
█ batches  ╌ offsets missing (compaction)  ✗ a finding  time: ▁▂▃▄▅▆▇█ record rate  green ok, yellow anomaly, red damage
"""


@pytest.fixture
def damaged(tmp_path):
    """A copy of the pinterest partition with one byte flipped in its first segment (a CRC fails)."""
    part = tmp_path / "orders-0"
    shutil.copytree(PINTEREST, part)
    log = part / f"{SEGMENTS[0]}.log"
    data = bytearray(log.read_bytes())
    data[20000] ^= 0xFF
    log.write_bytes(bytes(data))
    return part


def _lines(out: str) -> str:
    return "".join(line.rstrip() + "\n" for line in out.splitlines())


def test_the_chart_of_a_compacted_partition(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    r = run_kdump("info", "--timeline", COMPACTED)
    assert r.code == 0, r.err
    assert _lines(r.out) == COMPACTED_CHART


def test_findings_lie_on_the_damaged_segment_and_exit_1(damaged, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    r = run_kdump("info", "--timeline", damaged)
    assert r.code == 1, r.err
    rows = {line.split()[0]: line for line in r.out.splitlines() if line[:20] in SEGMENTS}
    assert set(rows) == set(SEGMENTS)
    assert "✗" in rows[SEGMENTS[0]] and "crc_mismatch" in rows[SEGMENTS[0]]
    assert all("✗" not in rows[s] and rows[s].rstrip().endswith("ok") for s in SEGMENTS[1:])


def test_the_timeline_as_json(damaged):
    r = run_kdump("info", "--timeline", "--json", damaged)
    assert r.code == 1
    (t,) = [json.loads(line) for line in r.out.splitlines()]
    assert [s["base_offset"] for s in t["segments"]] == [0, 7729, 15363, 22964]
    first = t["segments"][0]
    assert first["status"] == "damage" and first["first_offset"] == 0 and first["last_offset"] == 7728
    crc = [f for f in first["findings"] if f["kind"] == "crc_mismatch"]
    assert crc and crc[0]["position"] == 19880 and crc[0]["drawn_at_offset"] == 150
    assert all(s["status"] == "ok" and not s["findings"] for s in t["segments"][1:])
    assert [s["records"] for s in t["segments"]] == [7729, 7634, 7601, 7601]
    compacted = json.loads(run_kdump("info", "--timeline", "--json", COMPACTED).out)
    assert compacted["between"] == [[120, 155]] and compacted["segments"][0]["missing"] == 51


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
def test_names_and_offsets_are_never_cut(damaged, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    r = run_kdump("info", "--timeline", damaged, COMPACTED)
    assert r.code == 1 and "Traceback" not in r.err
    for line in r.out.splitlines():
        assert "…" not in line, line
    for name in SEGMENTS + ["00000000000000000133", "00000000000000000172"]:
        assert any(line.startswith(name) for line in r.out.splitlines()), (columns, name)
    for offsets in ("0..7728", "22964..30564", "120..155", "172..209"):
        assert offsets in r.out
    assert "crc_mismatch" in r.out


def test_html_needs_no_library(tmp_path, monkeypatch):
    """The page is plain HTML and SVG: no plotly (it needed plotly, and 14 s and 6 MB for 150
    partitions)."""
    import sys

    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    r = run_kdump("info", COMPACTED, "--html", tmp_path / "t.html")
    assert r.code == 0, r.err
    assert "<svg" in (tmp_path / "t.html").read_text()
