"""Fuzz every decompression path: gzip, snappy (xerial and raw), lz4 (magic 0 header
quirk, 1, 2), zstd, and compress -> decompress round trips.

Input: ``selector | payload``. The selector picks the codec and magic and whether a
valid frame header is put in front of the payload, so mutations reach the block
decoders instead of dying at the magic check. Oracle: only KdumpErrors escape, the
output never exceeds the limit, and round trips return the input.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import LIMITS, expect, outcome  # noqa: E402

from kdump.errors import CodecError, DecompressionLimitError  # noqa: E402
from kdump.format import codecs  # noqa: E402
from kdump.format.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress, decompress  # noqa: E402

XERIAL_HEADER = codecs.XERIAL_HEADER.pack(codecs.XERIAL_MAGIC, 1, 1)
LZ4_HEADER = b"\x04\x22\x4d\x18\x60\x40\x82"            # Kafka's FLG/BD with the correct HC
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# (codec, magic, prefix) per selector value; the last entries are round trips.
MODES = [
    (GZIP, 2, b""), (GZIP, 1, GZIP_HEADER),
    (SNAPPY, 2, b""), (SNAPPY, 1, XERIAL_HEADER),
    (LZ4, 2, b""), (LZ4, 1, LZ4_HEADER), (LZ4, 0, b""), (LZ4, 0, LZ4_HEADER),
    (ZSTD, 2, b""), (ZSTD, 2, ZSTD_MAGIC), (ZSTD, 1, b""),
    (NONE, 2, b""), (7, 2, b""),
]
ROUND_TRIPS = [(GZIP, 2, True), (SNAPPY, 2, True), (SNAPPY, 2, False), (LZ4, 2, True), (LZ4, 0, True),
               (ZSTD, 2, True)]


def check(data: bytes) -> None:
    if not data:
        return
    selector, payload = data[0], data[1:]
    index = selector % (len(MODES) + len(ROUND_TRIPS))
    if index >= len(MODES):
        codec, magic, xerial = ROUND_TRIPS[index - len(MODES)]
        packed = compress(codec, payload, magic, xerial)
        expect(decompress(codec, packed, magic, limits=LIMITS) == payload, f"codec {codec} round trip failed")
        return
    codec, magic, prefix = MODES[index]
    payload = prefix + payload
    limit = LIMITS.for_input(len(payload))
    got = outcome(decompress, codec, payload, magic, limits=LIMITS)
    if isinstance(got, bytes):
        expect(len(got) <= limit, f"codec {codec} returned {len(got)} bytes, limit {limit}")
        expect(codec != ZSTD or magic >= 2, "zstd accepted in a magic 0/1 message")
        expect(codec in (GZIP, SNAPPY, LZ4, ZSTD, NONE), f"unknown codec {codec} accepted")
    else:
        expect(got[1] in {c.__name__ for c in (CodecError, DecompressionLimitError)},
               f"codec {codec} raised {got[1]}, not a CodecError")


if __name__ == "__main__":
    _common.main(check)
