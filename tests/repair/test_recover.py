"""``kdump recover``: LogLoader's startup recovery as a plan, ``--apply``, ``--salvage``.

Partitions are built with ``kdump.encode`` (three segments, indexes as the broker
writes them, producer snapshots, a leader-epoch checkpoint) or copied from fixtures/.
Nothing the broker would delete is deleted: it is moved to a quarantine directory, so
every byte of the original partition is still somewhere after ``--apply``.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from kdump.check.broker_rule import index_bytes  # noqa: E402
from kdump.encode import encode_offsets  # noqa: E402
from kdump.repair.recover import LogDirState, plan_partition  # noqa: E402
from support.damage import (  # noqa: E402  # noqa: E402
    FIXTURES,
    batches,
    copy_tree,
    damage_middle,
    make_partition,
    messy_partition,
    partition_batch,
    run_kdump,
    run_killed_at,
    subprocess_env,
    tree_and_quarantine,
    tree_bytes,
    tree_state,
)


def _plan_json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line]


def _all_bytes(*roots: Path) -> list[bytes]:
    return sorted(b for r in roots for b in tree_bytes(r).values())


def _contents_kept(before: dict[str, bytes], *roots: Path) -> None:
    """Every original file's bytes still exist: whole, or as a kept prefix plus its .corrupt-* tail."""
    after: dict[str, bytes] = {}
    for r in roots:
        for k, v in tree_bytes(r).items():
            after[os.path.join(str(r), k)] = v
    values = list(after.values())
    for name, data in before.items():
        if data in values:
            continue
        base = os.path.basename(name)
        pieces = [v for k, v in after.items() if os.path.basename(k).startswith(base + ".corrupt-")]
        kept = [v for k, v in after.items() if os.path.basename(k) == base]
        assert any(k + p == data for k in kept for p in pieces), f"{name} lost"


# -- plans ------------------------------------------------------------------------------------

def test_clean_partitions_plan_nothing_and_change_nothing(tmp_path):
    d = copy_tree(FIXTURES / "generated", tmp_path)
    before = tree_state(d)
    for name in sorted(os.listdir(d)):
        if name.startswith("torn"):
            continue
        r = run_kdump("recover", "--json", d / name)
        assert r.code == 0, (name, r.out)
        rows = _plan_json(r.out)
        assert rows[-1]["action"] == "summary" and rows[-1]["steps"] == 0, (name, rows)
    assert tree_state(d) == before


def test_damaged_middle_segment_plan(tmp_path):
    d = make_partition(tmp_path)
    log, cut = damage_middle(d)
    before = tree_state(d)
    r = run_kdump("recover", "--json", d)
    assert r.code == 1
    rows = _plan_json(r.out)
    steps = {(row["action"], os.path.basename(row["file"] or "")) for row in rows[:-1]}
    assert ("truncate", log.name) in steps
    for ext in (".log", ".index", ".timeindex"):
        assert ("quarantine", f"{18:020d}{ext}") in steps
    assert ("quarantine", f"{18:020d}.snapshot") in steps and ("quarantine", f"{27:020d}.snapshot") in steps
    # Recovering from segment 0, Kafka's truncateAndReload to offset 0 deletes every snapshot
    # (ProducerStateManager), then writes its own at each recovered segment's end: kdump keeps
    # the one at 9, which the broker writes again.
    assert ("quarantine", f"{9:020d}.snapshot") not in steps
    assert ("trim_epochs", "leader-epoch-checkpoint") in steps
    trunc = [row for row in rows if row["action"] == "truncate"][0]
    assert trunc["position"] == cut and trunc["target"] == f"{log.name}.corrupt-{cut}"
    assert rows[-1]["log_end_offset"] == 12
    assert tree_state(d) == before
    r = run_kdump("recover", d)
    assert r.code == 1 and "truncate" in r.out and "nothing changed" in r.err


