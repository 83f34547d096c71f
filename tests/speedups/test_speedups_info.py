"""``_speedups.summarize_v2`` (kdump info's C sums) against the pure-Python ``_add_batch``.

Each input is summed twice, all in Python (``kdump._accel.use(False)``) and with C, and
the summaries must be equal field by field (``to_dict()``, the producer ids, the problems):
every fixture segment, damaged copies (a flipped CRC, a torn tail, garbage, a legacy message
in the middle), and hypothesis-built segments mixing codecs, transactional, control and
legacy batches, negative and out-of-order timestamps, and delete-horizon batches.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel

if _accel.built() is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from kdump.encode import build_control_batch, build_legacy_message, build_v2_batch  # noqa: E402
from kdump.format.codecs import GZIP, LZ4, NONE, ZSTD  # noqa: E402
from kdump.storage.logdir import LogFile  # noqa: E402
from kdump.survey.summary import RUN_BATCHES, SIZE_BUCKETS, PartitionSummary  # noqa: E402
from support.damage import FIXTURES, flip_bit, garbage  # noqa: E402
from support.run import fixture_logs  # noqa: E402


def _summary(paths: list[Path], native: bool) -> tuple[dict, set]:
    was = _accel.use(native)
    try:
        s = PartitionSummary("p", "t", 0)
        for p in paths:
            s.add_file(LogFile(str(p), "log", "t", 0, 0, None))
        return s.to_dict(), s.producers
    finally:
        _accel.use(was)


def _same(*paths: Path) -> dict:
    py, c = _summary(list(paths), False), _summary(list(paths), True)
    assert c == py
    return py[0]


@pytest.mark.parametrize("rel", fixture_logs())
def test_every_fixture_segment_sums_alike(rel):
    _same(FIXTURES / rel)


def test_the_c_path_is_taken_and_counts_every_batch(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    data = b"".join(build_v2_batch([(0, 1000 + i, b"k", b"v" * 40)], base_offset=i, producer_id=i % 3)
                    for i in range(300))
    log.write_bytes(data)
    d = _same(log)
    assert d["batches"] == 300 and d["producers"] == 3 and d["first_offset"] == 0 and d["last_offset"] == 299
    producers = set()
    run = _accel.built().summarize_v2(data, 0, len(data), RUN_BATCHES, SIZE_BUCKETS, producers)
    assert run[:3] == (len(data), 300, 300) and producers == {0, 1, 2}


def test_damaged_copies_sum_alike(tmp_path):
    src = FIXTURES / "real/pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test"
    data = (src / "00000000000000000000.log").read_bytes()[:200_000]
    cases = {
        "crc": lambda p: flip_bit(p, 20_000, 3),
        "torn": lambda p: p.write_bytes(p.read_bytes()[:150_001]),
        "garbage": lambda p: p.write_bytes(p.read_bytes() + garbage(300)),
        "short-tail": lambda p: p.write_bytes(p.read_bytes() + b"\1" * 9),
        "legacy-inside": lambda p: p.write_bytes(p.read_bytes()[:1340] + build_legacy_message(5, None, b"x", magic=1)
                                                 + p.read_bytes()[1340:]),
    }
    for name, damage in cases.items():
        p = tmp_path / f"{name}.log"
        p.write_bytes(data)
        damage(p)
        _same(p)


def _batch(kind, i, ts, codec, pid):
    if kind == "control":
        return build_control_batch(1, b"\0\0\0\0\0\0", base_offset=i, producer_id=pid, producer_epoch=0,
                                   is_transactional=True, timestamp=ts)
    if kind == "legacy":
        return build_legacy_message(i, b"k", b"v", magic=1, timestamp=ts)
    return build_v2_batch([(0, ts, b"k", b"v" * 10), (1, ts + 5, None, b"w")], base_offset=i, codec=codec,
                          producer_id=pid, producer_epoch=0 if pid >= 0 else -1, is_transactional=kind == "txn",
                          delete_horizon_ms=ts + 1 if kind == "horizon" else None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["plain", "plain", "txn", "control", "legacy", "horizon"]),
                          st.integers(-5, 10_000), st.sampled_from([NONE, GZIP, LZ4, ZSTD]),
                          st.sampled_from([-1, 7, 8, 1 << 40])), max_size=30))
def test_built_segments_sum_alike(tmp_path, spec):
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(_batch(kind, 2 * i, ts, codec, pid) for i, (kind, ts, codec, pid) in enumerate(spec)))
    _same(log)


def test_spans_that_cut_batches_sum_alike(monkeypatch):
    """A C call covers at most SCAN_SPAN bytes: the batch crossing each bound goes through the
    Walker, and the sums are still those of the Python path."""
    import kdump.survey.summary

    monkeypatch.setattr(kdump.survey.summary, "SCAN_SPAN", 1000)
    log = FIXTURES / "real/pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test" \
        / "00000000000000007729.log"
    assert _same(log)["batches"] == 7634
