"""``verify --truncate`` and the repair primitives: atomic, idempotent, nothing lost.

Crash safety is shown twice: in forked children killed (``os._exit``, no cleanup runs) at
every single file-system call a repair makes, and with real subprocesses killed by
SIGKILL at random moments. In both, running the command again must reach exactly the
state an uninterrupted run reaches, and the segment plus its saved ``.corrupt-*`` bytes
must still hold every byte of the damaged original.
"""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kdump.check.broker_rule import index_bytes  # noqa: E402
from kdump.errors import WriteError  # noqa: E402
from kdump.repair.cut import save_cut_bytes, truncate_log  # noqa: E402
from kdump.repair.indexes import rebuild_changes, rebuild_indexes  # noqa: E402
from kdump.storage.safewrite import TEMP_SUFFIX, atomic_write, remove_stale_temps  # noqa: E402
from support.damage import (  # noqa: E402  # noqa: E402
    FIXTURES,
    append_garbage,
    assert_nothing_lost,
    batches,
    copy_tree,
    flip_bit,
    garbage,
    run_kdump,
    run_killed_at,
    subprocess_env,
    tree_bytes,
    truncate_at,
)

ROOT = Path(__file__).resolve().parents[2]


def _damaged_dir(tmp_path: Path, name: str = "mixed-codecs-v2-0") -> tuple[Path, Path, bytes]:
    """A copy of a generated partition whose segment has a bad CRC in the middle (indexes point past it)."""
    d = copy_tree(FIXTURES / "generated" / name, tmp_path / "src")
    log = d / "00000000000000000000.log"
    bs = batches(log)
    b = bs[len(bs) // 2]
    flip_bit(log, b.position + b.size - 1, 2)
    return d, log, log.read_bytes()


def _corrupt_files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if ".corrupt-" in p.name)




# -- primitives ----------------------------------------------------------------------------------

def test_truncate_saves_first_and_a_rerun_reuses_the_copy(tmp_path):
    d, log, original = _damaged_dir(tmp_path)
    size = len(original)
    changes = truncate_log(str(log), 1000, size)
    assert [c.action for c in changes] == ["saved", "truncated"]
    assert log.read_bytes() == original[:1000]
    assert (d / f"{log.name}.corrupt-1000").read_bytes() == original[1000:]
    # Put the bytes back as an interrupted run would have left them: the copy is reused.
    with open(log, "ab") as f:
        f.write(original[1000:])
    changes = truncate_log(str(log), 1000, size)
    assert "already saved" in changes[0].detail
    assert len(_corrupt_files(d)) == 1
    # Different bytes at the same position get their own file.
    with open(log, "ab") as f:
        f.write(b"x" * 50)
    truncate_log(str(log), 1000, 1050)
    assert [p.name for p in _corrupt_files(d)] == [f"{log.name}.corrupt-1000", f"{log.name}.corrupt-1000-2"]
    assert not list(d.glob(f"*{TEMP_SUFFIX}"))


def test_truncate_refuses_a_file_that_changed(tmp_path):
    d, log, original = _damaged_dir(tmp_path)
    with pytest.raises(WriteError):
        truncate_log(str(log), 100, len(original) + 1)
    assert log.read_bytes() == original and not _corrupt_files(d)


def test_no_writes_through_symlinks(tmp_path):
    d, log, original = _damaged_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_bytes(original)
    link = d / "00000000000000000500.log"
    link.symlink_to(elsewhere)
    with pytest.raises(WriteError):
        truncate_log(str(link), 10, len(original))
    with pytest.raises(WriteError):
        atomic_write(str(link), b"new")
    assert elsewhere.read_bytes() == original


