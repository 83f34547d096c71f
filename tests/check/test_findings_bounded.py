"""Findings are collapsed, not all held: an index file whose
every entry is a finding keeps the first 50 of each kind, and counts the rest.

Before, a 0-byte ``.log`` beside a 4 MB ``.index`` (524,288 entries past the end) took
``verify --json`` to ~430 MB and 17 s, a 100 MB one to 6-7.5 GB; each finding was made, held
and written. Peak RSS is measured in a child process (``support.run.peak_rss``) with a
generous bound; no time is asserted.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from support.run import peak_rss, run_kdump

ENTRIES = 4 << 17           # 4 MB of index entries
RSS_BOUND_KB = 250 << 10    # ~150 MB now (a Python object per entry remains); ~430 MB before


def _bad_index(d: Path, entries: int) -> Path:
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"")
    (d / "00000000000000000000.index").write_bytes(b"".join(struct.pack(">ii", i + 1, (i + 1) * 100)
                                                            for i in range(entries)))
    return d


def _bad_txnindex(d: Path, entries: int) -> Path:
    from kdump.encode import build_v2_batch

    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")]))
    (d / "00000000000000000000.txnindex").write_bytes(b"".join(struct.pack(">hqqqq", 0, i, 1000 + i, 2000 + i, 0)
                                                               for i in range(entries)))
    return d


def test_an_index_of_bad_entries_is_collapsed(tmp_path):
    d = _bad_index(tmp_path / "t-0", 300)
    r = run_kdump("verify", "--json", d)
    assert r.code == 1
    idx = [json.loads(x) for x in r.out.splitlines()][1]
    kinds = [f["kind"] for f in idx["findings"]]
    assert kinds.count("index_past_end") == 50 and idx["not_listed"] == {"index_past_end": 250}
    # the records the index names are missing: its last entry, not the last one kept
    [lost] = [f for f in idx["findings"] if f["kind"] == "records_missing"]
    assert lost["message"].startswith("offsets 0..300 are missing (301 offsets): the log ends at 0; ")
    t = run_kdump("verify", "--format", "text", d)
    assert "  index_past_end: 250 more in this file, not listed (the first 50 of each kind are)" in t.out.splitlines()
    i = run_kdump("index", "--verify", d / "00000000000000000000.index")
    assert i.code == 1
    assert "note: index_past_end: 250 more faults not listed (the first 50 of each kind are)" in i.out.splitlines()


def test_a_txnindex_of_bad_entries_is_collapsed(tmp_path):
    d = _bad_txnindex(tmp_path / "t-0", 300)
    r = run_kdump("verify", "--json", d)
    assert r.code == 1
    txn = [json.loads(x) for x in r.out.splitlines()][1]
    assert txn["not_listed"] == {"txnindex_past_end": 250} and len(txn["findings"]) == 50


@pytest.mark.slow
@pytest.mark.parametrize("args", [("verify", "--json"), ("recover", "--json")])
def test_memory_does_not_grow_with_the_findings_of_an_index(tmp_path, args):
    d = _bad_index(tmp_path / "t-0", ENTRIES)
    code, kb = peak_rss(tmp_path / "out", args[0], d, *args[1:])
    assert code == 1
    assert kb < RSS_BOUND_KB, f"peak RSS {kb} KB on {ENTRIES} bad index entries"
    if args[0] == "verify":
        idx = json.loads((tmp_path / "out").read_text().splitlines()[1])
        assert idx["not_listed"] == {"index_past_end": ENTRIES - 50}


@pytest.mark.slow
def test_memory_does_not_grow_with_the_findings_of_a_txnindex(tmp_path):
    d = _bad_txnindex(tmp_path / "t-0", ENTRIES // 4)
    code, kb = peak_rss(tmp_path / "out", "verify", "--json", d)
    assert code == 1
    assert kb < RSS_BOUND_KB, f"peak RSS {kb} KB"
