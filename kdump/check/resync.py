"""Finding intact batches past damage: the scanner's resync.

After the cut, the scanner (``kdump.check.scan``) looks for the next plausible batch
(``next_candidate``) and walks the intact run that starts there (``intact_run``), so the
report says what a salvage could still copy out. Zero runs are skipped whole
(``first_nonzero``), and the CRC bytes checked are bounded by a budget, so crafted data
costs at most linear time.
"""

from __future__ import annotations

import re
from typing import cast

from kdump import _accel
from kdump import findings as F
from kdump.format.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from kdump.format.codecs import Limits
from kdump.format.legacy import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1
from kdump.format.walk import HEADER_UP_TO_MAGIC, Walker, need_of
from kdump.model import Finding

INT64_MAX = (1 << 63) - 1
_MIN_SIZE = {0: RECORD_OVERHEAD_V0, 1: RECORD_OVERHEAD_V1, 2: RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}

_ZERO_CHUNK = 1 << 20
_ZEROS = bytes(_ZERO_CHUNK)
# A buffer filled as asked (``need``) is searched this much at a time.
SEARCH_SPAN = 8 << 20


def first_nonzero(buf, pos: int, end: int) -> int | None:
    """Where the first byte in [pos, end) that is not zero is, or None. A chunk at a time
    against zeros (memcmp speed: a preallocated 1 GiB tail is a common sight after a crash);
    a large mapping that knows the file's holes (``data_from``) skips them unread, and one
    that trims (``follow``) is told how far the check has gone."""
    holes = getattr(buf, "data_from", None)
    follow = getattr(buf, "follow", None)
    need = need_of(buf)
    while pos < end:
        if holes is not None:
            pos = holes(pos, end)
            if pos >= end:
                return None
        n = min(_ZERO_CHUNK, end - pos)
        if need is not None:
            need(pos, pos + n)
        chunk = bytes(buf[pos:pos + n])
        if chunk != (_ZEROS if n == _ZERO_CHUNK else _ZEROS[:n]):
            return pos + n - len(chunk.lstrip(b"\x00"))
        pos += n
        if follow is not None:
            follow(pos)
    return None


def rest_is_zero(buf, pos: int, end: int) -> bool:
    return first_nonzero(buf, pos, end) is None


def entry_head(buf, pos: int, end: int) -> tuple[int, int, int] | None:
    """(offset, size, signed magic) of the entry at ``pos`` if 17 header bytes are there."""
    if end - pos < HEADER_SIZE_UP_TO_MAGIC:
        return None
    need = need_of(buf)
    if need is not None:
        need(pos, pos + HEADER_SIZE_UP_TO_MAGIC)
    offset, size, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, pos)
    return offset, size, magic



def next_candidate(buf, start: int, end: int, max_size: int, lo: int = 0, hi: int = INT64_MAX,
                   budget: list[int] | None = None) -> int | None:
    """The first position >= ``start`` holding a plausible batch: magic 0..2, a length in
    [minimum, bytes left] and not above ``max_size``, an offset field in [lo, hi] and a
    valid CRC.

    A legacy message must also be followed by another valid entry, the end of the file or
    only zeros: compressed v0/v1 wrappers carry their inner messages, CRC and all, and
    snappy or lz4 literals can leave those verbatim in the payload. A regular expression
    finds candidates (the length's high byte and the magic) in C; runs of zeros are
    skipped whole with ``first_nonzero``.

    ``budget`` (a one-item list, shared by every call of one scan) caps the bytes whose CRC
    is checked: crafted data full of plausible headers would otherwise cost bytes x length.
    When it runs out the search gives up (returns None), which only shortens the report of
    what lies beyond the damage.
    """
    top = min(max_size >> 24, 0x7F)
    pattern = _candidate_pattern(top)
    follow = getattr(buf, "follow", None)     # a large mapping drops the pages left behind
    need = need_of(buf)
    c_native = _accel.native()
    find_candidate = c_native.find_candidate if c_native is not None else None
    pos = start
    while pos < end - HEADER_SIZE_UP_TO_MAGIC:
        # The search starts at the length field (a leading byte class lets re skip fast).
        # A buffer filled as asked is searched a span at a time: a match takes 9 bytes, so
        # the next span starts 8 before this one's end.
        upto = end if need is None else min(end, pos + 8 + SEARCH_SPAN)
        if need is not None:
            need(pos, upto)
        if find_candidate is not None:
            at = find_candidate(buf, pos + 8, upto, top)
        else:
            m = pattern.search(buf, pos + 8, upto)
            at = -1 if m is None else m.start()
        if at < 0:
            if upto == end:
                return None
            pos = upto - 16
            if follow is not None:
                follow(pos)
            continue
        c = at - 8
        if follow is not None:
            follow(c)
        offset, size, _, magic = HEADER_UP_TO_MAGIC.unpack_from(buf, c)
        if size == 0:
            # Probably inside a run of zeros: no entry can start before the next non-zero
            # byte could be part of its length field.
            nz = first_nonzero(buf, c + 8, end)
            if nz is None:
                return None
            pos = max(c + 1, nz - 11)
            continue
        nxt = c + LOG_OVERHEAD + size
        plausible = _MIN_SIZE[magic] <= size <= max_size and lo <= offset <= hi and nxt <= end
        if plausible and budget is not None:
            budget[0] -= nxt - c
            if budget[0] < 0:
                return None
        if plausible and _crc_ok(buf, c, nxt):
            if magic == 2 or nxt == end or rest_is_zero(buf, nxt, end) or _crc_ok(buf, nxt, end):
                return c
        pos = c + 1
    return None


def _crc_ok(buf, pos: int, end: int) -> bool:
    """Is there a whole entry with a valid CRC at ``pos``?"""
    for b in Walker(buf, pos, end):
        return b.crc_valid
    return False


_PATTERNS: dict[int, re.Pattern] = {}


def _candidate_pattern(hi: int) -> re.Pattern:
    p = _PATTERNS.get(hi)
    if p is None:
        # The bound as an escape: a raw 0x5C or 0x5D byte would be read as regex syntax.
        p = _PATTERNS[hi] = re.compile(rb"(?s)[\x00-\x%02x].{7}[\x00-\x02]" % hi)
    return p


def intact_run(buf, start: int, end: int, limits: Limits) -> tuple[int, int, int | None, int | None, Finding | None]:
    """Walk the CRC-valid batches from ``start``: (where they stop, how many, first offset,
    last offset, what stopped them or None at the end of the data)."""
    n, first, last, stop_at = 0, None, None, start
    w = Walker(buf, start, end, limits)
    bad: Finding | None = None
    for b in w:
        if not b.crc_valid:
            bad = Finding(F.CRC_MISMATCH, b.position, b.base_offset, "Record is corrupt (CRC mismatch) past the cut")
            break
        n += 1
        if first is None:
            first = b.base_offset if b.base_offset is not None else b.last_offset
        last = b.last_offset
        stop_at = b.next_position
    else:
        if w.stop is not None:
            bad = w.stop
        stop_at = w.stop_position
    if bad is not None:
        stop_at = cast(int, bad.position)     # a walk's findings are located
    return stop_at, n, first, last, bad
