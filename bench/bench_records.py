"""``kdump records --json`` (the flat record stream) against today's NDJSON dump and ``cat``, in one run.

    python bench/bench_records.py [--quick] [--repeat N] [--python]

Two segments of 1 KB values in 100-record v2 batches (>= 256 MiB each; cached under bench/data/):
bench_decode.py's plain one, and a transactional one made here (transactions of 4 batches
from 8 producers, one in four aborted: read_committed leaves a quarter out). Page cache
warm, interleaved rounds, the median of N, MB/s of segment:

- ``cat`` and ``base64`` of the segment to /dev/null: what reading it, and writing each
  byte as base64 once, cost at least on this machine (the ceiling);
- ``kdump records --json`` (base64 keys and values), plain and ``--isolation read_committed``,
  on both segments;
- ``kdump dump --records --data --encoding base64 --json -j 1``, the peer: the batch-nested NDJSON;
- with ``--python``: ``records --json`` with KDUMP_NO_SPEEDUPS=1 (the pure-Python reference).

Targets (issue 40): the flat stream >= 500 MB/s of segment, at least as fast as the nested
NDJSON; read_committed >= 0.8x the plain stream.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_decode as base  # noqa: E402

from kdump import encode as build  # noqa: E402

TXN_TARGET = 256 << 20
PRODUCERS, BATCHES_PER_TXN, PER_BATCH, VALUE_SIZE = 8, 4, 100, 1000


def transactional(directory: Path, quick: bool) -> Path:
    """The transactional segment: each producer's transactions of BATCHES_PER_TXN batches, the
    producers taking turns, every fourth transaction ending with ABORT."""
    target = TXN_TARGET // base.QUICK_DIVISOR if quick else TXN_TARGET
    part = directory / ("quick" if quick else "full") / "v2-txn-100rec-0"
    seg = part / "00000000000000000000.log"
    if seg.exists() and seg.stat().st_size >= target:
        return seg
    part.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(40)
    offset = size = txn = 0
    tmp = seg.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        while size < target:
            pid = 1000 + txn % PRODUCERS
            for _ in range(BATCHES_PER_TXN):
                recs = [(i, base.T0 + offset + i, b"key-%d" % (offset + i), base._value(rnd, VALUE_SIZE))
                        for i in range(PER_BATCH)]
                data = build.build_v2_batch(recs, base_offset=offset, producer_id=pid, producer_epoch=0,
                                            base_sequence=0, is_transactional=True, partition_leader_epoch=0)
                out.write(data)
                size += len(data)
                offset += PER_BATCH
            marker = build.build_end_txn_marker(txn % 4 != 3, base_offset=offset, producer_id=pid, producer_epoch=0,
                                                timestamp=base.T0 + offset, partition_leader_epoch=0)
            out.write(marker)
            size += len(marker)
            offset += 1
            txn += 1
    os.replace(tmp, seg)
    return seg


def run_shell(args: list[str], env: dict | None = None) -> None:
    with open(os.devnull, "wb") as devnull:
        rc = subprocess.run(args, stdout=devnull, stderr=subprocess.PIPE, check=False, env=env)
    if rc.returncode not in (0, 1):
        raise SystemExit(f"command failed ({rc.returncode}): {' '.join(map(str, args))}\n{rc.stderr.decode()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--quick", action="store_true", help=f"segments 1/{base.QUICK_DIVISOR} of the full size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python", action="store_true", help="also the pure-Python writer (slow)")
    args = ap.parse_args()
    plain_seg = base.generate(args.data, "v2-none-100rec", args.quick)
    txn_seg = transactional(args.data, args.quick)
    sizes = {"plain": plain_seg.stat().st_size, "txn": txn_seg.stat().st_size}
    part, txn_part = str(plain_seg.parent), str(txn_seg.parent)
    committed = ["--isolation", "read_committed"]
    cmds: dict[str, tuple[str, list[str], dict | None]] = {
        "cat": ("plain", ["cat", str(plain_seg)], None),
        "base64": ("plain", ["base64", "-w0", str(plain_seg)], None),
        "records --limit 0 (start-up)": ("plain", [*base.KDUMP, "records", part, "--json", "--limit", "0"], None),
        "records --json": ("plain", [*base.KDUMP, "records", part, "--json"], None),
        "records --json read_committed": ("plain", [*base.KDUMP, "records", part, "--json", *committed], None),
        "records --json (txn)": ("txn", [*base.KDUMP, "records", txn_part, "--json"], None),
        "records --json read_committed (txn)": ("txn", [*base.KDUMP, "records", txn_part, "--json", *committed],
                                                None),
        "dump --records --data --json (peer)": ("plain", [*base.KDUMP, "dump", part, "--records", "--data",
                                                          "--encoding", "base64", "--json", "-j", "1"], None),
    }
    if args.python:
        cmds["records --json, pure Python"] = ("plain", [*base.KDUMP, "records", part, "--json"],
                                               {**os.environ, "KDUMP_NO_SPEEDUPS": "1"})
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"segments {sizes['plain'] / 1e6:.0f} MB (plain), {sizes['txn'] / 1e6:.0f} MB (txn); "
          f"median of {args.repeat}")
    times, cpus = medians({name: (c, e) for name, (_, c, e) in cmds.items()}, args.repeat)
    rate = {name: sizes[cmds[name][0]] / t / 1e6 for name, t in times.items()}
    cpu_rate = {name: sizes[cmds[name][0]] / max(t, 1e-3) / 1e6 for name, t in cpus.items()}
    plain, cat = rate["records --json"], rate["cat"]
    print(f"{'':<40} {'wall':>7}   {'MB/s':>8}  {'CPU':>7}   {'MB/s CPU':>8}  ratios (wall)")
    for name, t in times.items():
        print(f"{name:<40} {t:7.2f} s {rate[name]:8.0f}  {cpus[name]:7.2f} s {cpu_rate[name]:8.0f}  "
              f"{rate[name] / plain:5.2f}x the plain stream  {rate[name] / cat:5.2f}x cat")
    for label, key in (("wall", rate), ("CPU", cpu_rate)):
        print(f"read_committed / plain ({label}): {key['records --json read_committed'] / key['records --json']:.2f} "
              f"(plain segment), {key['records --json read_committed (txn)'] / key['records --json (txn)']:.2f} "
              f"(transactional)")


def medians(cmds: dict, repeat: int) -> tuple[dict, dict]:
    """Each command run ``repeat`` times, interleaved: name -> median wall seconds, and name ->
    median CPU seconds (user + system of the child: what a busy machine's queue does not add)."""
    walls: dict = {name: [] for name in cmds}
    cpus: dict = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, (c, e) in cmds.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            run_shell(c, e)
            walls[name].append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return ({n: statistics.median(v) for n, v in walls.items()}, {n: statistics.median(v) for n, v in cpus.items()})


if __name__ == "__main__":
    main()
