"""A gzip payload of more than one output piece is gathered into a mapping the size its
trailer gives (``gunzip._gathered``), not a list that is joined: the same bytes and the same
findings as the join, whatever the trailer says (several members, zero padding, a trailer
that lies), and one decompression a batch on dump's way."""

from __future__ import annotations

import gzip
import random
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.errors import KdumpError
from kdump.format import gunzip

PIECE = 4096        # the output piece these tests run with, so that small payloads take many


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    monkeypatch.setattr(gunzip, "OUTPUT_CHUNK", PIECE)


def _joined(data: bytes, limit: int):
    try:
        return b"".join(gunzip._inflate(zlib, data, limit))
    except KdumpError as e:
        return type(e).__name__, e.message


def _gathered(data: bytes, limit: int):
    try:
        return gunzip._gathered(gunzip._inflate(zlib, data, limit), data, limit)
    except KdumpError as e:
        return type(e).__name__, e.message


def _mappings(monkeypatch) -> list[int]:
    sizes: list[int] = []
    real = gunzip.mmap.mmap

    def counted(fileno, length, *args, **kwargs):
        sizes.append(length)
        return real(fileno, length, *args, **kwargs)

    monkeypatch.setattr(gunzip.mmap, "mmap", counted)
    return sizes


def _lying(data: bytes, size: int) -> bytes:
    return data[:-4] + struct.pack("<I", size)


def test_one_member_is_written_into_a_mapping_of_its_size(monkeypatch):
    value = random.Random(1).randbytes(3 * PIECE) + b"x" * (20 * PIECE)
    data = gzip.compress(value, mtime=0)
    sizes = _mappings(monkeypatch)
    assert gunzip.gunzip(data, 1 << 20) == value
    assert sizes == [len(value)] * len(sizes) and sizes     # (ISA-L's run and, were it refused, zlib's)


def test_a_payload_of_one_piece_is_not_mapped(monkeypatch):
    data = gzip.compress(b"y" * PIECE, mtime=0)
    sizes = _mappings(monkeypatch)
    assert gunzip.gunzip(data, 1 << 20) == b"y" * PIECE
    assert sizes == []


@pytest.mark.parametrize("case", ["two members", "second member larger", "zero padding", "trailer says more",
                                  "trailer says less", "trailer past the limit", "past the limit", "truncated"])
def test_whatever_the_trailer_says_the_bytes_and_findings_are_the_join(case):
    rnd = random.Random(7)
    big = gzip.compress(rnd.randbytes(2 * PIECE) + b"a" * (10 * PIECE), mtime=0)
    small = gzip.compress(b"b" * (3 * PIECE), mtime=0)
    limit = 1 << 20
    data = {"two members": big + small,
            "second member larger": small + big,
            "zero padding": big + b"\0" * 11,
            "trailer says more": _lying(big, 40 * PIECE),
            "trailer says less": _lying(big, 2 * PIECE),
            "trailer past the limit": _lying(big, limit + 1),
            "past the limit": big,
            "truncated": big[:len(big) // 2] + big[-4:]}[case]
    if case == "past the limit":
        limit = 5 * PIECE
    assert _gathered(data, limit) == _joined(data, limit)


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(0, 12 * PIECE), min_size=1, max_size=3), seed=st.integers(0, 2**16),
       pad=st.integers(0, 9), isize=st.one_of(st.none(), st.integers(0, 2**32 - 1)))
def test_any_members_and_trailer_give_the_join(sizes, seed, pad, isize):
    rnd = random.Random(seed)
    data = b"".join(gzip.compress(rnd.randbytes(n // 4) + bytes(n - n // 4), mtime=0) for n in sizes)
    data += b"\0" * pad
    if isize is not None:
        data = _lying(data, isize)
    assert _gathered(data, 1 << 20) == _joined(data, 1 << 20)


def test_no_room_for_the_mapping_is_the_join(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(gunzip.mmap, "mmap", refused)
    value = b"z" * (9 * PIECE)
    assert gunzip.gunzip(gzip.compress(value, mtime=0), 1 << 20) == value
