"""``kdump recover`` under attack: its exit status, the log start cut, salvage's memory."""

from __future__ import annotations

import pytest

from kdump.format.logdir_files import CLEAN_SHUTDOWN_FILE
from support.damage import make_partition, tree_bytes, write_at
from support.run import run_kdump


@pytest.mark.parametrize("clean_shutdown", [False, True])
def test_a_garbage_index_exits_1_in_recover_as_in_verify(tmp_path, clean_shutdown):
    """Item 7: ``recover`` exited 0 on a segment whose ``.index`` is garbage, ``verify`` 1. After a
    clean shutdown the broker trusts the index (readers are sent astray); without one it
    rebuilds it. Either way it is damage in the one registry, and both exit 1."""
    d = make_partition(tmp_path / "logs")
    index = d / f"{9:020d}.index"
    write_at(index, 0, b"\x7f" * 8)
    if clean_shutdown:
        (d.parent / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    before = tree_bytes(tmp_path)
    assert run_kdump("verify", d).code == 1
    r = run_kdump("recover", d)
    assert r.code == 1, r.out
    assert f"{index.name}: index_past_end" in r.out if clean_shutdown else f"rebuild_index  {index.name}" in r.out
    assert tree_bytes(tmp_path) == before
    # A sane index is no damage: both exit 0.
    write_at(index, 0, bytes(8))
    (d / index.name).write_bytes(b"")
    assert run_kdump("verify", d).code == 0 and run_kdump("recover", d).code == 0


def test_a_log_below_its_log_start_offset_ends_as_one_empty_segment_there(tmp_path):
    """Item 8: when the cut leaves the log below its log start offset, the broker (LogLoader.
    recoverLog) deletes every segment and, in the same load, opens an empty segment at the
    log start offset. ``recover --apply`` left none; now it creates it, and a rerun changes
    nothing more."""
    from kdump.encode import encode_offsets
    from support.damage import damage_middle

    d = make_partition(tmp_path / "logs")
    damage_middle(d)                        # the cut is in segment 9: the log ends at offset 12
    (d.parent / "log-start-offset-checkpoint").write_bytes(encode_offsets([("orders", 0, 20)]))
    r = run_kdump("recover", "--json", d)
    assert r.code == 1
    assert '"action": "create_segment"' in r.out or '"action":"create_segment"' in r.out, r.out
    r = run_kdump("recover", "--apply", "--yes", d)
    assert r.code == 1, r.err
    new = d / f"{20:020d}.log"
    assert f"kdump: wrote {new}" in r.err, r.err
    assert sorted(p.name for p in d.glob("*.log")) == [new.name] and new.read_bytes() == b""
    assert oct(new.stat().st_mode & 0o777) == oct((next(d.glob("kdump-quarantine-*")) / f"{0:020d}.log").stat().st_mode
                                                  & 0o777)
    after = tree_bytes(d)
    r = run_kdump("recover", "--apply", "--yes", d)
    assert r.code == 0 and tree_bytes(d) == after, r.err
    assert run_kdump("verify", d).code == 0


_PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_rss_kib(args: list[str]) -> int:
    """The peak RSS of ``kdump ARGS`` run alone in a fresh child (resource.getrusage)."""
    import subprocess
    import sys

    from support.damage import subprocess_env

    r = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, "-m", "kdump", *map(str, args)],
                       capture_output=True, text=True, env=subprocess_env(), check=True)
    return int(r.stdout.split()[-1])


@pytest.mark.slow
def test_salvage_streams_a_segment_in_bounded_memory(tmp_path):
    """Item 5: ``recover --salvage`` joined a whole salvaged segment in memory (a 507 MB segment
    took 1.0 GB RSS). Now its bytes are streamed from the source: salvaging 96 MiB costs
    little more memory than planning it, and the copy is exact, indexes included."""
    from kdump.check.broker_rule import encode_indexes
    from kdump.encode import build_v2_batch
    from support.damage import batches, partition_batch

    d = tmp_path / "logs" / "big-0"
    d.mkdir(parents=True)
    log = d / f"{0:020d}.log"
    with open(log, "wb") as f:
        f.write(partition_batch(0))
        bad = bytearray(partition_batch(3))
        bad[-1] ^= 0xFF                     # a CRC mismatch: the broker cuts here
        f.write(bad)
        value = bytes(range(256)) * 2048    # 512 KiB (a batch within the default max.message.bytes)
        for i in range(192):
            f.write(build_v2_batch([(0, 1_700_000_000_000 + i, b"k", value)], base_offset=6 + i))
    plan_only = _peak_rss_kib(["recover", "-q", d])
    salvaged = _peak_rss_kib(["recover", "-q", "--salvage", tmp_path / "out", d])
    assert salvaged < plan_only + 24 * 1024, (plan_only, salvaged)      # KiB: far below the 96 MiB copied
    out = tmp_path / "out" / "big-0" / f"{6:020d}.log"
    data = log.read_bytes()
    assert out.read_bytes() == data[batches(data)[2].position:]
    index, timeindex = encode_indexes(out.read_bytes(), 6)
    assert out.with_suffix(".index").read_bytes() == index and out.with_suffix(".timeindex").read_bytes() == timeindex
