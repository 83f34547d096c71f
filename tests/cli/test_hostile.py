"""Adversarial inputs: no crash, and no input makes kdump super-linear in its size.

Linear time is checked by comparing the CPU time (``process_time``: other load on the
machine does not count) of an input of size n with one of size 4n: linear work gives a
ratio near 4, quadratic near 16; the bound is a generous 10. Where timings are too
noisy, the work itself is counted. Every crash the fuzzers found is replayed here from
``fuzz/regressions/``.
"""

from __future__ import annotations

import gc
import gzip
import importlib.util
import json
import os
import struct
import sys
import time
from pathlib import Path

import pytest

from kdump.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch, encode_v2_record
from kdump.errors import CodecError, InvalidFileError, KdumpError
from kdump.format import checkpoint, codecs, index, logdir_files, timeindex
from kdump.format.codecs import GZIP, LZ4, SNAPPY, ZSTD, compress, decompress
from kdump.format.records import decode_v2_payload
from kdump.format.varint import encode_varint
from kdump.format.walk import Walker, decode_records
from kdump.model import Batch
from support.run import run_kdump

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "fuzz"
T0 = 1_700_000_000_000
RATIO = 10.0          # 4x the input may cost at most 10x the time (quadratic is 16x)


def cpu_time(fn, *args, repeat: int = 2) -> float:
    """Best CPU time of ``fn(*args)``, the cyclic collector off: a full collection walks every
    object the whole test session keeps alive, a cost that is not the code's under test."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.process_time()
            fn(*args)
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return best


def assert_linear(make, run, n: int, min_time: float = 0.03, max_n: int = 1 << 26) -> None:
    """``run(make(4n))`` costs under RATIO x ``run(make(n))``; n doubles until timings are measurable.

    A complexity check, not a speed check: noise on a loaded machine can push one
    measurement up, a quadratic loop is 16x every time, so a failing ratio is measured
    again (three tries) before it counts.
    """
    small = make(n)
    t1 = cpu_time(run, small)
    while t1 < min_time and 8 * n <= max_n:
        n *= 2
        small = make(n)
        t1 = cpu_time(run, small)
    big = make(4 * n)
    t4 = cpu_time(run, big)
    for _ in range(2):
        if t4 < RATIO * max(t1, 1e-3):
            break
        t1 = min(t1, cpu_time(run, small))
        t4 = min(t4, cpu_time(run, big))
    if os.environ.get("KDUMP_SHOW_LINEAR"):
        print(f"linear check: n={n} t1={t1:.3f} t4={t4:.3f}", file=sys.stderr)
    assert t4 < RATIO * max(t1, 1e-3), f"n={n}: {t1:.3f}s, 4n: {t4:.3f}s (ratio {t4 / max(t1, 1e-3):.1f})"


def ignore_kdump_errors(fn):
    def run(*args):
        try:
            return fn(*args)
        except KdumpError:
            return None
    return run


def walk_and_decode(data: bytes) -> int:
    n = 0
    for batch in Walker(data):
        try:
            n += len(decode_records(data, batch))
        except KdumpError:
            pass
    return n


# -- fuzz regressions ---------------------------------------------------------------------------

def _harness(target: str):
    spec = importlib.util.spec_from_file_location(f"fuzz_{target}", FUZZ / f"fuzz_{target}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Regression inputs of bugs in files this suite may not fix: name -> reason (strict xfail).
KNOWN_OPEN: dict[str, str] = {}


def _regressions():
    for target_dir in sorted((FUZZ / "regressions").glob("*")):
        for path in sorted(target_dir.iterdir()):
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN_OPEN[path.name])] if path.name in KNOWN_OPEN else []
            yield pytest.param(target_dir.name, path, id=f"{target_dir.name}/{path.name}", marks=marks)


@pytest.mark.parametrize("target, path", list(_regressions()))
def test_fuzz_regression(target, path):
    _harness(target).check(path.read_bytes())


# -- segments ---------------------------------------------------------------------------------

def test_many_tiny_v2_batches_are_linear():
    empty = build_v2_batch([], base_offset=0)               # 61 bytes, count 0
    assert_linear(lambda n: empty * n, walk_and_decode, 16000)


def test_many_tiny_legacy_messages_are_linear():
    message = build_legacy_message(0, None, b"", magic=0)     # 26 bytes
    assert_linear(lambda n: message * n, walk_and_decode, 8000)


def numbered_batches(n: int) -> bytes:
    """n one-record batches with offsets 0..n-1 (the base offset is outside the CRC)."""
    data = bytearray(build_v2_batch([(0, T0, b"k", b"v")]) * n)
    size = len(data) // n
    for i in range(n):
        struct.pack_into(">q", data, i * size, i)
    return bytes(data)


def numbered_segment_maker(tmp_path):
    """make(n): a partition directory's first segment of ``numbered_batches(n)``."""
    def make(n):
        path = tmp_path / f"p{n}" / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(numbered_batches(n))
        return path

    return make


