"""The two checksums of Kafka's formats.

- CRC-32 (IEEE, ``java.util.zip.CRC32``) protects v0/v1 messages: ``zlib.crc32``.
- CRC-32C (Castagnoli) protects v2 batches and producer snapshots: the ``crc32c``
  package (C, hardware-accelerated where the CPU has it). A table-driven fallback keeps
  kdump working, slowly, where that wheel is missing.
"""

from __future__ import annotations

from zlib import crc32

__all__ = ["crc32", "crc32c"]

try:
    from crc32c import crc32c
except ImportError:  # pragma: no cover - only without the wheel
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
