"""Fuzz the segment walker and the record decoding behind ``dump --records``.

Input: the bytes of a ``.log`` segment. Oracle: only KdumpErrors escape; the walk
yields contiguous batches inside the data and says where and why it stopped; every
batch and record serialises to JSON; and the C accelerator (when built) agrees with the
pure-Python reference batch for batch and record for record.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import LIMITS, expect, outcome, pure_python  # noqa: E402

import kdump.format.kraft_control  # noqa: E402,F401 - imported lazily by kdump; load before instrumenting
from kdump.format.records import RECORDS_SLICE  # noqa: E402
from kdump.format.walk import Walker, record_slices  # noqa: E402

KEPT = 4 * RECORDS_SLICE    # records kept for comparison; past that a digest (a record-count bomb)


def records_of(data: bytes, batch):
    """The batch's records as the dump reads them, a slice at a time (each at most
    RECORDS_SLICE): the list, or for more than KEPT (count, digest); ("error", kind)."""
    kept: list = []
    digest = hashlib.sha256()
    n = 0
    for records in record_slices(data, batch, LIMITS):
        expect(len(records) <= RECORDS_SLICE, f"a slice of {len(records)} records")
        n += len(records)
        digest.update(repr(records).encode())
        if n <= KEPT:
            kept += records
    return kept if n <= KEPT else ("many", n, digest.hexdigest())


def walk(data: bytes, start: int = 0):
    w = Walker(data, start, None, LIMITS)
    out = []
    for batch in w:
        out.append((batch, outcome(records_of, data, batch)))
    return out, w.stop, w.stop_position


def check_walk(data: bytes, start: int, result) -> None:
    batches, stop, stop_position = result
    pos = start
    for batch, records in batches:
        expect(batch.position == pos, f"batch at {batch.position}, expected {pos} (walk is not contiguous)")
        expect(batch.size >= 26 and batch.next_position <= len(data), f"batch {batch} does not fit the data")
        json.dumps(batch.to_dict())
        if isinstance(records, tuple) and records[0] == "many":
            expect(batch.magic >= 2 and records[1] == batch.count, f"{records[1]} records, header says {batch.count}")
        elif isinstance(records, list):
            if batch.magic >= 2:
                expect(len(records) == batch.count, f"{len(records)} records, header says {batch.count}")
            else:
                expect(len(records) >= 1, "a legacy batch decoded to no records")
            for r in records:
                json.dumps(r.to_dict())
        pos = batch.next_position
    expect(stop_position == pos, f"stop_position {stop_position}, last batch ends at {pos}")
    if stop is None:
        expect(pos == len(data), f"walk ended at {pos} of {len(data)} without saying why")
    else:
        expect(stop.position == pos, f"stop finding at {stop.position}, walk ended at {pos}")


def check(data: bytes) -> None:
    result = walk(data)
    check_walk(data, 0, result)
    if _common.has_accel():
        with pure_python():
            reference = walk(data)
        expect(result[0] == reference[0], "C accelerator and pure Python disagree on batches or records")
        expect(result[1:] == reference[1:], f"C accelerator stops {result[1:]}, pure Python {reference[1:]}")


if __name__ == "__main__":
    _common.main(check)