def test_cli_dump_records_is_linear_in_batches(tmp_path):
    def run(path):
        result = run_kdump("dump", "--records", "--data", "--json", str(path))
        assert result.code == 0, result.err

    assert_linear(numbered_segment_maker(tmp_path), run, 16000, min_time=0.1)


def test_cli_verify_deep_is_linear_in_batches(tmp_path):
    def run(path):
        result = run_kdump("verify", "--deep", "--json", str(path))
        assert result.code in (0, 1) and "internal error" not in result.err, result.err
        assert json.loads(result.out)["records"] > 0

    assert_linear(numbered_segment_maker(tmp_path), run, 64000, min_time=0.1)


# -- records ----------------------------------------------------------------------------------

def _batch(count: int, attributes: int = 0) -> Batch:
    return Batch(0, 0, max(count - 1, 0), count, 61, 2, 0, True, attributes, 0, T0, T0, -1, -1, -1)


def test_huge_header_count_fails_fast():
    body = b"\x00\x00\x00\x01\x01" + b"\xfe\xff\xff\xff\x0f"          # headers count 2147483647
    record = bytes([len(body) * 2]) + body
    start = time.process_time()
    with pytest.raises(KdumpError):
        decode_v2_payload(record, _batch(1))
    assert time.process_time() - start < 0.1


def test_many_headers_are_linear():
    def make(n):
        # attributes, timestamp and offset deltas, null key and value, n headers ("" -> null)
        body = b"\x00\x00\x00\x01\x01" + encode_varint(n) + b"\x00\x01" * n
        return encode_varint(len(body)) + body
    assert make(3) == encode_v2_record(0, 0, None, None, [("", None)] * 3)
    assert_linear(make, lambda data: decode_v2_payload(data, _batch(1)), 320000)


