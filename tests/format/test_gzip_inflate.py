"""gzip payloads through ISA-L's inflate (python-isal, when installed) and through zlib: the
same bytes out, and for a payload that does not decompress the same finding in zlib's words
(``gunzip.gunzip`` asks zlib again when ISA-L refuses), limits and multi-member streams included."""

from __future__ import annotations

import gzip
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.errors import KdumpError
from kdump.format import gunzip

pytestmark = pytest.mark.skipif(gunzip._inflater() is None, reason="python-isal is not installed")


def _outcome(fn, data: bytes, limit: int):
    try:
        return fn(data, limit)
    except KdumpError as e:
        return type(e).__name__, e.message


def _same(data: bytes, limit: int = 1 << 20) -> None:
    zlib_alone = _outcome(lambda d, n: b"".join(gunzip._inflate(zlib, d, n)), data, limit)
    assert _outcome(gunzip.gunzip, data, limit) == zlib_alone


def test_members_padding_limits_and_damage():
    rnd = random.Random(3)
    one = gzip.compress(rnd.randbytes(5000) + b"a" * 20000, mtime=0)
    two = one + gzip.compress(b"second member", mtime=0)
    for data in (one, two, two + b"\0" * 9, one[:-3], one[:40], one[:10] + b"\xff" * 30 + one[40:],
                 two + b"junk", b"", b"\x1f\x8b", rnd.randbytes(64)):
        _same(data)
    _same(one, limit=1000)              # past the limit: the same DecompressionLimitError
    assert gunzip.gunzip(two, 1 << 20).endswith(b"second member")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 60), st.binary(max_size=4))
def test_any_payload_cut_or_flipped(raw, cut, flip):
    data = bytearray(gzip.compress(raw, mtime=0))
    for i, b in enumerate(flip):
        data[(cut + 7 * i) % len(data)] ^= b
    _same(bytes(data[:len(data) - cut % 5]))
