"""The two checksums of Kafka's formats.

- CRC-32 (IEEE, ``java.util.zip.CRC32``) protects v0/v1 messages: ``zlib.crc32``.
- CRC-32C (Castagnoli) protects v2 batches and producer snapshots: kdump's own C
  extension when built (``accel``, SSE4.2 where the CPU has it), else the ``crc32c``
  package (C, hardware-accelerated too). A table-driven fallback keeps kdump working,
  slowly, where neither is available.
"""

from __future__ import annotations

from zlib import crc32

from kdump.format import accel

__all__ = ["crc32", "crc32c"]

if accel.crc32c is not None:
    crc32c = accel.crc32c
else:
    try:
        from crc32c import crc32c
    except ImportError:  # pragma: no cover - only without the wheel
        crc32c = None  # type: ignore[assignment]

if crc32c is None:  # pragma: no cover - neither the C extension nor the wheel
    _POLY = 0x82F63B78
    _TABLE = []
    for _n in range(256):
        _c = _n
        for _ in range(8):
            _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
        _TABLE.append(_c)

    def crc32c(data, value: int = 0) -> int:  # type: ignore[misc]
        crc = value ^ 0xFFFFFFFF
        for b in bytes(data):
            crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
        return crc ^ 0xFFFFFFFF
