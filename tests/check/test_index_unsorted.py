"""An out-of-order index too large to sort (``index_file.SORTED_AT_MOST`` entries or more) is walked
as it is: the entries that rise are checked against the log, the others counted in a note.
The verdict is the sorted walk's: the order findings make it damage either way. The limit is
lowered here so that a small file shows it (``tests/storage/test_memory_index_commands.py``
runs a real one, in bounded memory)."""

from __future__ import annotations

import pytest

from kdump.check.indexes import index_file
from kdump.check.indexes.forward_pass import verify_offset_index, verify_time_index
from kdump.encode import build_v2_batch
from kdump.findings import DAMAGE, class_of
from kdump.format.index import encode_index, parse_index
from kdump.format.timeindex import encode_timeindex, parse_timeindex
from kdump.format.walk import Walker

TS = 1_700_000_000_000


def _log() -> bytes:
    return b"".join(build_v2_batch([(0, TS + i, b"k", b"v" * 40)], base_offset=i) for i in range(20))


def _positions(log: bytes) -> list[int]:
    return [b.position for b in Walker(log)]


@pytest.mark.parametrize("limit", [index_file.SORTED_AT_MOST, 1])
def test_an_offset_index_out_of_order_keeps_its_verdict_unsorted(monkeypatch, limit):
    monkeypatch.setattr(index_file, "SORTED_AT_MOST", limit)
    log = _log()
    pos = _positions(log)
    # slots 2 and 3 swapped: 3 falls below 7, so a walk that does not sort leaves it out
    entries = [(1, pos[1]), (3, pos[3]), (7, pos[7]), (5, pos[5]), (9, pos[9]), (12, pos[12])]
    check = verify_offset_index(log, 0, parse_index(encode_index(entries, 0), 0))
    kinds = {f.kind for f in check.findings}
    assert "index_not_increasing" in kinds and all(class_of(k) == DAMAGE for k in kinds), check.findings
    unsorted = [n for n in check.notes if "not checked against the log" in n]
    assert unsorted == ([] if limit > 1 else [
        "1 entry after an entry out of order not checked against the log: an index of 1 entries or more is not "
        "sorted, the entries that rise are checked"])
    assert check.entries == 6


@pytest.mark.parametrize("limit", [index_file.SORTED_AT_MOST, 1])
def test_a_time_index_out_of_order_keeps_its_verdict_unsorted(monkeypatch, limit):
    monkeypatch.setattr(index_file, "SORTED_AT_MOST", limit)
    log = _log()
    entries = [(TS + 2, 2), (TS + 8, 8), (TS + 9, 4), (TS + 12, 12)]
    check = verify_time_index(log, 0, parse_timeindex(encode_timeindex(entries, 0), 0))
    kinds = {f.kind for f in check.findings}
    assert "timeindex_not_increasing" in kinds and any(class_of(k) == DAMAGE for k in kinds), check.findings
    assert len([n for n in check.notes if "not checked against the log" in n]) == (limit == 1)
