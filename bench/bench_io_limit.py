"""``--io-limit`` holds: the MB/s ``kdump dump --json`` and ``kdump records --json`` achieve under it.

    python bench/bench_io_limit.py [--limit 50] [--seconds 12] [--quick]

A log dir of N partitions, each a hard link to bench_decode.py's 1 KB-value segment (256 MiB;
cached under bench/data/), N chosen so that the limited run lasts at least ``--seconds``; read
with the default -j (every worker shares the one limit). Each command runs once unlimited (the
peer) and once with ``--io-limit``. The rate is the bytes read / wall time, start-up included,
and again without it (the wall time of the same command on a one-segment fixture, measured in
the same run). ``records`` reads each segment twice (a walk of the batch headers for the
transaction outcomes, then the records): its bytes read are twice the segments'. Target
(issue 40): within 10% of the limit over >= 10 s. ``--quick`` uses the 16 MiB segment and a 5 s
run: a smoke test of the bench, not the target.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_decode as base  # noqa: E402


def log_dir(data: Path, quick: bool, seconds: float, limit: float) -> tuple[Path, int]:
    seg = base.generate(data, "v2-none-100rec", quick)
    size = seg.stat().st_size
    n = max(1, math.ceil(seconds * limit * 1e6 / size))
    root = data / ("quick" if quick else "full") / f"io-limit-{n}"
    for i in range(n):
        part = root / f"bench-{i}"
        part.mkdir(parents=True, exist_ok=True)
        link = part / seg.name
        if not link.exists():
            os.link(seg, link)
    return root, n * size


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    base.run_cmd(cmd)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--limit", type=float, default=50.0, help="MB/s (default 50)")
    ap.add_argument("--seconds", type=float, default=12.0, help="how long the limited run should last")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    seconds = 5.0 if args.quick else args.seconds
    root, total = log_dir(args.data, args.quick, seconds, args.limit)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"{total / 1e6:.0f} MB in {root.name}; --io-limit {args.limit:g}")
    tiny = str(HERE.parent / "fixtures" / "generated" / "headers-0")
    cmds = {"dump --json": (["dump", "--json"], 1), "records --json": (["records", "--json"], 2)}
    for name, (cmd, passes) in cmds.items():
        start = timed([*base.KDUMP, cmd[0], tiny, *cmd[1:]])
        free = timed([*base.KDUMP, cmd[0], str(root), *cmd[1:]])
        limited = timed([*base.KDUMP, cmd[0], str(root), *cmd[1:], "--io-limit", f"{args.limit:g}"])
        read = total * passes
        rate, steady = read / limited / 1e6, read / (limited - start) / 1e6
        print(f"{name:<15} reads {read / 1e6:5.0f} MB; unlimited {free:6.2f} s | --io-limit {args.limit:g}: "
              f"{limited:6.2f} s, {rate:5.1f} MB/s ({rate / args.limit - 1:+.1%}); less the start-up "
              f"({start:.2f} s): {steady:5.1f} MB/s ({steady / args.limit - 1:+.1%})")


if __name__ == "__main__":
    main()
