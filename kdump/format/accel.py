"""The optional C accelerator ``kdump._speedups``, or None for each function it provides.

The pure-Python code is the reference; these are drop-in replacements for its hot loops
and hand every unusual case back to it. Set ``KDUMP_NO_SPEEDUPS=1`` to run without them
(the tests run both ways and compare).

- ``scan_v2(buf, pos, end, max_batches) -> (batches, new_pos)``: the well-formed v2
  batches from ``pos`` on (Walker).
- ``decode_v2_records(data, base_offset, base_timestamp, log_append_time, base_sequence,
  count) -> list[Record] | None``: records of a non-control batch, None if malformed.
- ``crc32c(data, value=0) -> int``: hardware CRC-32C where the CPU has SSE4.2.
"""

from __future__ import annotations

import os

from kdump.model import Batch, Record

scan_v2 = None
decode_v2_records = None
crc32c = None
speedups = None
unavailable: str | None = None     # why the extension is not in use (for diagnostics)

if os.environ.get("KDUMP_NO_SPEEDUPS", "") not in ("", "0"):
    unavailable = "disabled by KDUMP_NO_SPEEDUPS"
else:
    try:
        from kdump import _speedups

        _speedups.init(Batch, Record)
    except Exception as e:  # noqa: BLE001 - not built, or built against another model: stay pure Python
        unavailable = f"{type(e).__name__}: {e}"
    else:
        speedups = _speedups
        scan_v2 = _speedups.scan_v2
        decode_v2_records = _speedups.decode_v2_records
        crc32c = _speedups.crc32c

__all__ = ["crc32c", "decode_v2_records", "scan_v2", "speedups", "unavailable"]
