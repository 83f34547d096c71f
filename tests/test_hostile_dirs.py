"""Hostile directories (issue #19): many segments, symlink loops, oversized indexes, control
characters in names, temporary files of killed runs in a quarantine.

Costs are counted (sorts, scans), never timed; bench/ measures time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corruption import FIXTURES, copy_tree, run_kdump  # noqa: E402

from kdump import crosscheck  # noqa: E402
from kdump.crosscheck import VerifyOptions, verify_files  # noqa: E402
from kdump.logdir import partition_files  # noqa: E402
from kdump.scan import ScanReport  # noqa: E402


# -- fault 4: verify is linear in segments per partition -------------------------------------------

def _empty_segments(d: Path, n: int) -> None:
    d.mkdir(parents=True)
    for i in range(n):
        os.close(os.open(d / f"{i * 10:020d}.log", os.O_CREAT | os.O_WRONLY, 0o644))


def _count_verify(d: Path, monkeypatch) -> tuple[int, int, int]:
    """(reports, sorts of the segments, scans) of a whole-directory verify."""
    sorts = scans = 0
    real_order = crosscheck.in_offset_order

    def counted_order(logs, done):
        nonlocal sorts
        sorts += 1
        return real_order(logs, done)

    def counted_scan(self, f):
        nonlocal scans
        scans += 1          # an empty segment holding one offset: each has a predecessor to compare
        return ScanReport(f.path, 0, f.base_offset, first_offset=f.base_offset, last_offset=f.base_offset)

    monkeypatch.setattr(crosscheck, "in_offset_order", counted_order)
    monkeypatch.setattr(VerifyOptions, "scan", counted_scan)
    reports = list(verify_files(partition_files(str(d)), VerifyOptions()))
    assert all(not r.findings for r in reports)
    return len(reports), sorts, scans


def test_verify_sorts_once_and_scans_each_segment_once(tmp_path, monkeypatch):
    """Issue #19, fault 4: ``_segment_checks`` re-sorted every segment once per segment
    (10,000 segments took 65 s, 100,000 never finished)."""
    counts = {}
    for n in (1_000, 100_000):
        _empty_segments(tmp_path / f"t-{n}", n)
        counts[n] = _count_verify(tmp_path / f"t-{n}", monkeypatch)
    assert counts == {1_000: (1_000, 1, 1_000), 100_000: (100_000, 1, 100_000)}


def test_a_real_verify_of_many_empty_segments_reports_each_once(tmp_path):
    d = tmp_path / "t-0"
    _empty_segments(d, 2_000)
    r = run_kdump("verify", "--json", d)
    assert r.code == 0 and len(r.out.splitlines()) == 2_000
