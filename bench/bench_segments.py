"""``kdump verify`` against the number of segments in one partition: it must grow linearly.

Creates partitions of empty segments under bench/data/ (git-ignored): a year of hourly
segments is about 8,800 of them, issue #19 asked for 100,000 in under 10 s. Times
``kdump verify -q`` on each in a fresh process and prints wall and CPU seconds and the cost
per segment relative to the smallest count (1.00 = linear). CPU time is reported beside wall
time because the machine may be shared.

    python bench/bench_segments.py [--counts 2500,10000,100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"


def _partition(n: int) -> Path:
    d = DATA / f"segments-{n}" / "t-0"
    if len(os.listdir(d)) == n if d.is_dir() else False:
        return d
    d.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        os.close(os.open(d / f"{i * 10:020d}.log", os.O_CREAT | os.O_WRONLY, 0o644))
    return d


def _run(d: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "kdump", "verify", "-q", str(d)], stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 0, r.returncode
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="2500,10000,100000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    base = None
    print(f"{'segments':>9} {'wall s':>8} {'cpu s':>8} {'cpu us/segment':>15} {'vs smallest':>12}")
    for n in (int(c) for c in args.counts.split(",")):
        d = _partition(n)
        wall, cpu = min(_run(d) for _ in range(args.runs))
        per = cpu / n * 1e6
        base = base or per
        print(f"{n:>9} {wall:>8.2f} {cpu:>8.2f} {per:>15.1f} {per / base:>12.2f}")


if __name__ == "__main__":
    main()
