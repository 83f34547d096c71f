"""Fuzz the segment walker and the record decoding behind ``dump --records``.

Input: the bytes of a ``.log`` segment. Oracle: only KdumpErrors escape; the walk
yields contiguous batches inside the data and says where and why it stopped; every
batch and record serialises to JSON; and the C accelerator (when built) agrees with the
pure-Python reference batch for batch and record for record.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import LIMITS, expect, outcome, pure_python  # noqa: E402

import kdump.format.kraft_control  # noqa: E402,F401 - imported lazily by kdump; load before instrumenting
from kdump.format.walk import Walker, decode_records  # noqa: E402


def walk(data: bytes, start: int = 0):
    w = Walker(data, start, None, LIMITS)
    out = []
    for batch in w:
        out.append((batch, outcome(decode_records, data, batch, LIMITS)))
    return out, w.stop, w.stop_position


def check_walk(data: bytes, start: int, result) -> None:
    batches, stop, stop_position = result
    pos = start
    for batch, records in batches:
        expect(batch.position == pos, f"batch at {batch.position}, expected {pos} (walk is not contiguous)")
        expect(batch.size >= 26 and batch.next_position <= len(data), f"batch {batch} does not fit the data")
        json.dumps(batch.to_dict())
        if isinstance(records, list):
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