def test_atomic_write_keeps_the_mode_and_leaves_no_temp(tmp_path):
    p = tmp_path / "f.index"
    p.write_bytes(b"old")
    os.chmod(p, 0o640)
    atomic_write(str(p), [b"ne", b"w"])
    assert p.read_bytes() == b"new" and stat.S_IMODE(p.stat().st_mode) == 0o640
    (tmp_path / f"g.index{TEMP_SUFFIX}").write_bytes(b"stale")
    assert [c.action for c in remove_stale_temps(str(tmp_path))] == ["removed_temp"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.index"]


def test_save_cut_bytes_streams_large_ranges(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    data = garbage(3 << 20, 3)
    log.write_bytes(data)
    path, new = save_cut_bytes(str(log), 100, len(data))
    assert new and Path(path).read_bytes() == data[100:]


# -- verify --truncate ---------------------------------------------------------------------------

def test_truncate_rebuilds_indexes_that_point_past_the_cut(tmp_path):
    d, log, original = _damaged_dir(tmp_path)
    r = run_kdump("verify", "--json", d)
    assert r.code == 1 and '"index_past_end"' in r.out
    r = run_kdump("verify", "--truncate", d)
    assert r.code == 1
    assert "kdump: truncated" in r.err and "kdump: rebuilt" in r.err
    assert_nothing_lost(log, original)
    assert run_kdump("verify", "--deep", d).code == 0
    # Idempotent: a second --truncate has nothing to do and changes nothing.
    before = tree_bytes(d)
    r = run_kdump("verify", "--truncate", d)
    assert r.code == 0 and "kdump: truncated" not in r.err
    assert tree_bytes(d) == before


def test_the_one_index_rebuild_refuses_a_symlink_before_writing_anything(tmp_path):
    """``verify --truncate`` and ``recover --apply`` rebuild through repair.indexes.rebuild_changes,
    ``index --rebuild`` through rebuild_indexes: one policy, links refused before any file is written."""
    d, log, _ = _damaged_dir(tmp_path)
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    old_index = index.read_bytes()
    elsewhere = tmp_path / "elsewhere.timeindex"
    elsewhere.write_bytes(timeindex.read_bytes())
    timeindex.unlink()
    timeindex.symlink_to(elsewhere)
    with pytest.raises(WriteError):
        rebuild_changes(str(log), 0, (".index", ".timeindex"))
    with pytest.raises(WriteError):
        rebuild_indexes(str(log), backup=False)
    assert index.read_bytes() == old_index and not list(d.glob("*.bak"))
    assert elsewhere.read_bytes() == timeindex.read_bytes()


def test_the_one_index_rebuild_leaves_identical_bytes_alone(tmp_path):
    d, log, _ = _damaged_dir(tmp_path)
    index = log.with_suffix(".index")
    want = index_bytes(str(log), 0)[0]
    index.write_bytes(want)
    inode = index.stat().st_ino
    changes = rebuild_changes(str(log), 0, (".index",))
    assert [(c.action, c.path) for c in changes] == [("rebuilt", str(index))]
    assert index.stat().st_ino == inode and index.read_bytes() == want
    assert rebuild_indexes(str(log), kinds=("index",)).files[0].status == "unchanged"
    assert not list(d.glob("*.bak"))


def test_truncate_mid_partition_quarantines_later_segments(tmp_path):
    """Damage in a segment that others follow: cut it, and move the later ones away (a broker's
    recovery deletes them) rather than leave an offset gap that a second verify calls clean."""
    d = copy_tree(FIXTURES / "generated" / "zstd-v2-0", tmp_path)
    first = d / "00000000000000000000.log"
    bs = batches(first)
    flip_bit(first, bs[1].position + bs[1].size - 1, 0)  # a bad CRC in the middle of the first of two segments
    second = {p.name: p.read_bytes() for p in d.glob("00000000000000000012.*")}
    assert second
    r = run_kdump("verify", "--truncate", d)
    assert r.code == 1
    assert "kdump: moved" in r.err and "no offset gap is left" in r.err
    assert not list(d.glob("00000000000000000012.*"))
    [q] = [p for p in d.iterdir() if p.name.startswith("kdump-quarantine-")]
    assert {p.name: p.read_bytes() for p in q.iterdir()} == second       # kept, byte for byte
    assert first.stat().st_size == bs[1].position
    # What is left ends where the cut is, with no later segment: the log is contiguous.
    r = run_kdump("verify", "--json", d)
    assert r.code == 0
    assert [os.path.basename(o["file"]) for o in map(json.loads, r.out.splitlines()) if o["kind"] == "log"] == [
        first.name]
    # A second --truncate finds nothing to do.
    before = tree_bytes(d)
    assert run_kdump("verify", "--truncate", d).code == 0 and tree_bytes(d) == before


def test_truncate_of_the_last_segment_moves_nothing(tmp_path):
    d = copy_tree(FIXTURES / "generated" / "zstd-v2-0", tmp_path)
    last = d / "00000000000000000012.log"
    truncate_at(last, last.stat().st_size - 3)
    first = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in d.glob("00000000000000000000.*")}
    r = run_kdump("verify", "--truncate", d)
    assert r.code == 1 and "kdump: moved" not in r.err
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in d.glob("00000000000000000000.*")} == first
    assert run_kdump("verify", d).code == 0