def _padded(value: int, width: int) -> bytes:
    """A zigzag varint padded to ``width`` bytes: legal, and the slowest to read."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    for i in range(width):
        b = raw & 0x7F
        raw >>= 7
        out.append(b | (0x80 if i < width - 1 else 0))
    return bytes(out)


def test_maximal_varints_are_linear():
    # Every varint at its widest: 5 bytes (10 for the timestamp delta).
    body = b"\x00" + _padded(7, 10) + _padded(0, 5) + _padded(1, 5) + b"k" + _padded(1, 5) + b"v" + _padded(0, 5)
    record = _padded(len(body), 5) + body

    def run(data):
        records = decode_v2_payload(data, _batch(len(data) // len(record)))
        assert records[-1].key == b"k" and records[-1].timestamp == T0 + 7

    assert_linear(lambda n: record * n, run, 64000)


def test_record_count_far_beyond_the_bytes_fails_fast():
    start = time.process_time()
    with pytest.raises(KdumpError):
        decode_v2_payload(b"\x0c" + bytes(6), _batch((1 << 31) - 1))
    assert time.process_time() - start < 0.1


def test_many_inner_messages_in_a_legacy_wrapper_are_linear():
    def make(n):
        return build_legacy_wrapper([(i, T0, None, b"") for i in range(n)], magic=1, codec=GZIP)
    assert_linear(make, walk_and_decode, 8000)


# -- compressed streams -------------------------------------------------------------------------

def test_many_gzip_members_are_linear():
    member = gzip.compress(b"", mtime=0)
    assert_linear(lambda n: member * n, lambda d: decompress(GZIP, d), 16000)


def test_many_xerial_chunks_are_linear():
    chunk = codecs._CHUNK_LEN.pack(3) + b"\x01\x00x"           # a raw block holding one byte
    head = codecs.XERIAL_HEADER.pack(codecs.XERIAL_MAGIC, 1, 1)
    assert_linear(lambda n: head + chunk * n, lambda d: decompress(SNAPPY, d), 10000)


def test_many_lz4_blocks_are_linear():
    head = b"\x04\x22\x4d\x18\x60\x40\x82"
    block = struct.pack("<I", 0x80000001) + b"x"                   # one stored byte
    assert_linear(lambda n: head + block * n + b"\x00" * 4, lambda d: decompress(LZ4, d), 1 << 20)


def test_many_zstd_blocks_are_linear():
    head = b"\x28\xb5\x2f\xfd\x00\x00"                              # no size, 1 KiB window
    raw_block = b"\x08\x00\x00x"                                    # raw block of one byte
    last = b"\x09\x00\x00y"
    assert_linear(lambda n: head + raw_block * n + last, lambda d: decompress(ZSTD, d), 1 << 20)


@pytest.mark.parametrize("codec, magic", [(GZIP, 2), (SNAPPY, 2), (LZ4, 2), (LZ4, 0), (ZSTD, 2)])
def test_truncated_compressed_streams_are_linear_errors(codec, magic):
    def make(n):
        data = compress(codec, os.urandom(n // 2) + bytes(n // 2), magic)
        return data[:len(data) * 9 // 10]

    def run(data):
        with pytest.raises(CodecError):
            decompress(codec, data, magic)

    assert_linear(make, run, 1 << 20, min_time=0.003, max_n=1 << 23)


def test_every_cut_of_a_compressed_batch_is_a_finding():
    payload = [(i, T0 + i, b"key", b"value %d" % i) for i in range(50)]
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        data = build_v2_batch(payload, codec=codec)
        (batch,) = list(Walker(data))
        for cut in range(61, batch.size, 3):
            # Shrink the batch as a torn compressed write would leave it, CRC aside.
            short = Batch(*batch[:4], cut, *batch[5:])
            with pytest.raises(KdumpError):
                decode_records(data, short)


# -- side files ----------------------------------------------------------------------------------

def test_properties_with_many_continuations_are_linear():
    assert_linear(lambda n: ("a=" + "b\\\n" * n + "c\n").encode(), logdir_files.parse_meta_properties, 40000)


def test_checkpoint_with_many_lines_is_linear():
    def make(n):
        return checkpoint.encode_leader_epochs((i, i * 10) for i in range(n))
    assert_linear(make, lambda d: checkpoint.parse_checkpoint(d, checkpoint.LEADER_EPOCH), 10000)


def test_preallocated_indexes_are_cheap():
    # 10 MiB of zeros after one entry: Kafka's preallocated index of an active segment.
    data = struct.pack(">ii", 5, 100) + bytes(10 << 20)
    assert_linear(lambda n: data[:8 + n], lambda d: (index.parse_index(d, 0), timeindex.parse_timeindex(d, 0)),
                  1 << 20, min_time=0.005)


@pytest.mark.parametrize("parse", [logdir_files.parse_quorum_state, logdir_files.parse_clean_shutdown])
def test_deeply_nested_json_is_an_invalid_file(parse):
    with pytest.raises(InvalidFileError):
        parse(b"[" * 100_000)


def test_deeply_nested_json_value_is_a_decode_error(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_v2_batch([(0, T0, b"k", b"[" * 100_000), (1, T0, b"k", b"[1]")]))
    result = run_kdump("dump", "--json", "--value-decoder", "json", str(path))
    assert "internal error" not in result.err, result.err
    # A value a decoder cannot read is noted on that record; the log itself is intact.
    assert result.code == 0
    records = [json.loads(line) for line in result.out.splitlines()][-1]["records"]
    assert "nested too deeply" in records[0]["value_decode_error"]
    assert records[-1]["value_decoded"] == [1]


# -- the recovery scanner's resync ------------------------------------------------------------

def _resync_bait(n: int) -> bytes:
    """A good batch, a torn entry, then n bytes in which every 16th position looks like a
    legacy entry of n/2 bytes (small offset, sane length, magic 0) whose CRC is wrong."""
    good = build_v2_batch([(0, T0, b"k", b"v")])
    torn = struct.pack(">qi", 0, 0x000FFFF0) + b"\x00\x00\x00\x02"
    bait = struct.pack(">qi", 1, n // 2) + bytes(4)
    return good + torn + bait * (n // 16)


def test_resync_after_damage_is_linear(monkeypatch):
    from kdump.check import resync, scan

    work = {"bytes": 0}
    crc_ok = resync._crc_ok

    def counting(buf, pos, end):
        work["bytes"] += end - pos
        return crc_ok(buf, pos, end)

    monkeypatch.setattr(resync, "_crc_ok", counting)
    costs = []
    for n in (16 << 10, 64 << 10):
        work["bytes"] = 0
        scan.scan_segment(_resync_bait(n), base_offset=0)
        costs.append(work["bytes"] + n)
    assert costs[1] < RATIO * costs[0], f"work {costs[0]} for n, {costs[1]} for 4n"
