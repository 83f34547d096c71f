"""gzip payloads inflated as Java's GZIPInputStream reads them (every member, trailing zero
padding ignored), the output bounded by ``limit`` (``codecs.decompress``'s): ISA-L's inflate
(python-isal) where it is installed, a third less CPU per byte than zlib's, with zlib's own
words for any payload it refuses (a finding's text does not depend on what is installed).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from kdump.errors import CodecError, DecompressionLimitError

_fast_inflate = None     # isal's isal_zlib, imported at the first payload (12 ms: not at every start-up)
_looked = False


def _inflater():
    """ISA-L's zlib-like module, or None where python-isal is not installed."""
    global _fast_inflate, _looked
    if not _looked:
        _looked = True
        try:
            from isal import isal_zlib
            _fast_inflate = isal_zlib
        except ImportError:
            pass
    return _fast_inflate

GZIP_WINDOW_MAX = 1 << 20
OUTPUT_CHUNK = 1 << 20    # output per call, so a bomb costs the limit, not twice it


def too_big(codec: str, limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(f"{codec} payload expands beyond {limit} bytes (limit); not decompressed")


def gunzip(data: bytes, limit: int) -> bytes:
    fast = _inflater()
    if fast is not None:
        try:
            return b"".join(_inflate(fast, data, limit))
        except (fast.error, CodecError):
            pass        # zlib says what is wrong, in its own words (the finding's text)
    return b"".join(_inflate(zlib, data, limit))


def gunzip_chunks(data: bytes, limit: int) -> Iterator[bytes]:
    """``gunzip`` a piece of at most OUTPUT_CHUNK at a time (a payload streamed past its size
    threshold; zlib's, whose words a finding quotes)."""
    return _inflate(zlib, data, limit)


def _inflate(lib, data: bytes, limit: int) -> Iterator[bytes]:
    total = 0
    pos, end = 0, len(data)
    view = memoryview(data)
    while pos < end:
        # Java stops at trailing zero padding too; anything else must be another member.
        if data[pos] == 0 and data.count(0, pos) == end - pos:
            break
        d = lib.decompressobj(16 + lib.MAX_WBITS)
        # The first member (usually the only one) gets up to GZIP_WINDOW_MAX of input a call,
        # later ones growing windows: ``unused_data`` copies what follows a member and
        # ``unconsumed_tail`` what a call's output bound left unread, so handing the whole rest
        # to each of many tiny members, or to each 1 MiB of output of a large one (a 55 MB
        # payload inflating to 680 MB), would be quadratic.
        window = GZIP_WINDOW_MAX if pos == 0 else 1024
        piece = view[pos:pos + window]
        pos += len(piece)
        while True:
            try:
                chunk = d.decompress(piece, min(limit + 1 - total, OUTPUT_CHUNK))
            except lib.error as e:
                if lib is not zlib:
                    raise
                raise CodecError(f"gzip payload does not decompress: {e}") from None
            total += len(chunk)
            if total > limit:
                raise too_big("gzip", limit)
            yield chunk
            if d.eof:
                pos -= len(d.unused_data)
                break
            if d.unconsumed_tail:          # more output is due from this piece
                piece = d.unconsumed_tail
                continue
            if pos >= end:
                raise CodecError("gzip payload is truncated")
            window = min(window * 2, GZIP_WINDOW_MAX)
            piece = view[pos:pos + window]
            pos += len(piece)
