"""--io-limit (storage/gentle.py): the throttle on an injected clock, the page-cache drop on
real reads (os.posix_fadvise watched), and the option on every reading command."""

from __future__ import annotations

import os

import pytest

from kdump import encode
from kdump.storage import gentle
from support.run import FIXTURES, GENERATED, run_kdump

READING = ["dump", "verify", "index", "timeindex", "recover", "export", "info", "txn", "groups", "metadata",
           "records"]


class Clock:
    """Time that passes only when the throttle sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


@pytest.fixture(autouse=True)
def _no_limit_left_over():
    yield
    gentle.set_io_limit(None)


def test_a_read_waits_for_its_bytes_at_the_rate():
    c = Clock()
    t = gentle.Throttle(1000.0, clock=c, sleep=c.sleep)
    t.charge(500)       # the first read's bytes, then its wait: 0.5 s at 1000 B/s
    assert c.slept == [pytest.approx(0.5)]
    t.charge(1000)
    assert c.now == pytest.approx(101.5)
    assert t.total == 1500


def test_over_a_long_run_the_rate_is_the_limit():
    c = Clock()
    t = gentle.Throttle(50e6, clock=c, sleep=c.sleep)
    for _ in range(600):            # 600 chunks of 1 MB with 2 ms of work each: 600 MB
        c.now += 0.002
        t.charge(1_000_000)
    elapsed = c.now - 100.0         # the last chunk's bytes are waited for: never above the limit
    assert 600e6 / elapsed <= 50e6 and 600e6 / elapsed == pytest.approx(50e6, rel=1e-3)


def test_time_spent_working_counts_toward_the_wait():
    c = Clock()
    t = gentle.Throttle(1000.0, clock=c, sleep=c.sleep)
    t.charge(1000)                  # waited 1 s
    c.now += 0.1                    # 0.1 s of work on the next bytes: their wait is 0.1 s shorter
    t.charge(1000)
    assert c.slept == [pytest.approx(1.0), pytest.approx(0.9)]
    c.now += 5.0                    # idle (or slowed down) for 5 s: only SLACK of it is made up for
    t.charge(1000)
    assert c.slept[-1] == pytest.approx(1.0 - gentle.SLACK)


def test_nothing_read_nothing_waited():
    c = Clock()
    t = gentle.Throttle(10.0, clock=c, sleep=c.sleep)
    t.charge(0)
    assert c.slept == [] and t.total == 0


def test_the_shared_throttle_takes_and_gives_back_its_token():
    c = Clock()
    t = gentle.Throttle(1e6, clock=c, sleep=c.sleep, shared=True)
    for _ in range(3):
        t.charge(1_000_000)
    assert t.total == 3_000_000 and c.now == pytest.approx(103.0)
    assert os.read(t._lock[0], 1) == b"t"      # the token is back in the pipe


def test_a_limit_must_be_above_zero():
    with pytest.raises(ValueError):
        gentle.Throttle(0.0)


def test_only_pages_not_cached_before_are_dropped(monkeypatch, tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * (gentle.PAGE * 6))
    calls = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, off, n, advice: calls.append((off, n, advice)))
    fd = os.open(p, os.O_RDONLY)
    try:
        r = gentle.Residency(fd, gentle.PAGE * 6, str(p))
        r.cached = b"\x00\x01\x01\x00\x00\x01"
        r.drop(0, gentle.PAGE * 6)
    finally:
        os.close(fd)
    P, D = gentle.PAGE, os.POSIX_FADV_DONTNEED
    assert calls == [(0, P, D), (3 * P, 2 * P, D)]


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")
def test_the_kernel_is_asked_which_pages_are_cached(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"y" * (gentle.PAGE * 3 + 1))
    fd = os.open(p, os.O_RDONLY)
    try:
        cached = gentle.Residency(fd, os.fstat(fd).st_size, str(p)).cached
    finally:
        os.close(fd)
    assert cached is not None and len(cached) == 4 and set(cached) <= {0, 1}


def _big_partition(tmp_path):
    """A partition of one segment larger than storage.mapped's READ_BELOW: mapped, not read."""
    part = tmp_path / "big-0"
    part.mkdir()
    batches, offset = [], 0
    while sum(map(len, batches)) < 600_000:
        batches.append(encode.build_v2_batch([(i, 1_700_000_000_000, b"k", b"v" * 1000) for i in range(50)],
                                             base_offset=offset))
        offset += 50
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    return part, sum(map(len, batches))


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")
@pytest.mark.parametrize("command", ["dump", "records", "verify"])
def test_a_limited_read_drops_what_it_brought_into_the_page_cache(command, monkeypatch, tmp_path):
    part, size = _big_partition(tmp_path)
    calls = []
    real = os.posix_fadvise
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, off, n, advice: calls.append((off, n, advice)))
    monkeypatch.setattr(gentle, "_cached_pages", lambda fd, size, path: bytes(-(-size // gentle.PAGE)))
    r = run_kdump(command, part, "--io-limit", "100000", "-q")
    assert r.code == 0, r.err
    dropped = sum(n for _, n, advice in calls if advice == os.POSIX_FADV_DONTNEED)
    assert dropped >= size          # the whole segment (a page rounded up), nothing of it left behind
    assert real is not os.posix_fadvise


def test_without_the_option_nothing_is_dropped_or_counted(monkeypatch, tmp_path):
    part, _ = _big_partition(tmp_path)
    calls = []
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: calls.append(a), raising=False)
    charged = []
    monkeypatch.setattr(gentle.Throttle, "charge", lambda self, n: charged.append(n))
    r = run_kdump("dump", part, "-q")
    assert r.code == 0 and not gentle.active()
    assert [a for a in calls if a[3] == getattr(os, "POSIX_FADV_DONTNEED", -1)] == [] and charged == []


def test_a_limited_dump_counts_every_byte_of_the_segment(monkeypatch, tmp_path):
    part, size = _big_partition(tmp_path)
    charged = []
    monkeypatch.setattr(gentle.Throttle, "charge", lambda self, n: charged.append(n))
    r = run_kdump("dump", part, "--json", "--io-limit", "50", "-j", "1")
    assert r.code == 0, r.err
    assert size <= sum(charged) < size + 64 << 10      # the segment, once (its side files are small)


@pytest.mark.parametrize("command", READING)
def test_every_reading_command_has_the_option(command):
    r = run_kdump(command, "--help")
    assert r.code == 0 and "--io-limit MB/S" in r.out


@pytest.mark.parametrize("value", ["0", "-5", "abc", "nan", "inf", ""])
@pytest.mark.parametrize("command", READING)
def test_a_bad_limit_is_one_usage_error(command, value, tmp_path):
    path = GENERATED / "headers-0"
    extra = ["--out", str(tmp_path / "out")] if command == "export" else []
    r = run_kdump(command, path, *extra, "--io-limit", value)
    assert r.code == 2 and r.out == ""
    first, *rest = r.err.splitlines()
    assert first == f"kdump: error: Invalid value for '--io-limit': {value!r} is not a rate above 0 in MB/s " \
                    "(e.g. 50, 12.5)"
    assert rest == [f"kdump: hint: try 'kdump {command} --help'"]


@pytest.mark.parametrize("command", READING)
def test_every_reading_command_runs_under_a_limit(command, tmp_path):
    path = FIXTURES / "broker" / "all-shapes" / ("__cluster_metadata-0" if command == "metadata" else "")
    extra = ["--out", str(tmp_path / "out")] if command == "export" else []
    r = run_kdump(command, path, *extra, "--io-limit", "100000", "-q")
    assert r.code in (0, 1), r.err
    assert "error" not in r.err


@pytest.mark.parametrize("command", ["verify", "export"])
def test_spark_reads_are_not_limited_so_the_option_is_refused(command, tmp_path):
    extra = ["--out", str(tmp_path / "out")] if command == "export" else []
    r = run_kdump(command, GENERATED / "headers-0", *extra, "--engine", "spark", "--io-limit", "5")
    assert (r.code, r.out) == (2, "")
    assert r.err == "kdump: error: --io-limit holds for --engine local only (Spark's executors read on their own)\n"
