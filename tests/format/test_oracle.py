"""kdump against kafka-python, on every segment in fixtures/ (real and generated).

kafka-python is an independent reader of the same bytes; where both decode a file they
must agree record for record and on the batch fields kafka-python exposes. Deliberately
damaged fixtures (directories named torn-*, corrupt-*, *damaged*) are left out here and
tested on their own below.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys

import pytest

try:
    from tests.oracle import kafka_python_decode_file, kdump_decode_file
except ImportError:
    from support.peers import kafka_python_decode_file, kdump_decode_file

from kdump.format.txnindex import parse_txnindex
from kdump.format.walk import TORN_TAIL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
GENERATED = os.path.join(FIXTURES, "generated")
DAMAGED_DIR = re.compile(r"^(torn-|corrupt-)|damaged")
SEGMENT_SUFFIX = re.compile(r"\.(log|checkpoint)(\.(deleted|cleaned|swap))?$")


def _segment_files() -> list[str]:
    """Every non-empty .log / .checkpoint (incl. cleaner leftovers like .log.swap) under fixtures/."""
    out = []
    for root, dirs, files in os.walk(FIXTURES):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if not SEGMENT_SUFFIX.search(name) or name.endswith("-checkpoint"):
                continue
            if os.path.getsize(path) == 0:
                continue
            if any(DAMAGED_DIR.search(part) for part in os.path.relpath(root, FIXTURES).split(os.sep)):
                continue
            out.append(os.path.relpath(path, FIXTURES))
    return out


SEGMENTS = _segment_files()


@functools.lru_cache(maxsize=4)
def _both(rel: str):
    path = os.path.join(FIXTURES, rel)
    return kdump_decode_file(path), kafka_python_decode_file(path)


def test_the_walk_found_both_trees():
    assert any(p.startswith("real" + os.sep) for p in SEGMENTS)
    assert any(p.startswith("generated" + os.sep) for p in SEGMENTS)
    assert any(p.endswith(".checkpoint") for p in SEGMENTS)


@pytest.mark.parametrize("rel", SEGMENTS, ids=SEGMENTS)
def test_records_match_kafka_python(rel):
    ours, (_, theirs) = _both(rel)
    assert ours.stop is None, f"kdump's walk stopped early: {ours.stop}"
    assert len(ours.records) == len(theirs)
    for mine, ref in zip(ours.records, theirs):
        assert mine == ref, f"first difference at offset {ref[0]}"


@pytest.mark.parametrize("rel", SEGMENTS, ids=SEGMENTS)
def test_batch_fields_match_kafka_python(rel):
    ours, (theirs, _) = _both(rel)
    assert len(ours.batches) == len(theirs)
    for mine, ref in zip(ours.batches, theirs):
        assert mine == ref
    assert all(b.crc_valid for b in ours.batches)


# -- damaged fixtures -------------------------------------------------------------------------

def test_torn_tail_yields_the_intact_prefix():
    path = os.path.join(GENERATED, "torn-tail-0", "00000000000000000000.log")
    ours = kdump_decode_file(path)
    _, theirs = kafka_python_decode_file(path)
    assert ours.stop is not None and ours.stop.kind == TORN_TAIL
    assert ours.stop.offset == 6                      # the fourth batch, base offset 6
    assert [r[0] for r in ours.records] == [0, 1, 2, 3, 4, 5]
    assert ours.records == theirs                     # kafka-python stops silently at the same place
    assert ours.stop.position == sum(b.size for b in ours.raw_batches)


# -- the generated set itself -----------------------------------------------------------------

def test_generated_txnindex_matches_the_aborts_in_the_log():
    """Each ABORT marker has an entry: its producer, the txn's first offset, the marker offset."""
    pdir = os.path.join(GENERATED, "transactions-0")
    for base in (0, 19):
        stem = os.path.join(pdir, f"{base:020d}")
        decoded = kdump_decode_file(stem + ".log")
        open_txn: dict[int, int] = {}
        expected = []
        for batch in decoded.raw_batches:
            if not batch.is_transactional:
                continue
            if batch.is_control:
                first = open_txn.pop(batch.producer_id)
                recs = [r for r in decoded.raw_records if r.offset == batch.base_offset]
                if recs[0].control.type == 0:    # ABORT
                    expected.append((batch.producer_id, first, batch.base_offset))
            else:
                open_txn.setdefault(batch.producer_id, batch.base_offset)
        with open(stem + ".txnindex", "rb") as f:
            entries = parse_txnindex(f.read()).entries
        assert [(e.producer_id, e.first_offset, e.last_offset) for e in entries] == expected
        assert all(e.version == 0 and e.last_stable_offset > e.first_offset for e in entries)


def test_generated_fixtures_are_reproducible(tmp_path):
    """The committed fixtures/generated is exactly what the generator writes today."""
    out = tmp_path / "generated"
    subprocess.run([sys.executable, os.path.join(FIXTURES, "generate.py"), str(out)], check=True,
                   capture_output=True)
    committed = {os.path.relpath(os.path.join(d, f), GENERATED)
                 for d, _, fs in os.walk(GENERATED) for f in fs}
    fresh = {os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs}
    assert committed == fresh
    for rel in sorted(fresh):
        with open(os.path.join(GENERATED, rel), "rb") as a, open(os.path.join(out, rel), "rb") as b:
            assert a.read() == b.read(), f"{rel} differs: rerun python fixtures/generate.py"
