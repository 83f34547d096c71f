"""Limits: decompression bombs, and size or count fields that must not drive allocation.

A compressed payload may expand at most ``Limits.for_input(n)`` bytes
(``min(cap, max(floor, ratio * n))``). Going past it is a DecompressionLimitError — a
finding on the batch — and the memory spent finding that out stays within a small
multiple of the limit, whatever the payload claims. Length and count fields (record
counts, key/value/header lengths, snapshot entry counts, snappy's declared length) are
checked against the bytes actually present before anything is built from them.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import textwrap
import tracemalloc

import pytest

from kdump import _accel, encode
from kdump.encode import build_legacy_message, build_legacy_wrapper
from kdump.errors import CodecError, DecompressionLimitError, InvalidFileError, InvalidRecordError, KdumpError
from kdump.format import legacy, snapshot
from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, V2_HEADER
from kdump.format.codecs import GZIP, LZ4, SNAPPY, ZSTD, Limits, compress, decompress
from kdump.format.crc import crc32c
from kdump.format.records import decode_v2_payload
from kdump.format.walk import Walker, decode_records
from kdump.model import Batch

MiB = 1 << 20
BOMB_SIZE = 32 * MiB
# (id, codec, magic, xerial): every decompression path kdump has.
CODECS = [("gzip", GZIP, 2, True), ("snappy-xerial", SNAPPY, 2, True), ("snappy-raw", SNAPPY, 2, False),
          ("lz4", LZ4, 2, True), ("lz4-magic0", LZ4, 0, True), ("lz4-magic1", LZ4, 1, True),
          ("zstd", ZSTD, 2, True)]


@pytest.fixture(scope="module")
def bombs():
    """32 MiB of zeros compressed by every codec path (computed once)."""
    zeros = bytes(BOMB_SIZE)
    return {name: compress(codec, zeros, magic, xerial) for name, codec, magic, xerial in CODECS}


def peak_allocation(fn, *args, **kwargs):
    """(result or KdumpError raised, peak bytes Python allocated meanwhile)."""
    tracemalloc.start()
    try:
        try:
            result = fn(*args, **kwargs)
        except KdumpError as e:
            result = e
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name, codec, magic, xerial", CODECS, ids=[c[0] for c in CODECS])
def test_bomb_over_the_ratio_is_a_finding(bombs, name, codec, magic, xerial):
    data = bombs[name]
    limits = Limits(ratio=4, floor=0, cap=1 << 40)
    limit = limits.for_input(len(data))
    assert limit < BOMB_SIZE
    result, peak = peak_allocation(decompress, codec, data, magic, limits=limits)
    assert isinstance(result, DecompressionLimitError), result
    assert "limit" in str(result)
    # Never more than twice the limit (the chunks plus the one being produced), plus slack.
    assert peak < 2 * limit + 3 * MiB, f"{name}: {peak / MiB:.1f} MiB spent for a {limit / MiB:.1f} MiB limit"


@pytest.mark.parametrize("name, codec, magic, xerial", CODECS, ids=[c[0] for c in CODECS])
def test_bomb_over_the_cap_is_a_finding(bombs, name, codec, magic, xerial):
    data = bombs[name]
    limits = Limits(ratio=1 << 20, floor=0, cap=2 * MiB)
    assert limits.for_input(len(data)) == 2 * MiB
    result, peak = peak_allocation(decompress, codec, data, magic, limits=limits)
    assert isinstance(result, DecompressionLimitError), result
    assert peak < 2 * 2 * MiB + 3 * MiB, f"{name}: {peak / MiB:.1f} MiB spent for a 2 MiB cap"


@pytest.mark.parametrize("name, codec, magic, xerial", CODECS, ids=[c[0] for c in CODECS])
def test_limit_is_exact(name, codec, magic, xerial):
    payload = bytes(range(256)) * 4096                     # 1 MiB, compressible
    data = compress(codec, payload, magic, xerial)
    assert decompress(codec, data, magic, limit=len(payload)) == payload
    with pytest.raises(DecompressionLimitError):
        decompress(codec, data, magic, limit=len(payload) - 1)


def test_default_limits_have_ratio_floor_and_cap():
    limits = Limits()
    assert limits.for_input(10) == limits.floor                       # small inputs: the floor
    assert limits.for_input(limits.floor) == min(limits.cap, limits.ratio * limits.floor)
    assert limits.for_input(1 << 40) == limits.cap                      # never past the cap
    custom = Limits(ratio=3, floor=0, cap=100)
    assert (custom.for_input(10), custom.for_input(1000)) == (30, 100)


def test_small_payloads_do_not_allocate_the_limit():
    # python-lz4 allocates max_length up front; kdump asks in bounded chunks.
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        data = compress(codec, b"hello " * 20)
        result, peak = peak_allocation(decompress, codec, data, 2, limits=Limits(floor=512 * MiB, cap=1 << 30))
        assert result == b"hello " * 20
        assert peak < 4 * MiB, f"codec {codec}: {peak / MiB:.1f} MiB for 120 bytes"


def test_snappy_declared_length_does_not_size_an_allocation():
    # A 7-byte raw block claiming 200 MiB: refused before anything is allocated.
    block = bytes([0x80, 0x80, 0x80, 0x64]) + b"\x00\x61\x62"
    result, peak = peak_allocation(decompress, SNAPPY, block, 2, limits=Limits(floor=1 << 30, cap=1 << 30))
    assert isinstance(result, CodecError) and not isinstance(result, DecompressionLimitError), result
    assert peak < MiB


def test_truncated_streams_are_codec_errors():
    payload = os.urandom(50_000) + bytes(100_000)
    for name, codec, magic, xerial in CODECS:
        data = compress(codec, payload, magic, xerial)
        for cut in (1, 7, 19, len(data) // 2, len(data) - 1):
            with pytest.raises(CodecError):
                decompress(codec, data[:cut], magic)


def test_zstd_is_rejected_in_legacy_messages():
    with pytest.raises(CodecError, match="not valid in a magic 0/1"):
        decompress(ZSTD, compress(ZSTD, b"x"), 1)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
@pytest.mark.parametrize("magic", [0, 1])
def test_nested_compression_in_legacy_wrappers_is_rejected(magic, codec):
    inner = build_legacy_wrapper([(0, 1_700_000_000_000, None, b"x")], magic=magic, codec=GZIP)
    data = build_legacy_wrapper([inner], magic=magic, codec=codec, wrapper_offset=0)
    (batch,) = list(Walker(data))
    assert batch.count is None           # listed, but its contents are a finding
    with pytest.raises(InvalidRecordError, match="must not be compressed"):
        decode_records(data, batch)


# -- fields that must not drive allocation ------------------------------------------------------

def _batch(count: int) -> Batch:
    return Batch(0, 0, max(count - 1, 0), count, 61, 2, 0, True, 0, 0, 0, 0, -1, -1, -1)


@pytest.mark.parametrize("speedups", ["accel", "pure"])
@pytest.mark.parametrize("count", [1 << 20, (1 << 31) - 1])
def test_record_count_is_bounded_by_the_bytes(monkeypatch, speedups, count):
    if speedups == "accel" and _accel.built() is None:
        pytest.skip(f"C accelerator {_accel.unavailable}")
    monkeypatch.setattr(_accel, "_active", _accel.built() if speedups == "accel" else None)
    data = (b"\x0c" + bytes(6)) * 3       # three minimal records: length 6, every field zero
    result, peak = peak_allocation(decode_v2_payload, data, _batch(count))
    assert isinstance(result, KdumpError), result
    assert peak < MiB


@pytest.mark.parametrize("field", ["key", "value", "header count", "header key", "header value"])
def test_huge_length_fields_fail_without_allocating(field):
    big = b"\xfe\xff\xff\xff\x0f"                  # zigzag varint 2147483647
    body = {"key": b"\x00\x00\x00" + big,
            "value": b"\x00\x00\x00\x01" + big,
            "header count": b"\x00\x00\x00\x01\x01" + big,
            "header key": b"\x00\x00\x00\x01\x01\x02" + big,
            "header value": b"\x00\x00\x00\x01\x01\x02\x00" + big}[field] + b"abc"
    record = bytes([len(body) * 2]) + body
    result, peak = peak_allocation(decode_v2_payload, record, _batch(1))
    assert isinstance(result, KdumpError), result
    assert peak < MiB


def test_legacy_length_fields_fail_without_allocating():
    msg = bytearray(build_legacy_message(0, b"k", b"v", magic=1, timestamp=0))
    struct.pack_into(">i", msg, 12 + 14, 0x7FFFFFFF)          # key length
    result, peak = peak_allocation(lambda: list(Walker(bytes(msg))))
    assert peak < MiB
    wrapper = build_legacy_message(0, None, gzip.compress(struct.pack(">qi", 0, 0x7FFFFFFF) + b"x" * 30),
                                   magic=1, codec=GZIP)
    (batch,) = list(Walker(wrapper))
    result, peak = peak_allocation(legacy.decode_legacy, wrapper, batch)
    assert isinstance(result, KdumpError) and peak < MiB


def test_batch_size_field_does_not_drive_allocation():
    head = V2_HEADER.pack(0, 0x7FFFFFF0, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 1)
    walker = Walker(head + bytes(100))
    result, peak = peak_allocation(list, walker)
    assert result == [] and walker.stop.kind == "torn_tail"
    assert peak < MiB


def test_snapshot_entry_count_is_checked_before_allocation():
    data = bytearray(encode.encode_snapshot([(1, 0, 0, 0, 0, 0, 0, -1)]))
    struct.pack_into(">i", data, 6, 0x7FFFFFFF)
    result, peak = peak_allocation(snapshot.parse_snapshot, bytes(data))
    assert isinstance(result, (InvalidFileError, KdumpError)) and peak < MiB


# -- through the command line ---------------------------------------------------------------------

def raw_v2_batch(payload: bytes, codec: int, count: int, base_offset: int = 0) -> bytes:
    """A v2 batch around an already-compressed ``payload`` (a bomb needs no real records)."""
    head = V2_HEADER.pack(base_offset, V2_HEADER.size - 12 + len(payload), 0, 2, 0, codec, count - 1,
                          1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, count)
    out = bytearray(head + payload)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def streamed_bomb(codec: int, size: int) -> bytes:
    """``size`` zero bytes compressed, cheaply: gzip as repeated 16 MiB members (Java reads
    them all), zstd as one frame fed 1 MiB at a time."""
    if codec == GZIP:
        member = gzip.compress(bytes(16 * MiB), compresslevel=9, mtime=0)
        return member * (size // (16 * MiB))
    if codec == ZSTD:
        import zstandard

        chunk = bytes(MiB)
        c = zstandard.ZstdCompressor().compressobj()
        return b"".join([*(c.compress(chunk) for _ in range(size // MiB)), c.flush()])
    raise ValueError(codec)


def run_measured(args: list[str]) -> tuple[int, str, str, int]:
    """Run ``kdump ARGS`` in a child; (exit code, stdout, stderr, its peak RSS in KiB)."""
    probe = textwrap.dedent("""
        import json, resource, subprocess, sys
        p = subprocess.run(sys.argv[1:], capture_output=True)
        print(json.dumps([p.returncode, p.stdout[-20000:].decode("utf-8", "replace"),
                          p.stderr[-5000:].decode("utf-8", "replace"),
                          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))
    """)
    kdump = os.path.join(os.path.dirname(sys.executable), "kdump")
    out = subprocess.run([sys.executable, "-c", probe, kdump, *args], capture_output=True, check=True, text=True)
    return tuple(json.loads(out.stdout))


@pytest.fixture(scope="module")
def bomb_segment(tmp_path_factory):
    """A segment holding a good batch, a 1 GiB gzip bomb, a 1 GiB zstd bomb and a legacy bomb.

    Returns the path and the largest limit the default Limits give any of the bombs.
    """
    from kdump.encode import build_v2_batch
    from kdump.format.codecs import DEFAULT_LIMITS

    d = tmp_path_factory.mktemp("bombs") / "bombs-0"
    d.mkdir()
    payloads = [(GZIP, streamed_bomb(GZIP, 1 << 30)), (ZSTD, streamed_bomb(ZSTD, 1 << 30))]
    legacy_bomb = streamed_bomb(GZIP, 256 * MiB)
    parts = [build_v2_batch([(0, 1_700_000_000_000, b"k", b"ok")], base_offset=0),
             *(raw_v2_batch(p, codec, 1000, base_offset=1 + 1000 * i) for i, (codec, p) in enumerate(payloads)),
             build_legacy_message(2001, None, legacy_bomb, magic=1, codec=GZIP, timestamp=0),
             build_v2_batch([(0, 1_700_000_000_000, b"k", b"after")], base_offset=2002)]
    path = d / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    largest = max(DEFAULT_LIMITS.for_input(len(p)) for p in [legacy_bomb, *(p for _, p in payloads)])
    return path, largest


@pytest.mark.parametrize("command", [["dump", "--records", "--data", "--json"], ["verify", "--deep", "--json"]],
                         ids=["dump", "verify"])
def test_bombs_through_the_cli_are_findings(bomb_segment, command):
    path, largest_limit = bomb_segment
    code, out, err, rss_kib = run_measured([*command, str(path)])
    assert code == 1, (code, err)
    assert "internal error" not in err and "Traceback" not in err
    assert out.count("expands beyond") + err.count("expands beyond") >= 3
    if command[0] == "dump":
        values = [r.get("value") for line in out.splitlines() for r in json.loads(line).get("records") or []]
        assert {"ok", "after"} <= set(values), values      # the good batches on both sides still decode
    # Finding a bomb costs at most its limit (default: 255 x the compressed size, at least
    # 64 MiB): three 1/4-1 GiB bombs never add up, and nothing near a gigabyte is held.
    assert rss_kib < (largest_limit >> 10) + 64 * 1024, \
        f"peak RSS {rss_kib / 1024:.0f} MiB, largest limit {largest_limit / MiB:.0f} MiB"


# -- the --max-decompressed option ---------------------------------------------------------------

def _megabyte_batches(tmp_path, codec):
    from kdump.encode import build_v2_batch

    part = tmp_path / "big-0"
    part.mkdir()
    recs = [(i, 1_700_000_000_000, None, b"\0" * 1_000_000) for i in range(8)]    # 8 MB, a few KiB compressed
    (part / "00000000000000000000.log").write_bytes(build_v2_batch(recs, codec=codec))
    return part


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD, SNAPPY])
def test_max_decompressed_option(tmp_path, codec):
    from support.run import run_kdump

    part = _megabyte_batches(tmp_path, codec)
    seg = str(part / "00000000000000000000.log")
    ok = run_kdump("dump", part, "--records")
    assert ok.code == 0 and ok.out.count("valueSize: 1000000") == 8
    r = run_kdump("dump", part, "--records", "--max-decompressed", "1M")
    assert r.code == 1 and "valueSize" not in r.out
    assert r.err.startswith(f"kdump: error: {seg}:0: batch at offset 0: ") and "beyond 1048576 bytes" in r.err
    v = run_kdump("verify", part, "--deep", "--json", "--max-decompressed", "4MiB")
    report = json.loads(v.out)
    assert v.code == 1 and report["status"] == "damaged"
    assert [f["kind"] for f in report["findings"] if f["kind"] == "codec"] == ["codec"]
    assert json.loads(run_kdump("verify", part, "--deep", "--json", "--max-decompressed", "16M").out)["status"] == "ok"


def test_max_decompressed_sizes():
    from kdump.cli.options import ByteSize
    from kdump.format.codecs import DEFAULT_LIMITS, limits_for

    conv = ByteSize().convert
    assert [conv(v, None, None) for v in ("1048576", "512K", "64MiB", "2G", "3gb", " 7kib ")] == [
        1 << 20, 512 << 10, 64 << 20, 2 << 30, 3 << 30, 7 << 10]
    for bad in ("", "M", "1.5G", "-1", "10Q", "1e6"):
        with pytest.raises(Exception):
            conv(bad, None, None)
    assert limits_for(DEFAULT_LIMITS.cap) is DEFAULT_LIMITS
    small = limits_for(1 << 20)
    assert small.for_input(10) == 1 << 20 and small.for_input(1 << 30) == 1 << 20
    tight = limits_for(DEFAULT_LIMITS.cap, 2)
    assert tight.for_input(100 << 20) == 200 << 20 and tight.for_input(1 << 20) == 64 << 20   # the floor
    assert limits_for(DEFAULT_LIMITS.cap, DEFAULT_LIMITS.ratio) is DEFAULT_LIMITS


def test_max_expansion_option(tmp_path):
    from support.run import run_kdump

    part = _megabyte_batches(tmp_path, GZIP)
    assert run_kdump("verify", part, "--deep", "--max-expansion", "2", "-q").code == 0     # under the 64 MiB floor
    r = run_kdump("dump", part, "--max-expansion", "0")
    assert r.code == 2 and "--max-expansion" in r.err


def test_max_decompressed_rejects_nonsense():
    from support.run import run_kdump

    r = run_kdump("verify", "fixtures", "--max-decompressed", "lots")
    assert r.code == 2 and r.err.startswith("kdump: error: Invalid value for '--max-decompressed': 'lots' is not a size")  # noqa: E501


@pytest.mark.parametrize("fmt", ["ndjson", "parquet"])
def test_export_max_decompressed_gives_error_rows(tmp_path, fmt):
    from support.run import run_kdump

    part = _megabyte_batches(tmp_path, ZSTD)
    ok = run_kdump("export", part, "--out", tmp_path / "ok", "--format", fmt, "--json")
    assert ok.code == 0 and json.loads(ok.out)["rows"] == 8 and json.loads(ok.out)["error_rows"] == 0
    r = run_kdump("export", part, "--out", tmp_path / "cut", "--format", fmt, "--json", "--max-decompressed", "1M")
    summary = json.loads(r.out)
    assert r.code == 1 and summary["rows"] == 1 and summary["error_rows"] == 1
    assert "beyond 1048576 bytes" in r.err and "valueSize" not in r.out
    assert run_kdump("export", part, "--out", tmp_path / "x", "--max-expansion", "0").code == 2
