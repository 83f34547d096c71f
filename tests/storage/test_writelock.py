"""One writer per partition, and none while a broker holds the log dir.

Two ``verify --truncate`` (or ``recover --apply``) runs started a few milliseconds apart
used to share one fixed temporary name: one deleted the other's copy of the cut bytes in
progress and the log was cut against a copy missing up to 56 MB. Now every writing command
locks the partition directory first: the second writer refuses at once (exit 3), temporary
names are unique, and the saved copy is checked before the cut.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kdump.errors import WriteError  # noqa: E402
from kdump.storage import logdir  # noqa: E402
from kdump.storage.writelock import LOCK_NAME, PartitionLock  # noqa: E402
from support.damage import (  # noqa: E402  # noqa: E402  # noqa: E402
    FIXTURES,
    append_garbage,
    assert_nothing_lost,
    copy_tree,
    damage_middle,
    make_partition,
    run_kdump,
    subprocess_env,
    tree_and_quarantine,
    tree_bytes,
)

BUSY = "another kdump run is writing to this partition"
CHANGES = ("saved", "truncated", "rebuilt", "trimmed", "moved", "renamed", "wrote", "removed_temp")


def _big_damage(tmp_path: Path) -> tuple[Path, Path, bytes]:
    d = copy_tree(FIXTURES / "generated" / "zstd-v2-0", tmp_path / "logs")
    log = d / "00000000000000000012.log"
    append_garbage(log, 32 << 20, 7)         # a long copy of the cut bytes: a wide window
    return d, log, log.read_bytes()


def _race(cmd: list[str], target: Path, gap: float) -> list[subprocess.CompletedProcess]:
    env = subprocess_env()
    first = subprocess.Popen(cmd + [str(target)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    time.sleep(gap)
    second = subprocess.Popen(cmd + [str(target)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    out = []
    for p in (first, second):
        _, err = p.communicate()
        out.append(subprocess.CompletedProcess(p.args, p.returncode, "", err))
    return out


def _one_writer(runs, wrote: str) -> bool:
    """Exactly one run wrote; the other refused with the lock message and exit 3, or (started
    after the first had finished) found nothing to do. True when they overlapped."""
    writers = [r for r in runs if wrote in r.stderr]
    assert len(writers) == 1, [r.stderr for r in runs]
    other = runs[1 - runs.index(writers[0])]
    assert writers[0].returncode == 1, writers[0].stderr
    changed = [line for line in other.stderr.splitlines() if line.split()[1] in CHANGES]
    assert not changed, other.stderr
    if other.returncode == 3:
        errors = [line for line in other.stderr.splitlines() if line.startswith("kdump: error: ")]
        assert len(errors) == 1 and BUSY in errors[0], other.stderr
        return True
    assert other.returncode == 0, other.stderr
    return False


def _elapsed(cmd: list[str], target: Path) -> float:
    t = time.monotonic()
    r = subprocess.run(cmd + [str(target)], env=subprocess_env(), capture_output=True)
    assert r.returncode == 1, r.stderr
    return time.monotonic() - t


def test_two_truncates_at_random_gaps_lose_nothing_and_one_writes(tmp_path):
    d0, log0, original = _big_damage(tmp_path / "src")
    cmd = [sys.executable, "-m", "kdump", "verify", "--truncate", "-q"]
    ref = copy_tree(d0, tmp_path / "ref")
    elapsed = _elapsed(cmd[:-1], ref)           # not quiet: the notes show who wrote
    reference = tree_bytes(ref)
    rng = random.Random(1975)
    overlapped = 0
    # Eight races at least; a start can miss the other run's lock (CI once saw 3 overlaps in
    # 24 races), so up to 48, until four of them overlapped.
    for i in range(48):
        if i >= 8 and overlapped >= 4:
            break
        d = copy_tree(d0, tmp_path / f"r{i}")
        runs = _race(cmd[:-1], d, rng.uniform(0, 0.4) * elapsed)
        overlapped += _one_writer(runs, "kdump: truncated")
        assert tree_bytes(d) == reference, f"run {i}"
        assert_nothing_lost(d / log0.name, original)
        shutil.rmtree(d)
    assert overlapped >= 4


def test_two_recover_applies_at_random_gaps_lose_nothing_and_one_writes(tmp_path):
    src = make_partition(tmp_path / "src")
    log, _ = damage_middle(src)
    append_garbage(log, 32 << 20, 11)
    cmd = [sys.executable, "-m", "kdump", "recover", "--apply", "--yes", "--quarantine"]
    ref, q_ref = copy_tree(src, tmp_path / "ref"), tmp_path / "ref-q"
    elapsed = _elapsed(cmd + [str(q_ref)], ref)
    reference = tree_and_quarantine(ref, q_ref)
    rng = random.Random(1976)
    overlapped = 0
    for i in range(15):         # five races at least, more until two overlapped (as above)
        if i >= 5 and overlapped >= 2:
            break
        d, q = copy_tree(src, tmp_path / f"r{i}"), tmp_path / f"r{i}-q"
        runs = _race(cmd + [str(q)], d, rng.uniform(0, 0.4) * elapsed)
        overlapped += _one_writer(runs, "kdump: truncated")
        assert tree_and_quarantine(d, q) == reference, f"run {i}"
        shutil.rmtree(d)
        shutil.rmtree(q)
    assert overlapped >= 2


def test_a_held_lock_refuses_every_writing_command(tmp_path):
    d, log, original = _big_damage(tmp_path)
    with PartitionLock(str(d)):
        for args in (["verify", "--truncate"], ["recover", "--apply", "--yes"], ["index", "--rebuild"],
                     ["timeindex", "--rebuild"], ["recover", "--salvage", str(tmp_path / "out")]):
            r = run_kdump(*args, "-q", d)
            assert r.code == 3 and r.err == f"kdump: error: {d}: {BUSY} (it holds {LOCK_NAME}); nothing was " \
                                            f"changed\n", (args, r)
        with pytest.raises(WriteError):
            PartitionLock(str(d)).acquire()
    assert log.read_bytes() == original and not (tmp_path / "out").exists()
    assert sorted(p.name for p in d.iterdir()) == sorted(os.listdir(FIXTURES / "generated" / "zstd-v2-0"))


def test_the_lock_file_is_removed_and_a_stale_one_is_taken_over(tmp_path):
    d, log, original = _big_damage(tmp_path)
    (d / LOCK_NAME).write_bytes(b"")        # left by a run killed with the lock
    assert sorted(f.name for f in logdir.partition_files(str(d))) == sorted(
        os.listdir(FIXTURES / "generated" / "zstd-v2-0"))
    assert run_kdump("verify", d).code == 1     # readers ignore it
    assert run_kdump("verify", "--truncate", d).code == 1
    assert not (d / LOCK_NAME).exists()
    assert_nothing_lost(log, original)


def _hold_broker_lock(path: Path) -> subprocess.Popen:
    """A process holding ``path`` as a broker does (a POSIX record lock, FileChannel.tryLock)."""
    code = ("import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline() == "locked\n"
    return p


def _refused_then_forced(d: Path, log: Path, original: bytes) -> None:
    broker_lock = d.parent / ".lock"
    r = run_kdump("verify", "--truncate", "-q", d)
    assert r.code == 3 and r.err == f"kdump: error: {d}: a running Kafka broker holds {broker_lock}; stop it first " \
                                    f"(or use --force); nothing was changed\n", r
    assert log.read_bytes() == original
    r = run_kdump("recover", "--apply", "--yes", "--full", d)
    assert r.code == 3 and "a running Kafka broker holds" in r.err and log.read_bytes() == original
    r = run_kdump("verify", "--truncate", "--force", d)
    assert r.code == 1 and "kdump: truncated" in r.err
    assert_nothing_lost(log, original)


def test_a_broker_holding_the_log_dir_lock_refuses_writes_unless_forced(tmp_path):
    d, log, original = _big_damage(tmp_path)
    (d.parent / ".lock").write_bytes(b"")
    # A .lock nobody holds (a broker that stopped) does not stop kdump.
    assert run_kdump("index", "--rebuild", "--no-backup", d).code == 0
    holder = _hold_broker_lock(d.parent / ".lock")
    try:
        _refused_then_forced(d, log, original)
    finally:
        holder.communicate("")
    assert run_kdump("verify", "--force", d).code == 2      # --force is for writing commands


LOCK_HOLDER = """
import java.io.File;
import org.apache.kafka.server.util.FileLock;