def test_truncate_on_a_single_named_segment(tmp_path):
    d, log, original = _damaged_dir(tmp_path)
    assert run_kdump("verify", "--truncate", log).code == 1
    assert_nothing_lost(log, original)
    assert run_kdump("verify", d).code == 0


# -- crashes -------------------------------------------------------------------------------------





def _state(d: Path) -> dict[str, bytes]:
    return tree_bytes(d)


def test_killed_at_every_step_of_truncate_then_rerun(tmp_path):
    d0, log0, original = _damaged_dir(tmp_path)
    ref = copy_tree(d0, tmp_path / "ref")
    assert run_kdump("verify", "--truncate", ref).code == 1
    reference = _state(ref)
    n = 1
    while True:
        d = copy_tree(d0, tmp_path / f"k{n}")
        code = run_killed_at(n, ["verify", "--truncate", str(d)])
        assert code in (99, 1), code
        run_kdump("verify", "--truncate", d)
        assert _state(d) == reference, f"killed at step {n}"
        assert_nothing_lost(d / log0.name, original)
        if code != 99:
            break
        n += 1
    assert n > 5          # the run really had several steps to interrupt




def test_sigkill_at_random_moments_then_rerun(tmp_path):
    d0 = copy_tree(FIXTURES / "generated" / "zstd-v2-0", tmp_path / "src")
    log = d0 / "00000000000000000012.log"
    original_size = log.stat().st_size
    # A large damaged tail makes the copy of the cut bytes take a while.
    append_garbage(log, 8 << 20, 5)
    original = log.read_bytes()
    cmd = [sys.executable, "-m", "kdump", "verify", "--truncate", "-q"]
    env = subprocess_env()
    ref = copy_tree(d0, tmp_path / "ref")
    t = time.monotonic()
    assert subprocess.run(cmd + [str(ref)], env=env, capture_output=True).returncode == 1
    elapsed = time.monotonic() - t
    reference = _state(ref)
    assert (ref / log.name).stat().st_size == original_size
    rng = random.Random(20240607)
    killed = 0
    for i in range(4):
        d = copy_tree(d0, tmp_path / f"k{i}")
        p = subprocess.Popen(cmd + [str(d)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0) * elapsed)
        p.send_signal(signal.SIGKILL)
        killed += p.wait() == -signal.SIGKILL
        rerun = subprocess.run(cmd + [str(d)], env=env, capture_output=True)
        assert rerun.returncode in (0, 1), rerun.stderr
        assert _state(d) == reference, f"run {i}"
        assert_nothing_lost(d / log.name, original)
    assert killed >= 1


# -- sparse files: a preallocated segment's zero tail is neither read nor written ---------------

def _holes_supported(directory: Path) -> bool:
    probe = directory / "probe"
    with open(probe, "wb") as f:
        f.truncate(8 << 20)
    sparse = os.stat(probe).st_blocks * 512 < (1 << 20) and hasattr(os, "SEEK_DATA")
    probe.unlink()
    return sparse


def test_atomic_write_leaves_zero_chunks_as_holes(tmp_path):
    from kdump.storage.safewrite import COPY_CHUNK, ZERO_CHUNK, read_range, same_content

    chunks = [b"head", ZERO_CHUNK, bytes(COPY_CHUNK), b"\x00\x00\x01", ZERO_CHUNK, bytes(10)]
    want = b"".join(chunks)
    target = tmp_path / "copy"
    atomic_write(str(target), iter(chunks))
    assert target.read_bytes() == want
    assert b"".join(read_range(str(target), 0, len(want))) == want
    assert b"".join(read_range(str(target), 3, len(want) - 5)) == want[3:-5]
    assert same_content(str(target), read_range(str(target), 0, len(want)))
    assert not same_content(str(target), [want[:-1] + b"\x01"])
    assert not same_content(str(target), [want, b"\x00"])
    if _holes_supported(tmp_path):
        assert target.stat().st_blocks * 512 < COPY_CHUNK      # 3 MiB of zeros took no space


