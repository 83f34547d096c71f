"""Compression codecs as Kafka frames them (clients/.../common/compress/*.java).

- gzip (1): RFC 1952, possibly several members (Java's GZIPInputStream reads them all).
- snappy (2): xerial snappy-java stream framing ("\\x82SNAPPY\\0", version, compat, then
  int32 BE length + raw block chunks); input without that magic is one raw block, which
  snappy-java also accepts (some non-Java producers write it).
- lz4 (3): LZ4 frame. For magic 0 Kafka wrote the header checksum over magic+FLG+BD
  instead of FLG+BD (KAFKA-3160) and skips checking it when reading, so we repair it.
- zstd (4): a standard frame, usually without a content size; v2 batches only.

Every decompression is bounded: output past ``limit`` bytes is a ``DecompressionLimitError``
finding, never an allocation. A missing library is an ``UnsupportedCodecError``.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator

from kdump.errors import CodecError, UnsupportedCodecError
from kdump.format.gunzip import gunzip, gunzip_chunks
from kdump.format.gunzip import too_big as _too_big

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

# Bounds on decompressed size: ratio x compressed size, at least FLOOR, at most CAP.
DEFAULT_RATIO = 255
DEFAULT_FLOOR = 64 << 20
DEFAULT_CAP = 1 << 30
# decompress_chunks(stream=True): pieces of this much in all, then of a few MiB at most.
STREAM_THRESHOLD = 8 << 20


# Records a v2 batch may declare (--max-records-per-batch). Kafka's own bound: a batch is
# built by MemoryRecordsBuilder, which counts its records' uncompressed bytes in an int32
# (as message.max.bytes bounds a batch on disk to an int32), and every record takes at least
# 7 bytes (length, attributes, timestamp delta, offset delta, key and value lengths, header
# count: one byte each at least). So no batch Kafka wrote holds more than (2^31 - 1) // 7
# records; the record count field (an int32) alone would allow 2^31 - 1.
MIN_RECORD_SIZE = 7
DEFAULT_MAX_RECORDS = (2 ** 31 - 1) // MIN_RECORD_SIZE


class Limits:
    """How far a compressed payload may expand (issue: decompression bombs), and how many
    records a batch may declare (record-count bombs)."""

    __slots__ = ("cap", "floor", "max_records", "ratio")

    def __init__(self, ratio: int = DEFAULT_RATIO, floor: int = DEFAULT_FLOOR, cap: int = DEFAULT_CAP,
                 max_records: int = DEFAULT_MAX_RECORDS) -> None:
        self.ratio, self.floor, self.cap, self.max_records = ratio, floor, cap, max_records

    def for_input(self, compressed_size: int) -> int:
        return min(self.cap, max(self.floor, self.ratio * compressed_size))


DEFAULT_LIMITS = Limits()


def limits_for(max_decompressed: int = DEFAULT_CAP, max_expansion: int | None = None,
               max_records: int | None = None) -> Limits:
    """The limits a user asked for (--max-decompressed / --max-expansion /
    --max-records-per-batch): at most ``max_decompressed`` bytes and ``max_expansion`` times
    the compressed size, any payload up to the floor (or ``max_decompressed`` if lower)
    allowed; at most ``max_records`` records declared by a batch."""
    ratio = DEFAULT_RATIO if max_expansion is None else max_expansion
    records = DEFAULT_MAX_RECORDS if max_records is None else max_records
    if max_decompressed == DEFAULT_LIMITS.cap and ratio == DEFAULT_LIMITS.ratio and records == DEFAULT_MAX_RECORDS:
        return DEFAULT_LIMITS
    return Limits(ratio=ratio, floor=min(DEFAULT_FLOOR, max_decompressed), cap=max_decompressed, max_records=records)


def _missing(codec: str, package: str) -> UnsupportedCodecError:
    return UnsupportedCodecError(f"{codec} data needs the Python package '{package}', which is not installed",
                                 hint=f"pip install {package}")


# -- gzip -------------------------------------------------------------------------------------

# Inflating (every member, output bounded): kdump/format/gunzip.py, with ISA-L's inflate or zlib's.

def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


# -- snappy -----------------------------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = struct.Struct(">8sii")          # magic, version, min compatible version
XERIAL_CHUNK_SIZE = 32 * 1024                     # snappy-java's default block
_CHUNK_LEN = struct.Struct(">i")


def _snappy():
    try:
        import cramjam
    except ImportError:  # pragma: no cover - exercised by the missing-library test
        raise _missing("snappy", "cramjam") from None
    return cramjam.snappy


def _raw_snappy_length(block: bytes | memoryview) -> int:
    """The uncompressed length a raw snappy block declares (a leading uvarint)."""
    result = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
        shift += 7
    raise CodecError("snappy block has no valid length preamble")


# A snappy element expands at most 64 bytes from 3 (a copy with a 2-byte offset), so a
# block cannot honestly declare more than ~22x its size; checking this before
# decompressing keeps the declared length from sizing an allocation.
SNAPPY_MAX_EXPANSION = 24


def _unsnappy_block(snappy, block, limit: int, total_limit: int | None = None) -> bytes:
    """One raw block, which may add at most ``limit`` bytes (of ``total_limit`` for the payload)."""
    declared = _raw_snappy_length(block)
    if declared > limit:
        raise _too_big("snappy", limit if total_limit is None else total_limit)
    if declared > SNAPPY_MAX_EXPANSION * len(block) + 16:
        raise CodecError(f"snappy block of {len(block)} bytes declares {declared} uncompressed bytes, "
                         f"more than it can hold")
    try:
        return bytes(snappy.decompress_raw(bytes(block)))
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CodecError(f"snappy payload does not decompress: {e}") from None


def _unsnappy(data: bytes, limit: int) -> Iterator[bytes]:
    snappy = _snappy()
    if not data.startswith(XERIAL_MAGIC):
        yield _unsnappy_block(snappy, data, limit)       # at most SNAPPY_MAX_EXPANSION x the input
        return
    if len(data) < XERIAL_HEADER.size:
        raise CodecError("snappy (xerial) header is truncated")
    total = 0
    pos = XERIAL_HEADER.size
    end = len(data)
    while pos < end:
        # A concatenated stream repeats the header; newer snappy-java accepts that. (Checked
        # first: the magic read as a chunk length is negative.)
        if data.startswith(XERIAL_MAGIC, pos):
            if end - pos < XERIAL_HEADER.size:
                raise CodecError(f"snappy (xerial) header at payload byte {pos} is truncated")
            pos += XERIAL_HEADER.size
            continue
        if end - pos < 4:
            raise CodecError(f"snappy (xerial) chunk length is truncated at payload byte {pos}")
        (n,) = _CHUNK_LEN.unpack_from(data, pos)
        pos += 4
        if n < 0 or n > end - pos:
            raise CodecError(f"snappy (xerial) chunk of {n} bytes at payload byte {pos - 4} runs past the payload")
        block = _unsnappy_block(snappy, memoryview(data)[pos:pos + n], limit - total, limit)
        total += len(block)
        pos += n
        yield block


def _snappy_compress(data: bytes, xerial: bool = True) -> bytes:
    snappy = _snappy()
    if not xerial:
        return bytes(snappy.compress_raw(data))
    parts = [XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for i in range(0, max(len(data), 1), XERIAL_CHUNK_SIZE):
        block = bytes(snappy.compress_raw(data[i:i + XERIAL_CHUNK_SIZE]))
        parts.append(_CHUNK_LEN.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# -- lz4 --------------------------------------------------------------------------------------

LZ4_MAGIC = b"\x04\x22\x4d\x18"
LZ4_FLG_CONTENT_SIZE = 0x08


def _lz4():
    try:
        import lz4.frame
    except ImportError:  # pragma: no cover
        raise _missing("lz4", "lz4") from None
    return lz4.frame


def _xxh32(data: bytes) -> int:
    try:
        import xxhash
    except ImportError:  # pragma: no cover
        raise _missing("lz4 (magic 0)", "xxhash") from None
    return xxhash.xxh32_intdigest(data)


def _lz4_descriptor_end(data: bytes) -> int:
    """Position of the header-checksum byte (HC) of an LZ4 frame."""
    if len(data) < 7 or not data.startswith(LZ4_MAGIC):
        raise CodecError("lz4 payload does not start with an LZ4 frame magic")
    hc = 6 + (8 if data[4] & LZ4_FLG_CONTENT_SIZE else 0)
    if hc >= len(data):
        raise CodecError("lz4 frame header is truncated")
    return hc


def lz4_fix_legacy_header(data: bytes) -> bytes:
    """Replace the header checksum Kafka wrote for magic 0 (over magic+FLG+BD) by the right one."""
    hc = _lz4_descriptor_end(data)
    good = (_xxh32(data[4:hc]) >> 8) & 0xFF
    if data[hc] == good:
        return data
    return data[:hc] + bytes((good,)) + data[hc + 1:]


def lz4_break_legacy_header(data: bytes) -> bytes:
    """The inverse, for writing magic-0 fixtures the way Kafka 0.8-0.9 did."""
    hc = _lz4_descriptor_end(data)
    bad = (_xxh32(data[0:hc]) >> 8) & 0xFF
    return data[:hc] + bytes((bad,)) + data[hc + 1:]


LZ4_CHUNK = 1 << 20       # output per call: max_length is allocated up front by python-lz4
LZ4_WINDOW = 64 << 10     # input per call: python-lz4 copies what a call leaves unconsumed


def _unlz4(data: bytes, limit: int, magic: int) -> Iterator[bytes]:
    frame = _lz4()
    if magic == 0:
        data = lz4_fix_legacy_header(data)
    d = frame.LZ4FrameDecompressor()
    total = 0
    pos, end = 0, len(data)
    try:
        while not d.eof:
            if d.needs_input:
                if pos >= end:
                    break
                piece = data[pos:pos + LZ4_WINDOW]
                pos += len(piece)
            else:
                piece = b""          # more output is due from input already given
            chunk = d.decompress(piece, max_length=min(limit + 1 - total, LZ4_CHUNK))
            total += len(chunk)
            if total > limit:
                raise _too_big("lz4", limit)
            yield chunk
    except RuntimeError as e:
        raise CodecError(f"lz4 payload does not decompress: {e}") from None
    if not d.eof:
        raise CodecError("lz4 payload is truncated (no end mark)")


def _lz4_compress(data: bytes, magic: int = 2) -> bytes:
    frame = _lz4()
    out = frame.compress(data, block_size=frame.BLOCKSIZE_MAX64KB, block_linked=False,
                         content_checksum=False, block_checksum=False, store_size=False)
    return lz4_break_legacy_header(out) if magic == 0 else out


# -- zstd -------------------------------------------------------------------------------------

ZSTD_MAX_EXPANSION = 1 << 15      # one input byte can yield at most ~32 KiB (RLE blocks)
ZSTD_STREAM_STEP = 64             # input per call: at most 2 MiB out


def _zstd():
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        raise _missing("zstd", "zstandard") from None
    return zstandard


_ZSTD = threading.local()      # a decompressor per thread: making one costs ~18 us, a batch's decode less


def _unzstd(data: bytes, limit: int, stream: bool = False) -> Iterator[bytes]:
    zstandard = _zstd()
    decompressor = getattr(_ZSTD, "decompressor", None)
    if decompressor is None:
        decompressor = _ZSTD.decompressor = zstandard.ZstdDecompressor()
    d = decompressor.decompressobj()
    total = 0
    pos = 0
    end = len(data)
    view = memoryview(data)
    try:
        while pos < end and not d.eof:
            # Feed only as much input as can not overshoot the limit in one call; streamed, nor
            # STREAM_THRESHOLD, and past it ZSTD_STREAM_STEP a call (decompressobj has no max_length).
            room = (min(limit, STREAM_THRESHOLD) if stream else limit) - total
            step = max(ZSTD_STREAM_STEP, room // ZSTD_MAX_EXPANSION)
            chunk = d.decompress(view[pos:pos + step])
            pos += step
            total += len(chunk)
            if total > limit:
                del chunk           # (one call may give up to the limit): not kept by the traceback
                raise _too_big("zstd", limit)
            if chunk:
                yield chunk
    except zstandard.ZstdError as e:
        raise CodecError(f"zstd payload does not decompress: {e}") from None
    if not d.eof:
        raise CodecError("zstd payload is truncated")


def _zstd_compress(data: bytes) -> bytes:
    return _zstd().ZstdCompressor(write_content_size=False).compress(data)


# -- dispatch ---------------------------------------------------------------------------------

def decompress(codec: int, data: bytes | memoryview, magic: int = 2, limit: int | None = None,
               limits: Limits = DEFAULT_LIMITS) -> bytes:
    """Decompress a batch payload (v2) or wrapper value (v0/v1) written with ``codec``."""
    return b"".join(decompress_chunks(codec, data, magic, limit, limits))


def decompress_chunks(codec: int, data: bytes | memoryview, magic: int = 2, limit: int | None = None,
                      limits: Limits = DEFAULT_LIMITS, stream: bool = False) -> Iterator[bytes]:
    """``decompress`` a piece at a time, same errors; ``stream``: no piece above a few MiB."""
    data = bytes(data)
    if limit is None:
        limit = limits.for_input(len(data))
    if codec == GZIP:
        return gunzip_chunks(data, limit) if stream else iter((gunzip(data, limit),))
    if codec == SNAPPY:
        return _unsnappy(data, limit)
    if codec == LZ4:
        return _unlz4(data, limit, magic)
    if codec == ZSTD:
        if magic < 2:
            raise CodecError("zstd is not valid in a magic 0/1 message")
        return _unzstd(data, limit, stream)
    if codec == NONE:
        return iter((data,))
    raise CodecError(f"unknown compression type id {codec}")


def compress(codec: int, data: bytes, magic: int = 2, xerial: bool = True) -> bytes:
    """Compress like Kafka's producers do (used by the fixture generator and tests)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return _gzip(data)
    if codec == SNAPPY:
        return _snappy_compress(data, xerial)
    if codec == LZ4:
        return _lz4_compress(data, magic)
    if codec == ZSTD:
        return _zstd_compress(data)
    raise ValueError(f"unknown compression type id {codec}")
