"""gzip payloads inflated as Java's GZIPInputStream reads them (every member, trailing zero
padding ignored), the output bounded by ``limit`` (``codecs.decompress``'s): ISA-L's inflate
(python-isal) where it is installed, a third less CPU per byte than zlib's, with zlib's own
words for any payload it refuses (a finding's text does not depend on what is installed).
"""

from __future__ import annotations

import mmap
import struct
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
            return _gathered(_inflate(fast, data, limit), data, limit)
        except (fast.error, CodecError):
            pass        # zlib says what is wrong, in its own words (the finding's text)
    return _gathered(_inflate(zlib, data, limit), data, limit)


# The member trailer's last field: ISIZE, the input's size mod 2^32 (RFC 1952 2.3.1).
GZIP_ISIZE = struct.Struct("<I")


def _gathered(chunks: Iterator[bytes], data: bytes, limit: int) -> bytes:
    """The pieces as one. Past one piece, they are written into an anonymous mapping of the
    size the last member's trailer gives (the usual payload is one member), not held as a
    list and joined: a list of 1 MiB pieces can leave the heap with a hole the size of the
    payload that the next large object does not fill (measured: 60 MiB more resident for a
    60 MiB value). A mapping's pages cost nothing until written, so a trailer that lies
    costs no more than what comes; one that says less than what comes falls back to a join."""
    size = GZIP_ISIZE.unpack_from(data, len(data) - 4)[0] if len(data) >= 4 else 0
    if not OUTPUT_CHUNK < size <= limit:
        return b"".join(chunks)
    try:
        mapping = mmap.mmap(-1, size)
    except OSError:         # (no address space for it: strict overcommit, a ulimit -v)
        return b"".join(chunks)
    with mapping as out:
        for chunk in chunks:
            if out.tell() + len(chunk) > size:
                pieces = [out[:out.tell()], chunk]
                break
            out.write(chunk)
        else:
            return out[:out.tell()]
    del chunk
    # (the join holds what came: a limit's error raised inside it frees that, while a list
    # of this frame's would live on in the error's traceback, kept with the finding)
    return b"".join(_after(pieces, chunks))


def _after(pieces: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    while pieces:
        yield pieces.pop(0)
    yield from rest


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
