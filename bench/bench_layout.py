"""Two revisions of kdump side by side, in one run: did a refactoring cost speed?

    python bench/bench_layout.py [--before REV] [--after REV] [--repeat 7]

Each revision is exported with ``git archive`` into ``bench/data/trees/<rev>`` and its C
accelerator built in place, so both run from the same kind of tree. Then, interleaved
(before, after, before, after, ...) so that load on the machine falls on both alike:

- start-up: ``kdump --version``;
- ``kdump verify -q`` of the 256 MiB segment of 100-record batches (bench_decode's set);
- NDJSON records/s: ``kdump dump --records --json`` of the 64 MiB segment of 1-record batches.

Prints the median and the best of the repetitions for each. Issue #15 asks for these figures
before and after the restructure (before = 8da6824, the last commit of the flat layout).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_decode import count, generate  # noqa: E402

FLAT_LAYOUT = "8da6824"


def tree(rev: str, data: Path) -> Path:
    """The files of REV with the accelerator built beside them."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    dest = data / "trees" / sha
    if not (dest / ".built").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=dest, check=True,
                       capture_output=True)
        (dest / ".built").write_text(sha)
    return dest


def timed(src: Path, *args: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "kdump", *args], cwd=src, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - t
    if r.returncode not in (0, 1):
        raise SystemExit(f"{src}: kdump {' '.join(args)} failed ({r.returncode}): {r.stderr.decode()}")
    return elapsed


def accelerated(src: Path) -> bool:
    probe = "import kdump._speedups"
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([sys.executable, "-c", probe], cwd=src, env=env, capture_output=True).returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=FLAT_LAYOUT)
    ap.add_argument("--after", default="HEAD")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    args = ap.parse_args()

    big = generate(args.data, "v2-none-100rec", quick=False)
    small = generate(args.data, "v2-none-1rec", quick=False)
    records = count(small)[0]
    trees = {"before": tree(args.before, args.data), "after": tree(args.after, args.data)}
    for name, src in trees.items():
        print(f"{name}: {args.before if name == 'before' else args.after} ({src.name}), "
              f"C accelerator {'on' if accelerated(src) else 'OFF'}")
    runs: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeat):
        for name, src in trees.items():
            runs.setdefault((name, "start-up"), []).append(timed(src, "--version"))
            runs.setdefault((name, "verify"), []).append(timed(src, "verify", "-q", str(big)))
            runs.setdefault((name, "ndjson"), []).append(timed(src, "dump", "--records", "--json", str(small)))
    size = big.stat().st_size
    print(f"\n{'figure':<34}{'before':>16}{'after':>16}{'after/before':>14}")
    for what, unit, f in (("start-up", "ms", lambda t: t * 1000),
                          ("verify", "MB/s", lambda t: size / t / 1e6),
                          ("ndjson", "rec/s", lambda t: records / t)):
        label = {"start-up": "kdump --version (ms)",
                 "verify": f"verify 256 MiB ({unit})",
                 "ndjson": f"dump --records --json ({unit})"}[what]
        med = {n: f(statistics.median(runs[(n, what)])) for n in trees}
        top = {n: f(min(runs[(n, what)])) for n in trees}
        print(f"{label + ', median':<34}{med['before']:>16,.0f}{med['after']:>16,.0f}{med['after'] / med['before']:>14.2f}")  # noqa: E501
        print(f"{'  best':<34}{top['before']:>16,.0f}{top['after']:>16,.0f}{top['after'] / top['before']:>14.2f}")
    print(f"\n{args.repeat} interleaved runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