def test_apply_then_verify_is_clean_and_nothing_is_lost(tmp_path):
    d = make_partition(tmp_path)
    log, cut = damage_middle(d)
    original = tree_bytes(d)
    original = {str(d / k): v for k, v in original.items()}
    r = run_kdump("recover", "--apply", "--yes", d)
    assert r.code == 1, r.err
    assert "kdump: truncated" in r.err
    assert log.stat().st_size == cut
    assert not (d / f"{18:020d}.log").exists()
    quarantine = [p for p in d.iterdir() if p.is_dir() and p.name.startswith("kdump-quarantine-")]
    assert len(quarantine) == 1
    assert (quarantine[0] / f"{18:020d}.log").exists()
    assert (d / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 12\n"
    r = run_kdump("verify", d)
    assert r.code == 0, r.out
    _contents_kept(original, d)
    # A second run finds nothing to do.
    r = run_kdump("recover", "--apply", "--yes", "--json", d)
    assert r.code == 0 and _plan_json(r.out)[-1]["steps"] == 0


def test_recovery_point_and_clean_shutdown(tmp_path):
    root = tmp_path / "logs"
    d = make_partition(root)
    log, cut = damage_middle(d)
    (root / "recovery-point-offset-checkpoint").write_bytes(encode_offsets([("orders", 0, 20)]))
    r = run_kdump("recover", "--json", d)
    rows = _plan_json(r.out)
    assert r.code == 1
    assert not [row for row in rows if row["action"] == "truncate"]
    assert any(row["action"] == "note" and "would not recover" in row["reason"] for row in rows)
    assert rows[-1]["new_recovery_point"] == 20
    r = run_kdump("recover", "--json", "--full", d)
    assert [row["position"] for row in _plan_json(r.out) if row["action"] == "truncate"] == [cut]
    (root / "recovery-point-offset-checkpoint").unlink()
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":5}')
    rows = _plan_json(run_kdump("recover", "--json", d).out)
    assert not [row for row in rows if row["action"] == "truncate"]
    assert any("clean shutdown" in row["reason"] for row in rows if row["action"] == "note")


def test_swap_files_replace_their_originals(tmp_path):
    d = make_partition(tmp_path)
    # The cleaner merged segments 0 and 9 into one cleaned segment at 0, swapped in as .swap.
    merged = b"".join(partition_batch(o) for o in (0, 6, 12))
    (d / f"{0:020d}.log.swap").write_bytes(merged)
    (d / f"{0:020d}.log.swap").write_bytes(merged)
    index, timeindex = index_bytes(str(d / f"{0:020d}.log.swap"), 0)
    (d / f"{0:020d}.index.swap").write_bytes(index)
    r = run_kdump("recover", "--json", d)
    rows = _plan_json(r.out)
    moved = {os.path.basename(row["file"]) for row in rows if row["action"] == "quarantine"}
    assert moved == {f"{b:020d}{ext}" for b in (0, 9) for ext in (".log", ".index", ".timeindex")} | {
        f"{9:020d}.snapshot"}
    renames = [(os.path.basename(row["file"]), row["target"]) for row in rows if row["action"] == "rename"]
    assert renames == [(f"{0:020d}.log.swap", f"{0:020d}.log"), (f"{0:020d}.index.swap", f"{0:020d}.index")]
    assert r.code == 0
    assert run_kdump("recover", "--apply", "--yes", d).code == 0
    assert (d / f"{0:020d}.log").read_bytes() == merged
    assert run_kdump("verify", d).code == 0


def test_cleaned_deleted_and_orphans(tmp_path):
    d = make_partition(tmp_path)
    (d / f"{9:020d}.log.cleaned").write_bytes(b"partial")
    (d / f"{18:020d}.log.swap").write_bytes((d / f"{18:020d}.log").read_bytes())   # >= the .cleaned offset
    (d / f"{0:020d}.log.deleted").write_bytes(b"old")
    (d / f"{50:020d}.index").write_bytes(b"")
    r = run_kdump("recover", "--json", d)
    rows = _plan_json(r.out)
    reasons = {os.path.basename(row["file"]): row["reason"] for row in rows if row["action"] == "quarantine"}
    assert "unfinished split" in reasons[f"{18:020d}.log.swap"]
    assert "log-cleaner" in reasons[f"{9:020d}.log.cleaned"]
    assert "deletion" in reasons[f"{0:020d}.log.deleted"]
    assert "orphan" in reasons[f"{50:020d}.index"]
    assert not [row for row in rows if row["action"] == "rename"]
    assert r.code == 0
    assert run_kdump("recover", "--apply", "--yes", d).code == 0
    r = run_kdump("verify", "--json", d)
    assert r.code == 0 and '"leftover"' not in r.out and '"orphan_index"' not in r.out


def test_real_cleaner_leftovers(tmp_path):
    d = copy_tree(FIXTURES / "real" / "getachew015__kafka-broker" / "data" / "kafka", tmp_path)
    original = {str(d / k): v for k, v in tree_bytes(d).items()}
    r = run_kdump("recover", "--json", d)
    assert r.code == 0
    rows = [row for row in _plan_json(r.out) if row["action"] == "quarantine"]
    assert {os.path.basename(row["file"]) for row in rows} == {
        "00000000000000000000.log.swap", "00000000000000000000.index.swap", "00000000000000000000.timeindex.cleaned"}
    assert run_kdump("recover", "--apply", "--yes", d).code == 0
    r = run_kdump("verify", "--json", d)
    assert r.code == 0 and '"leftover"' not in r.out
    _contents_kept(original, d)


# -- salvage ----------------------------------------------------------------------------------

def test_salvage_copies_the_intact_batches_past_the_damage(tmp_path):
    d = make_partition(tmp_path / "logs")
    log, cut = damage_middle(d)
    out = tmp_path / "salvaged"
    before = tree_state(d)
    r = run_kdump("recover", "--salvage", out, d)
    assert r.code == 1 and "salvaged batches" in r.err
    assert tree_state(d) == before                       # salvage alone does not touch the log dir
    seg = out / d.name
    logs = sorted(p.name for p in seg.glob("*.log"))
    assert logs == [f"{15:020d}.log"]                    # 15..17 from segment 9, then all of segment 18
    got = batches(seg / logs[0])
    assert [(b.base_offset, b.last_offset) for b in got] == [(15, 17), (18, 20), (21, 23), (24, 26)]
    assert {p.suffix for p in seg.iterdir()} == {".log", ".index", ".timeindex"}
    assert run_kdump("verify", "--deep", seg).code == 0
    snapshot = tree_state(out)
    r = run_kdump("recover", "--salvage", out, d)
    assert tree_state(out) == snapshot                   # a rerun writes nothing new


# -- prompts and guards -----------------------------------------------------------------------

def test_apply_asks_first(tmp_path, monkeypatch):
    d = make_partition(tmp_path)
    damage_middle(d)
    before = tree_state(d)
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    r = run_kdump("recover", "--apply", d)
    assert "Apply" in r.err and "not applied" in r.err
    assert tree_state(d) == before
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    r = run_kdump("recover", "--apply", d)
    assert "kdump: truncated" in r.err


def test_quarantine_inside_the_log_dir_is_refused(tmp_path):
    root = tmp_path / "logs"
    d = make_partition(root)
    r = run_kdump("recover", "--apply", "--yes", "--quarantine", root / "q", root)
    assert r.code == 2 and "stop the broker" in r.err
    assert not (root / "q").exists()
    assert run_kdump("recover", tmp_path / "missing").code in (2, 3)
    assert run_kdump("recover", d / f"{0:020d}.log").code == 2


def test_a_log_dir_named_like_a_partition_is_a_log_dir(tmp_path):
    """A log dir called kafka-1 holding partition dirs: each partition is planned, not kafka-1 as one."""
    root = tmp_path / "kafka-1"
    d = make_partition(root)
    make_partition(root, "orders-1")
    damage_middle(d)
    rows = _plan_json(run_kdump("recover", "--json", root).out)
    assert sorted({os.path.basename(r["partition"]) for r in rows}) == ["orders-0", "orders-1"]
    assert [r["action"] for r in rows if r["partition"].endswith("orders-1")] == ["summary"]
    r = run_kdump("recover", "--apply", "--yes", root)
    assert r.code == 1 and run_kdump("verify", root).code == 0
    # A partition holding only its quarantine folder (everything moved out) stays a partition.
    empty = make_partition(tmp_path, "empty-0")
    q = empty / "kdump-quarantine-20260101T000000Z"
    q.mkdir()
    for p in list(empty.iterdir()):
        if p.is_file() and p.name[0].isdigit():
            p.rename(q / p.name)
    rows = _plan_json(run_kdump("recover", "--json", empty).out)
    assert {os.path.basename(r["partition"]) for r in rows} == {"empty-0"}
    # and, its log gone, it gets what a broker's start gives it: an empty segment at the log
    # start offset, the epochs past it dropped (tests/kafka/test_broker_accepts.py)
    assert [r["action"] for r in rows] == ["create_segment", "trim_epochs", "summary"]


def test_quarantine_elsewhere(tmp_path):
    d = make_partition(tmp_path / "logs")
    damage_middle(d)
    q = tmp_path / "q"
    assert run_kdump("recover", "--apply", "--yes", "--quarantine", q, d).code == 1
    assert (q / d.name / f"{18:020d}.log").exists()
    assert not [p for p in d.iterdir() if p.is_dir()]


# -- crashes ----------------------------------------------------------------------------------





def test_killed_at_every_step_of_apply_then_rerun(tmp_path):
    src = messy_partition(tmp_path / "src")
    ref = copy_tree(src, tmp_path / "ref")
    q_ref = tmp_path / "ref-q"
    assert run_kdump("recover", "--apply", "--yes", "--quarantine", q_ref, ref).code == 1
    reference = tree_and_quarantine(ref, q_ref)
    n = 1
    while True:
        d = copy_tree(src, tmp_path / f"k{n}")
        q = tmp_path / f"k{n}-q"
        code = run_killed_at(n, ["recover", "--apply", "--yes", "--quarantine", str(q), str(d)])
        assert code in (99, 1), code
        run_kdump("recover", "--apply", "--yes", "--quarantine", q, d)
        assert tree_and_quarantine(d, q) == reference, f"killed at step {n}"
        if code != 99:
            break
        n += 1
    assert n > 10


def _temps(*roots: Path) -> list[str]:
    return sorted(os.path.join(dp, n) for r in roots for dp, _, names in os.walk(r) for n in names
                  if n.endswith(".kdump-tmp"))


def test_sigkill_apply_at_random_moments(tmp_path):
    """Killed while it moves, cuts, copies into the quarantine (a 48 MiB preallocated
    .timeindex makes that copy a good share of the run) or rebuilds; the rerun ends where an
    uninterrupted run does, with no temporary file left, in the quarantine either."""
    src = messy_partition(tmp_path / "src")
    with open(src / f"{9:020d}.timeindex", "ab") as f:
        f.write(bytes(48 << 20))            # written, not sparse: the copy reads it all
    env = subprocess_env()
    base = [sys.executable, "-m", "kdump", "recover", "--apply", "--yes", "-q", "--quarantine"]
    ref, q_ref = copy_tree(src, tmp_path / "ref"), tmp_path / "ref-q"
    t = time.monotonic()
    subprocess.run(base + [str(q_ref), str(ref)], env=env, capture_output=True, check=False)
    elapsed = time.monotonic() - t
    reference = tree_and_quarantine(ref, q_ref)
    rng = random.Random(4242)
    for i in range(4):
        d, q = copy_tree(src, tmp_path / f"k{i}"), tmp_path / f"k{i}-q"
        p = subprocess.Popen(base + [str(q), str(d)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * elapsed)
        p.send_signal(signal.SIGKILL)
        p.wait()
        subprocess.run(base + [str(q), str(d)], env=env, capture_output=True, check=False)
        assert tree_and_quarantine(d, q) == reference, f"run {i}"
        assert _temps(d, q) == [], f"run {i}"


def test_plan_partition_api(tmp_path):
    d = make_partition(tmp_path)
    plan = plan_partition(str(d), LogDirState())
    assert plan.actions == [] and plan.log_end_offset == 27 and not plan.damaged


def test_an_index_too_large_to_read_is_planned_for_rebuild(tmp_path):
    """A sparse 10 GiB .index (no broker writes one; a bad disk or a bad copy can) is not
    read: the plan rebuilds it from the log, and the rest of the partition is planned as usual."""
    d = make_partition(tmp_path)
    index = d / f"{9:020d}.index"
    with open(index, "r+b") as f:
        f.truncate(10 << 30)
    r = run_kdump("recover", "--json", d)
    assert r.code == 0, r.err
    rebuild = [row for row in _plan_json(r.out)[:-1] if row["action"] == "rebuild_index"]
    assert [os.path.basename(row["file"]) for row in rebuild] == [index.name]
    assert "more than kdump reads of this kind of file" in rebuild[0]["reason"]
    r = run_kdump("recover", "--apply", "--yes", d)
    assert r.code == 0, r.err
    assert index.stat().st_size < 1 << 20
    assert run_kdump("verify", d).code == 0


def test_sigkill_during_the_quarantine_copy(tmp_path):
    """SIGKILL the moment a temporary file appears in the (default) quarantine, the copy of an
    index about to be rebuilt. The rerun a second later quarantines into another directory
    (the first one's temporary file once outlived it); now it is removed, and
    the partition ends as an uninterrupted run leaves it."""
    src = messy_partition(tmp_path / "src")
    with open(src / f"{9:020d}.timeindex", "ab") as f:
        f.write(bytes(48 << 20))
    env = subprocess_env()
    cmd = [sys.executable, "-m", "kdump", "recover", "--apply", "--yes", "-q"]
    ref = copy_tree(src, tmp_path / "ref")
    subprocess.run(cmd + [str(ref)], env=env, capture_output=True, check=False)
    d = copy_tree(src, tmp_path / "k")
    p = subprocess.Popen(cmd + [str(d)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    caught = []
    while p.poll() is None and not caught:
        caught = [t for t in _temps(d) if "kdump-quarantine-" in t]
    p.send_signal(signal.SIGKILL)
    assert p.wait() == -signal.SIGKILL and caught, "the copy into the quarantine was not caught in progress"
    time.sleep(1.1)                         # the rerun's quarantine gets another time stamp
    subprocess.run(cmd + [str(d)], env=env, capture_output=True, check=False)
    assert _temps(d) == []

    def outside(root: Path) -> dict[str, bytes]:
        return {k: v for k, v in tree_bytes(root).items() if not k.startswith("kdump-quarantine-")}

    assert outside(d) == outside(ref)
