"""The two checksums of Kafka's formats.

- CRC-32 (IEEE, ``java.util.zip.CRC32``) protects v0/v1 messages: ``zlib.crc32``.
- CRC-32C (Castagnoli) protects v2 batches and producer snapshots: kdump's own C
  extension while it is on (kdump/_speedups/crc.c, SSE4.2 where the CPU has it), else the ``crc32c``
  package (C, hardware-accelerated too). A table-driven fallback keeps kdump working,
  slowly, where neither is available.
"""

from __future__ import annotations

from zlib import crc32

from kdump import _accel

__all__ = ["crc32", "crc32c"]

try:
    from crc32c import crc32c as _crc32c_wheel
except ImportError:  # pragma: no cover - only without the wheel
    _crc32c_wheel = None  # type: ignore[assignment]

if _crc32c_wheel is None:  # pragma: no cover - without the wheel
    _POLY = 0x82F63B78
    _TABLE = []
    for _n in range(256):
        _c = _n
        for _ in range(8):
            _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
        _TABLE.append(_c)

    def _crc32c_wheel(data, value: int = 0) -> int:  # type: ignore[misc]
        crc = value ^ 0xFFFFFFFF
        for b in bytes(data):
            crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
        return crc ^ 0xFFFFFFFF


def crc32c(data, value: int = 0) -> int:
    """The CRC-32C of ``data`` continuing from ``value``: kdump's C one while the
    accelerator is on (it releases the GIL on large buffers), else the wheel's."""
    fast = _accel.native()
    return (fast.crc32c if fast is not None else _crc32c_wheel)(data, value)