public class LockHolder {
    public static void main(String[] args) throws Exception {
        FileLock lock = new FileLock(new File(args[0]));
        System.out.println(lock.tryLock() ? "locked" : "busy");
        System.out.flush();
        System.in.read();
        lock.unlockAndClose();
    }
}
"""


def test_kafkas_own_log_dir_lock_is_seen(tmp_path):
    """The broker's lock, taken by Kafka's own FileLock class (what LogManager uses)."""
    import kafka_jars

    cp = kafka_jars.classpath()
    src = tmp_path / "LockHolder.java"
    src.write_text(LOCK_HOLDER)
    d, log, original = _big_damage(tmp_path / "data")
    p = subprocess.Popen(["java", "-cp", cp, str(src), str(d.parent / ".lock")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "locked\n"
        _refused_then_forced(d, log, original)
    finally:
        p.communicate("\n")


def _aliases(tmp_path: Path, d: Path) -> dict[str, Path]:
    """The partition reached through a link to itself, to its log dir and to a parent of that."""
    links = tmp_path / "links"
    links.mkdir()
    (links / "partition").symlink_to(d)
    (links / "logdir").symlink_to(d.parent)
    (links / "parent").symlink_to(d.parent.parent)
    return {"partition": links / "partition", "log dir": links / "logdir" / d.name,
            "parent": links / "parent" / d.parent.name / d.name}


def test_a_broker_lock_is_seen_through_symbolic_links(tmp_path):
    """``verify --truncate ALIAS`` (a link to ``LOGDIR/t-0``) cut the segment
    while a broker held ``LOGDIR/.lock``: the probe took the link's parent for the log dir.
    Through any link, every writing command is refused and nothing changes."""
    d, log, original = _big_damage(tmp_path)
    before = tree_bytes(d)
    holder = _hold_broker_lock(d.parent / ".lock")
    try:
        for where, alias in _aliases(tmp_path, d).items():
            for args in (["verify", "--truncate"], ["recover", "--apply", "--yes", "--full"], ["index", "--rebuild"],
                         ["timeindex", "--rebuild"], ["recover", "--salvage", str(tmp_path / "out")]):
                r = run_kdump(*args, "-q", alias)
                assert r.code == 3 and r.err == f"kdump: error: {alias}: a running Kafka broker holds " \
                                                f"{d.parent / '.lock'}; stop it first (or use --force); nothing " \
                                                f"was changed\n", (where, args, r)
                assert tree_bytes(d) == before and not (tmp_path / "out").exists(), (where, args)
    finally:
        holder.communicate("")
    assert log.read_bytes() == original
