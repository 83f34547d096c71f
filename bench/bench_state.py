"""``kdump txn``, ``groups`` and ``metadata`` on a 5,000-partition log dir, against ``verify``.

The log dir (generated once under bench/data/, git-ignored) has 50 topics of 100 partitions,
each one segment of idempotent batches; one partition in ten also holds a committed
transaction, one partition in a hundred an open one. ``__consumer_offsets`` (50 partitions)
holds three rounds of commits of one group for every partition; ``__cluster_metadata``
registers the 50 topics and their 5,000 partitions. Each command runs as a user runs it
(a new process, output to /dev/null), best of --repeat.

    python bench/bench_state.py [--partitions 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "fixtures"))

from generate import NO_TAGS, _compact_array, metadata_value, topic_record  # noqa: E402

from kdump.encode import build_end_txn_marker, build_v2_batch  # noqa: E402
from kdump.state.groups import partition_for  # noqa: E402

T0 = 1_700_000_000_000
TOPICS = 50
OFFSETS_PARTITIONS = 50
BATCHES, RECORDS, VALUE = 20, 10, b"v" * 100


def _partition_record(partition: int, topic_id: bytes) -> bytes:
    ints = _compact_array([struct.pack(">i", 1)])
    body = (struct.pack(">i", partition) + topic_id + ints + ints + _compact_array([]) + _compact_array([])
            + struct.pack(">iii", 1, 0, 0) + NO_TAGS)
    return metadata_value(3, body)


def _offset_commit(group: str, topic: str, partition: int, offset: int, ts: int) -> tuple[bytes, bytes]:
    def s(x: str) -> bytes:
        return struct.pack(">h", len(x)) + x.encode()
    return (struct.pack(">h", 1) + s(group) + s(topic) + struct.pack(">i", partition),
            struct.pack(">hqi", 3, offset, -1) + s("") + struct.pack(">q", ts))


def _write(pdir: Path, batches: list[bytes]) -> None:
    pdir.mkdir(parents=True, exist_ok=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))


def generate(root: Path, partitions: int) -> None:
    per_topic = partitions // TOPICS
    meta = []
    for t in range(TOPICS):
        topic, topic_id = f"topic{t:02d}", bytes([t]) * 16
        meta.append(topic_record(topic, topic_id))
        meta += [_partition_record(p, topic_id) for p in range(per_topic)]
        for p in range(per_topic):
            n = t * per_topic + p
            batches, offset = [], 0
            for b in range(BATCHES):
                recs = [(i, T0 + offset + i, None, VALUE) for i in range(RECORDS)]
                batches.append(build_v2_batch(recs, base_offset=offset, base_timestamp=T0 + offset,
                                              producer_id=n, producer_epoch=0, base_sequence=b * RECORDS))
                offset += RECORDS
            if n % 10 == 0:         # a committed transaction, and in one partition of 100 an open one
                pid = 100_000 + n
                batches.append(build_v2_batch([(0, T0 + offset, None, VALUE)], base_offset=offset,
                                              producer_id=pid, producer_epoch=0, base_sequence=0,
                                              is_transactional=True))
                offset += 1
                if n % 100:
                    batches.append(build_end_txn_marker(True, base_offset=offset, producer_id=pid,
                                                        producer_epoch=0, timestamp=T0 + offset))
                    offset += 1
            _write(root / f"{topic}-{p}", batches)
    offsets_id = b"\xff" * 16
    meta.append(topic_record("__consumer_offsets", offsets_id))
    meta += [_partition_record(p, offsets_id) for p in range(OFFSETS_PARTITIONS)]
    commits = [[] for _ in range(OFFSETS_PARTITIONS)]
    home = partition_for("bench", OFFSETS_PARTITIONS)
    for rnd in range(3):
        for t in range(TOPICS):
            for p in range(per_topic):
                commits[home].append(_offset_commit("bench", f"topic{t:02d}", p, 50 * (rnd + 1), T0 + rnd))
    for i, recs in enumerate(commits):
        batches = [build_v2_batch([(j, T0, k, v) for j, (k, v) in enumerate(recs[s:s + 100])], base_offset=s)
                   for s in range(0, len(recs), 100)]
        _write(root / f"__consumer_offsets-{i}", batches)
    chunks = [meta[s:s + 500] for s in range(0, len(meta), 500)]
    batches, offset = [], 0
    for chunk in chunks:
        batches.append(build_v2_batch([(j, T0, None, v) for j, v in enumerate(chunk)], base_offset=offset))
        offset += len(chunk)
    _write(root / "__cluster_metadata-0", batches)


def best(args: list[str], repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system) of the command. On a shared machine
    the CPU time is the steadier figure: it does not count waiting for a core."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kdump", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert proc.returncode in (0, 1), proc.stderr
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = ROOT / "bench" / "data" / f"state-{args.partitions}"
    if not (root / "__cluster_metadata-0").exists():
        shutil.rmtree(root, ignore_errors=True)
        print(f"generating {root} ...", file=sys.stderr)
        generate(root, args.partitions)
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    print(f"{args.partitions} partitions, {size / 1e6:.0f} MB, best of {args.repeat} (page cache warm)")
    d = str(root)
    base, base_cpu = best(["verify", d, "--json", "-q"], args.repeat)
    print(f"{'command':<40} {'wall':>8}  {'vs verify':>9}  {'cpu':>8}  {'vs verify':>9}")
    print(f"{'kdump verify':<40} {base:7.2f}s  {1:8.2f}x  {base_cpu:7.2f}s  {1:8.2f}x")
    for label, cmd in (("kdump txn", ["txn", d, "--json", "-q", "--now", "2023-11-15T00:00:00Z"]),
                       ("kdump groups (lag of 5,000 partitions)", ["groups", d, "--json", "-q"]),
                       ("kdump groups --group bench", ["groups", d, "--json", "-q", "--group", "bench"]),
                       ("kdump metadata", ["metadata", d, "--json", "-q"])):
        t, cpu = best(cmd, args.repeat)
        print(f"{label:<40} {t:7.2f}s  {t / base:8.2f}x  {cpu:7.2f}s  {cpu / base_cpu:8.2f}x")


if __name__ == "__main__":
    main()
