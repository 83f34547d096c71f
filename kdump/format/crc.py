"""The two checksums of Kafka's formats.

- CRC-32 (IEEE, ``java.util.zip.CRC32``) protects v0/v1 messages: kdump's C one while the
  accelerator is on (carry-less multiplies where the CPU has them, ~3x zlib's), else
  ``zlib.crc32``.
- CRC-32C (Castagnoli) protects v2 batches and producer snapshots: kdump's own C
  extension while it is on (kdump/_speedups/crc.c, SSE4.2 where the CPU has it), else the ``crc32c``
  package (C, hardware-accelerated too). A table-driven fallback keeps kdump working,
  slowly, where neither is available.
"""

from __future__ import annotations

import zlib

from kdump import _accel

__all__ = ["crc32", "crc32c"]

_POLY = 0x82F63B78
_TABLE: list[int] = []


def _crc32c_table(data, value: int = 0) -> int:  # pragma: no cover - only without the wheel
    if not _TABLE:
        for n in range(256):
            c = n
            for _ in range(8):
                c = (c >> 1) ^ _POLY if c & 1 else c >> 1
            _TABLE.append(c)
    crc = value ^ 0xFFFFFFFF
    for b in bytes(data):
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# The wheel's function (or the table), loaded on first use with the accelerator off:
# importing the crc32c package costs ~0.1 s of start-up (it loads importlib.metadata).
_fallback = None


def _load_fallback():
    global _fallback
    try:
        from crc32c import crc32c as _fallback
    except ImportError:  # pragma: no cover - only without the wheel
        _fallback = _crc32c_table
    return _fallback


def crc32(data) -> int:
    """The CRC-32 (IEEE) of ``data``."""
    fast = _accel.native()
    if fast is not None:
        return fast.crc32(data)
    return zlib.crc32(data)


def crc32c(data, value: int = 0) -> int:
    """The CRC-32C of ``data`` continuing from ``value``: kdump's C one while the
    accelerator is on (it releases the GIL on large buffers), else the wheel's."""
    fast = _accel.native()
    if fast is not None:
        return fast.crc32c(data, value)
    return (_fallback or _load_fallback())(data, value)
