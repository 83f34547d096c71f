"""Fuzz the index proof (indexcheck.c: index_clean) and the usual segment's one call
(segfiles.c: clean_segment_files) through ``kdump verify`` on a partition of one segment with
its ``.index`` and ``.timeindex``: input ``variant byte | index length byte | timeindex length
byte | index | timeindex | segment``. C may call the files clean only where the Python checks
find nothing, the one call's report must be the Python scan's, and verify's output must be
Python's."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402
import _common  # noqa: E402
from _common import expect  # noqa: E402

from kdump import _accel  # noqa: E402
from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE  # noqa: E402
from kdump.check.clean_segment import clean_segment  # noqa: E402
from kdump.check.indexes.forward_pass import index_findings  # noqa: E402
from kdump.check.scan import scan_file, scan_segment  # noqa: E402

VARIANTS = [["verify"], ["verify", "--json"]]
STEM = os.path.join(_cli.PARTITION, "00000000000000000000")


def split(data: bytes) -> tuple[int, bytes, bytes, bytes] | None:
    """(variant, index, timeindex, segment) of an input, None if it is too short."""
    if len(data) < 3 or 3 + data[1] + data[2] > len(data):
        return None
    a, b = 3 + data[1], 3 + data[1] + data[2]
    return data[0], data[3:a], data[a:b], data[b:]


def check(data: bytes) -> None:
    parts = split(data)
    if parts is None:
        return
    variant, index, timeindex, log = parts
    native = _accel.native()
    if native is not None:
        scan = scan_segment(log, base_offset=0, limits=_common.LIMITS)
        if native.index_clean(log, scan.valid_bytes, 0, index, timeindex):
            with _common.pure_python():
                found = index_findings("-", 0, scan, index, timeindex, limits=_common.LIMITS, log_buf=log)
            expect(found == ([], []), f"index_clean: clean, but Python finds {found}")
    for suffix, content in ((".index", index), (".timeindex", timeindex)):
        with open(STEM + suffix, "wb") as f:
            f.write(content)
    _cli.check_command(bytes((variant,)) + log, VARIANTS, _cli.PARTITION)
    if native is not None and os.path.exists(STEM + ".log"):
        one = clean_segment(STEM + ".log", 0, STEM + ".index", STEM + ".timeindex", DEFAULT_MAX_MESSAGE_SIZE,
                            DEFAULT_INDEX_INTERVAL_BYTES)
        if one is not None:
            with _common.pure_python():
                report = scan_file(STEM + ".log", base_offset=0, limits=_common.LIMITS)
                found = index_findings("-", 0, report, index, timeindex, limits=_common.LIMITS, log_buf=log)
            expect(vars(one[0]) == vars(report), f"clean_segment_files: {vars(one[0])}, Python {vars(report)}")
            expect(found == ([], []), f"clean_segment_files: clean, but Python finds {found}")


if __name__ == "__main__":
    _common.main(check)