def test_truncating_a_preallocated_segment_keeps_its_tail_sparse(tmp_path):
    if not _holes_supported(tmp_path):
        pytest.skip("this file system has no holes")
    from kdump.encode import build_v2_batch

    part = tmp_path / "t-0"
    part.mkdir()
    log = part / "00000000000000000000.log"
    data = b"".join(build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")], base_offset=i) for i in range(3))
    with open(log, "wb") as f:
        f.write(data)
        f.truncate(2 << 30)                    # Kafka's preallocate: the rest of the segment is a hole
    r = run_kdump("verify", "--truncate", str(part))
    assert r.code == 1, r.err
    cut = part / f"00000000000000000000.log.corrupt-{len(data)}"
    assert log.read_bytes() == data
    assert cut.stat().st_size == (2 << 30) - len(data) and cut.stat().st_blocks * 512 < (1 << 20)
    with open(cut, "rb") as f:
        f.seek(1 << 30)
        assert f.read(4096) == bytes(4096)
    assert run_kdump("verify", str(part)).code == 0
    # As after a crash between the copy and the cut: the rerun finds the copy it made (the
    # same bytes, holes compared unread) and cuts without another copy.
    with open(log, "r+b") as f:
        f.truncate(2 << 30)
    assert run_kdump("verify", "--truncate", str(part)).code == 1
    assert log.read_bytes() == data
    assert sorted(p.name for p in part.iterdir() if ".corrupt-" in p.name) == [cut.name]


def test_read_range_of_a_sparse_file_reads_its_data_and_not_its_holes(tmp_path):
    from kdump.storage.safewrite import ZERO_CHUNK, read_range

    p = tmp_path / "sparse"
    with open(p, "wb") as f:
        f.write(b"x" * 5000)
        f.truncate(50 << 20)
        f.seek(30 << 20)
        f.write(b"y" * 10)
    want = p.read_bytes()
    for a, b in ((0, len(want)), (1, 100), (4096, 8000), (30 << 20, (30 << 20) + 5),
                 ((30 << 20) - 3, (30 << 20) + 20), (len(want) - 1, len(want) + 10)):
        assert b"".join(read_range(str(p), a, b)) == want[a:b], (a, b)
    copy = tmp_path / "copy"
    atomic_write(str(copy), read_range(str(p), 0, len(want)))
    assert copy.read_bytes() == want
    if _holes_supported(tmp_path):
        assert sum(c is ZERO_CHUNK for c in read_range(str(p), 0, len(want))) >= 40
        assert copy.stat().st_blocks * 512 < 1 << 20


# -- the saved copy is checked before the cut -------------------------------

def test_a_copy_that_does_not_hold_the_cut_bytes_is_never_published(tmp_path, monkeypatch):
    """A copy losing bytes on the way (a disk, or another run replacing the
    temporary file) is caught by its size and CRC-32 read back: nothing is saved, nothing cut."""
    from kdump.storage import safewrite

    d, log, original = _damaged_dir(tmp_path)
    real = safewrite._write_all
    monkeypatch.setattr(safewrite, "_write_all", lambda fd, data: real(fd, bytes(data)[:-1]))
    with pytest.raises(WriteError, match="the copy does not hold what was read"):
        truncate_log(str(log), 1000, len(original))
    assert log.read_bytes() == original and not _corrupt_files(d)
    assert not list(d.glob(f"*{TEMP_SUFFIX}"))


def test_temporary_names_are_unique_and_recognised_as_stale(tmp_path):
    from kdump.storage.safewrite import temp_name

    p = str(tmp_path / "00000000000000000000.index")
    names = {temp_name(p) for _ in range(100)}
    assert len(names) == 100 and all(n.endswith(TEMP_SUFFIX) and n.startswith(p + ".") for n in names)
    for n in list(names)[:3]:
        Path(n).write_bytes(b"x")
    assert len(remove_stale_temps(str(tmp_path))) == 3 and not list(tmp_path.iterdir())
