"""kdump.check.broker_rule: the one home of Kafka's recovery rule, and everything agreeing with it."""

from __future__ import annotations

import json
import shutil

import pytest

from kdump.check.broker_rule import (  # noqa: E402
    build_indexes,
    entry_passes,
    log_start_past_end,
    recovered_epochs,
)
from kdump.check.scan import scan_segment  # noqa: E402
from kdump.encode import build_v2_batch  # noqa: E402
from kdump.format.walk import Walker  # noqa: E402
from kdump.storage.names import filename_offset  # noqa: E402
from support.damage import FIXTURES, flip_bit, write_at  # noqa: E402
from support.run import run_kdump  # noqa: E402

LOGS = sorted(p for p in (FIXTURES / "generated").rglob("*.log") if filename_offset(str(p)) is not None)


def _segment(n: int = 4) -> bytes:
    return b"".join(build_v2_batch([(j, 1_700_000_000_000 + j, None, b"v" * 40) for j in range(3)], base_offset=i * 3)
                    for i in range(n))


def test_entry_passes_is_kafkas_framing_and_ensure_valid():
    data = _segment()
    bs = list(Walker(data))
    assert entry_passes(data, 0, len(data)).crc_valid
    # The magic byte is outside the v2 CRC: a magic of 3 passes, as the broker reads it as v2.
    bad = write_at(bytearray(data), bs[1].position + 16, b"\x03")
    assert entry_passes(bytes(bad), bs[1].position, len(bad)) is not None
    # A CRC that does not match, a length below 14, an entry past the end: refused.
    assert entry_passes(bytes(flip_bit(bytearray(data), bs[1].position + 30, 0)), bs[1].position, len(data)) is None
    assert entry_passes(bytes(write_at(bytearray(data), 8, (13).to_bytes(4, "big"))), 0, len(data)) is None
    assert entry_passes(data[:bs[0].size - 1], 0, bs[0].size - 1) is None
    assert entry_passes(data, len(data) - 16, len(data)) is None         # fewer than 17 bytes


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_scan_and_index_rebuild_cut_at_the_same_byte(log):
    """verify (the scanner) and index --rebuild (build_indexes) take the cut from one rule."""
    data = log.read_bytes()
    base = filename_offset(str(log))
    r = scan_segment(data, base_offset=base, resync=False)
    try:
        _, _, valid = build_indexes(data, base)
    except Exception:             # offset overflow: the broker splits instead of cutting
        assert any(f.kind == "offset_overflow" for f in r.findings)
        return
    if r.cut is None or r.cut.kind != "invalid_offset":
        assert valid == r.valid_bytes


def test_recovered_epochs_follows_the_leader_epoch_cache():
    # Recovery assigns only epochs above the latest, at the first offset carrying them.
    assert recovered_epochs([(0, 0), (1, 10)], [(1, 12), (2, 20), (2, 25)]) == [(0, 0), (1, 10), (2, 20)]
    # An empty (lagging) checkpoint gets what the batches carry.
    assert recovered_epochs([], [(3, 40)]) == [(3, 40)]
    # A stale entry at or after the new start is dropped first (maybeTruncateNonMonotonicEntries).
    assert recovered_epochs([(0, 0), (5, 100)], [(6, 50)]) == [(0, 0), (6, 50)]
    # truncateFromStart: the last entry at or below the log start now starts there.
    assert recovered_epochs([(0, 0), (1, 10), (2, 30)], [], log_start_offset=15) == [(1, 15), (2, 30)]
    assert recovered_epochs([(0, 0)], [(-1, 5)]) == [(0, 0)]               # no epoch: nothing assigned


def test_log_start_past_end(tmp_path):
    """The rule, and what it leads to from the command line: a log start checkpointed above
    the log end is damage for verify and a plan to delete every segment for recover."""
    assert log_start_past_end(10, 11)
    assert not log_start_past_end(10, 10) and not log_start_past_end(None, 5) and not log_start_past_end(5, None)
    part = tmp_path / "logs" / "t-0"
    part.parent.mkdir()
    shutil.copytree(FIXTURES / "generated" / "headers-0", part)
    (tmp_path / "logs" / "log-start-offset-checkpoint").write_text("0\n1\nt 0 100000\n")
    verdict = run_kdump("verify", str(part), "--json")
    assert verdict.code == 1
    kinds = {f["kind"] for line in verdict.out.splitlines() for f in json.loads(line).get("findings", [])}
    assert "log_start_past_end" in kinds
    plan = run_kdump("recover", str(part))
    assert plan.code == 1, plan
    assert "quarantine     00000000000000000000.log: the log start offset 100000 is above the log end offset 18" \
        in plan.out


