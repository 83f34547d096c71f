"""Big segments: a 4 GiB segment (over Kafka's 2 GiB limit) decoded end to end in bounded memory.

The segment is made of real batches: 64 MiB are written once and doubled in the kernel
with ``copy_file_range``, then each batch gets its own base offset (the base offset is
outside the CRC, so patching it keeps every batch valid). ``dump`` and ``verify`` run as
child processes whose peak RSS (``RUSAGE_CHILDREN`` of a probe process) must stay under
200 MB. Needs 10 GB of free space in the temporary directory; skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

from kdump import _accel
from kdump.encode import build_v2_batch

pytestmark = pytest.mark.slow

MiB, GiB = 1 << 20, 1 << 30
SEGMENT = 4 * GiB
BATCH = 128 << 10                    # a large producer batch (max.message.bytes is ~1 MiB)
RECORDS_PER_BATCH = 2
RSS_LIMIT = 200 * MiB
T0 = 1_700_000_000_000


def one_batch(size: int) -> bytes:
    """A valid uncompressed v2 batch of exactly ``size`` bytes holding two records."""
    def build(pads: list[int]) -> bytes:
        return build_v2_batch([(i, T0 + i, b"key-%d" % i, b"v" * pad) for i, pad in enumerate(pads)])
    pads = [(size - 200) // RECORDS_PER_BATCH] * RECORDS_PER_BATCH
    for _ in range(6):                          # varint widths settle after a step or two
        data = build(pads)
        if len(data) == size:
            return data
        pads[-1] += size - len(data)
    raise AssertionError(f"cannot make a batch of {size} bytes")


def make_segment(path: str, size: int, batch_size: int) -> int:
    """Write ``size`` bytes of valid batches to ``path``; return the number of batches."""
    batch = one_batch(batch_size)
    seed = 64 * MiB
    with open(path, "wb") as f:
        f.write(batch * (seed // batch_size))
    fd = os.open(path, os.O_RDWR)
    try:
        done = seed
        while done < size:
            n = min(done, size - done)
            copied = 0
            while copied < n:
                copied += os.copy_file_range(fd, fd, n - copied, copied, done + copied)
            done += n
        count = size // batch_size
        for i in range(count):
            os.pwrite(fd, struct.pack(">q", i * RECORDS_PER_BATCH), i * batch_size)
    finally:
        os.close(fd)
    return count


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory):
    directory = tmp_path_factory.mktemp("big") / "big-0"
    directory.mkdir()
    free = shutil.disk_usage(directory).free
    if free < 10 * GiB:
        pytest.skip(f"needs 10 GB free in {directory}, only {free / GiB:.1f} GB")
    if not hasattr(os, "copy_file_range"):
        pytest.skip("os.copy_file_range is not available")
    path = str(directory / "00000000000000000000.log")
    count = make_segment(path, SEGMENT, BATCH)
    yield path, count
    os.unlink(path)                  # 4 GiB: never leave it to pytest's tmp retention


PROBE = textwrap.dedent("""
    import json, resource, subprocess, sys
    # Run kdump, count its output lines, keep the last one; report its peak RSS.
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines, last = 0, b""
    for line in p.stdout:
        lines += 1
        last = line
    err = p.stderr.read()
    code = p.wait()
    print(json.dumps({"code": code, "lines": lines, "last": last.decode("utf-8", "replace"),
                      "err": err[-4000:].decode("utf-8", "replace"),
                      "rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
""")


def run_measured(*args: str) -> dict:
    kdump = os.path.join(os.path.dirname(sys.executable), "kdump")
    out = subprocess.run([sys.executable, "-c", PROBE, kdump, *args], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    print(f"kdump {' '.join(args[:-1])}: exit {result['code']}, {result['lines']} lines, "
          f"peak RSS {result['rss'] / MiB:.0f} MiB")
    return result


def test_dump_lists_every_batch_of_a_4_gib_segment(big_segment):
    path, count = big_segment
    r = run_measured("dump", "--json", path)
    assert r["code"] == 0, r["err"]
    assert r["lines"] == count
    last = json.loads(r["last"])
    assert last["position"] == SEGMENT - BATCH > 2 * GiB        # positions past Kafka's limit
    assert last["base_offset"] == (count - 1) * RECORDS_PER_BATCH and last["crc_valid"]
    assert r["rss"] < RSS_LIMIT, f"peak RSS {r['rss'] / MiB:.0f} MiB"


def test_dump_records_of_a_4_gib_segment(big_segment):
    path, count = big_segment
    r = run_measured("dump", "--records", "--json", path)
    assert r["code"] == 0, r["err"]
    assert r["lines"] == count
    last = json.loads(r["last"])
    assert [rec["offset"] for rec in last["records"]] == \
           [(count - 1) * RECORDS_PER_BATCH + i for i in range(RECORDS_PER_BATCH)]
    assert r["rss"] < RSS_LIMIT, f"peak RSS {r['rss'] / MiB:.0f} MiB"


@pytest.mark.parametrize("deep", [False, True], ids=["verify", "verify-deep"])
def test_verify_a_4_gib_segment(big_segment, deep):
    path, count = big_segment
    r = run_measured("verify", "--json", *(["--deep"] if deep else []), path)
    assert r["code"] in (0, 1), r["err"]
    report = json.loads(r["last"])
    assert report["batches"] == count and report["records"] == count * RECORDS_PER_BATCH
    assert report["valid_bytes"] == SEGMENT
    # The only findings allowed are about the absent index files.
    assert all(f["kind"] == "index_missing" for f in report["findings"]), report["findings"][:5]
    assert r["rss"] < RSS_LIMIT, f"peak RSS {r['rss'] / MiB:.0f} MiB"


def test_the_c_scanner_is_called_on_bounded_spans(tmp_path, monkeypatch):
    if _accel.built() is None:
        pytest.skip(f"C accelerator {_accel.unavailable}")
    from kdump.format.walk import Walker
    from kdump.storage.mapped import MappedFile

    path = str(tmp_path / "00000000000000000000.log")
    make_segment(path, 320 * MiB, MiB)
    spans = []
    scan = _accel.built().scan_v2

    def recording(buf, pos, end, max_batches):
        batches, new_pos = scan(buf, pos, end, max_batches)
        spans.append(new_pos - pos)
        return batches, new_pos

    recording_native = type(_accel)("native_recording")
    vars(recording_native).update(vars(_accel.built()), scan_v2=recording)
    monkeypatch.setattr(_accel, "_built", recording_native)
    monkeypatch.setattr(_accel, "_active", recording_native)
    with MappedFile(path) as m:
        assert sum(1 for _ in Walker(m.buf)) == 320
    assert max(spans) <= 64 * MiB, f"one call scanned {max(spans) / MiB:.0f} MiB"


def _resident(path: str) -> int:
    """Bytes of this process's mappings of ``path`` that are resident (Rss in /proc/self/smaps)."""
    total = 0
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                inside = parts[-1] == path
            elif inside and parts[0] == "Rss:":
                total += int(parts[1]) * 1024
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_pages_behind_a_sequential_reader_are_dropped(tmp_path):
    """Deterministic: after the walk reaches position p, at most FOLLOW_BEHIND (+ one step and
    one C span ahead) of the mapping is resident, whatever the timing."""
    from kdump.format.walk import FOLLOW_STEP, SCAN_SPAN, Walker
    from kdump.storage.mapped import FOLLOW_BEHIND, TRIM_ABOVE, MappedFile

    path = str(tmp_path / "00000000000000000000.log")
    make_segment(path, 160 * MiB, MiB)
    with MappedFile(path) as m:
        assert m.size > TRIM_ABOVE and hasattr(m.buf, "follow")
        peak = 0
        for _ in Walker(m.buf):
            peak = max(peak, _resident(path))
        assert peak <= FOLLOW_BEHIND + FOLLOW_STEP + SCAN_SPAN + MiB, f"{peak / MiB:.0f} MiB resident"
        m.buf.follow(m.size)
        assert 0 < _resident(path) <= FOLLOW_BEHIND + MiB
        # A page read again after it was dropped reads the same bytes (it comes back from the page cache).
        with open(path, "rb") as f:
            assert m.buf[:4096] == f.read(4096)


def test_walker_and_scanner_report_their_position(tmp_path):
    from kdump.check.scan import scan_segment
    from kdump.format.walk import FOLLOW_STEP, Walker

    path = str(tmp_path / "00000000000000000000.log")
    make_segment(path, 96 * MiB, MiB)

    class Followed(bytes):
        def follow(self, position):
            self.seen.append(position)

    buf = Followed(open(path, "rb").read())
    buf.seen = []
    assert sum(1 for _ in Walker(buf)) == 96
    assert buf.seen and buf.seen == sorted(buf.seen) and buf.seen[-1] <= len(buf)
    assert all(b - a >= FOLLOW_STEP for a, b in zip(buf.seen, buf.seen[1:]))
    buf.seen = []
    assert scan_segment(buf).valid_bytes == len(buf)
    assert buf.seen, "the scanner never reported its position"



@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_a_preallocated_segment_is_checked_without_reading_its_hole(tmp_path):
    """Kafka's ``preallocate`` leaves a sparse segment: a few batches, then a hole to the full
    size. Its zero tail is found from the file's holes (SEEK_DATA), not by mapping 8 GiB."""
    from kdump.check.scan import scan_segment
    from kdump.storage.mapped import MappedFile

    path = str(tmp_path / "00000000000000000000.log")
    data = b"".join(build_v2_batch([(0, T0, b"k", b"v")], base_offset=i) for i in range(3))
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(8 * GiB)
    with MappedFile(path) as m:
        if m.buf.data_from(64 * 1024, m.size) != m.size:
            pytest.skip("this file system does not report holes (SEEK_DATA)")
    with MappedFile(path) as m:
        r = scan_segment(m.buf, base_offset=0)
        # The hole was skipped, not read: only the first chunk was mapped in (reading the
        # hole would leave FOLLOW_BEHIND, 16 MiB, resident).
        assert _resident(path) < 4 * MiB
    assert (r.cut.kind, r.cut.position, r.valid_bytes, r.batches) == ("zero_tail", len(data), len(data), 3)
    result = run_measured("verify", "--json", path)
    assert result["code"] == 1 and json.loads(result["last"])["valid_bytes"] == len(data)
    assert result["rss"] < RSS_LIMIT


def test_resync_through_a_large_garbage_region_stays_in_bounded_memory(tmp_path):
    """After damage the scanner searches what lies beyond for intact batches; through
    256 MiB of random bytes it drops the pages it has passed, as the walk does."""
    import random

    path = str(tmp_path / "00000000000000000000.log")
    good = b"".join(build_v2_batch([(0, T0, b"k", b"v")], base_offset=i) for i in range(3))
    with open(path, "wb") as f:
        f.write(good)
        f.write(b"\x7f" * 64)                          # a length far past the end: damage
        for i in range(256):
            f.write(random.Random(i).randbytes(MiB))
        f.write(build_v2_batch([(0, T0, b"k", b"v")], base_offset=100))
    result = run_measured("verify", "--json", path)
    report = json.loads(result["last"])
    assert result["code"] == 1 and report["valid_bytes"] == len(good)
    assert [f["offset"] for f in report["findings"] if f["kind"] == "intact_beyond"] == [100]
    assert result["rss"] < RSS_LIMIT