def test_log_start_checkpoint_read_once_a_run(tmp_path, monkeypatch):
    """verify reads a log dir's log-start-offset-checkpoint once, not once a partition (it lists
    every partition: a broker's whole log dir was quadratic). A partition listed twice has its
    last entry, as Kafka's OffsetCheckpointFile.read fills its map; a checkpoint with a line
    that does not parse gives no log start at all (Kafka fails to read it whole)."""
    from kdump.check import side_file_views

    logs = tmp_path / "logs"
    for name in ("t-0", "t-1", "t-2"):
        shutil.copytree(FIXTURES / "generated" / "headers-0", logs / name)
    checkpoint = logs / "log-start-offset-checkpoint"
    reads = []
    real = side_file_views.checkpoint_entries
    monkeypatch.setattr(side_file_views, "checkpoint_entries", lambda *a: reads.append(a) or real(*a))

    def past_end() -> set[str]:
        verdict = run_kdump("verify", str(logs), "--json", "-j", "1")
        return {json.loads(line)["file"].split("/")[-2] for line in verdict.out.splitlines()
                if any(f["kind"] == "log_start_past_end" for f in json.loads(line).get("findings", []))}

    checkpoint.write_text("0\n4\nt 0 100000\nt 1 5\nt 0 0\nt 1 100000\n")
    assert past_end() == {"t-1"}
    few = len(reads)
    for name in ("t-3", "t-4", "t-5", "t-6"):
        shutil.copytree(FIXTURES / "generated" / "headers-0", logs / name)
    reads.clear()
    assert past_end() == {"t-1"}
    assert len(reads) == few, "the checkpoint's reads grow with the partitions"
    # The broker reads the checkpoint the same way after a clean shutdown (LogManager, before
    # either load), and the log start above the log end deletes the segments on both paths.
    (logs / ".kafka_cleanshutdown").write_bytes(b"")
    assert past_end() == {"t-1"}
    checkpoint.write_text("0\n4\nt 0 100000\nt 1 5\nbad line\nt 2 100000\n")
    assert past_end() == set()
    (logs / ".kafka_cleanshutdown").unlink()
    assert past_end() == set()


def test_would_throw_is_what_take_meets():
    """The scanner's fast path asks ``would_throw`` before ``take``: it must say True exactly when
    ``take`` returns the reason the broker throws, and change nothing."""
    import copy
    import random

    from kdump.check.broker_rule import IndexStep
    from kdump.model import Batch

    rnd = random.Random(29)
    for _ in range(300):
        step = IndexStep(interval=rnd.choice([0, 1, 50, 200]))
        last = 0
        for _ in range(40):
            last += rnd.choice([-3, -1, 0, 1, 1, 2, 5])
            ts = rnd.choice([-1, 5, 10, 20, 1_000 + last])
            b = Batch(0, last, last, 1, rnd.choice([20, 80, 300]), 2, 0, True, 0, 0, ts, ts, -1, -1, -1)
            before = [getattr(step, name) for name in IndexStep.__slots__]
            predicted = step.would_throw(b)
            assert [getattr(step, name) for name in IndexStep.__slots__] == before
            assert predicted == (copy.copy(step).take(b) is not None)
            step.take(b, skip_invalid=True)


@pytest.mark.parametrize("seed", range(200))
def test_leader_epochs_streamed_without_batches_are_recovered_epochs(seed):
    """With no recovered batch, the one-pass reading of a leader-epoch-checkpoint (memory for
    what stays only) gives what recovered_epochs over the whole list gives."""
    import random

    from kdump.check.broker_rule import recovered_epochs
    from kdump.check.loader_rewrites import _new_epochs

    rnd = random.Random(seed)
    starts = sorted(rnd.sample(range(60), rnd.randint(0, 8)))
    entries = [(i + rnd.randint(0, 1), s) for i, s in enumerate(starts)]
    log_start = rnd.choice([None, *range(0, 60, 7)])
    leo = rnd.randint(0, 60)
    want = [e for e in recovered_epochs(entries, [], log_start) if e[1] <= leo]
    new, changed, late, added = _new_epochs(iter(entries), [], log_start, leo)
    assert (new, changed, late) == (want, want != entries, sum(1 for e in entries if e[1] > leo))
    assert added == sum(1 for e in want if e not in entries)
