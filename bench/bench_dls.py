"""kdump against Kafka's own DumpLogSegments (kafka-dump-log.sh), same files, same run.

    python bench/bench_dls.py [--data bench/data] [--quick] [--repeat N] [--only SET ...]

Segments come from bench_decode.py's generator (cached under bench/data/); their .index and
.timeindex are written by kdump's rebuild (as LogSegment.recover builds them, one entry per
4 KiB). Kafka 4.3.1's jars come from tests/kafka (fetched with Maven when missing).
Each command runs as its own process, output to /dev/null, page cache warm; the figure is
the best wall time of N runs and the peak RSS of that process (wait4's ru_maxrss):

- dump: ``kafka-dump-log.sh --deep-iteration --print-data-log --files SEG.log`` against
  ``kdump dump --records --data --format text SEG.log`` (the same lines);
- index: ``kafka-dump-log.sh --verify-index-only --files SEG.index`` against
  ``kdump index --verify SEG.index`` (and ``kdump dump --verify-index-only``: Kafka's check);
- time index: the same with ``.timeindex`` and ``kdump timeindex --verify``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "kafka"))

import bench_decode  # noqa: E402
import kafka_jars  # noqa: E402

from kdump.repair.indexes import rebuild_indexes  # noqa: E402

DLS = "org.apache.kafka.tools.DumpLogSegments"
KDUMP = [sys.executable, "-m", "kdump"]
SETS = ["v2-none-100rec", "v2-lz4-50rec", "v2-zstd-50rec", "v1-gzip-50rec", "v2-none-1rec"]
# DumpLogSegments' time-index check lists every batch from each entry to the end of the
# segment: quadratic in batches, minutes on 1-record batches. Those sets skip it.
NO_TIMEINDEX = {"v2-none-1rec"}


def measure(args: list[str], repeat: int) -> tuple[float, int]:
    """Best wall time (s) over ``repeat`` runs and the peak RSS (bytes) of that run."""
    best = (float("inf"), 0)
    for _ in range(repeat):
        with open(os.devnull, "wb") as devnull:
            t = time.perf_counter()
            proc = subprocess.Popen(args, stdout=devnull, stderr=subprocess.PIPE)
            err = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{err.decode()[-2000:]}")
        if wall < best[0]:
            best = (wall, usage.ru_maxrss * 1024)
    return best


def dls(*args: str) -> list[str]:
    return ["java", "-cp", kafka_jars.classpath(), DLS, *args]


def row(name: str, what: str, kafka: tuple[float, int], ours: tuple[float, int], size: int) -> None:
    (tk, mk), (to, mo) = kafka, ours
    print(f"| {name} | {what} | {tk:.2f} s, {mk / 2**20:.0f} MiB | {to:.2f} s, {mo / 2**20:.0f} MiB | "
          f"{tk / to:.1f}x | {mk / mo:.1f}x |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--quick", action="store_true", help="segments 1/16 of the full size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=SETS, metavar="SET")
    args = ap.parse_args()
    print(f"Kafka {kafka_jars.kafka_version()} DumpLogSegments vs kdump; best of {args.repeat}; "
          f"wall time and peak RSS; ratio = Kafka / kdump (above 1: kdump faster / smaller)\n")
    print("| set | work | kafka-dump-log.sh | kdump | time ratio | RSS ratio |")
    print("|---|---|---|---|---|---|")
    for name in args.only or SETS:
        seg = bench_decode.generate(args.data, name, args.quick)
        index, timeindex = seg.with_suffix(".index"), seg.with_suffix(".timeindex")
        if not index.exists() or not timeindex.exists():
            rebuild_indexes(str(seg), backup=False)
        size = seg.stat().st_size
        label = f"{name} ({size / 1e6:.0f} MB)"
        row(label, "dump records + data (text)",
            measure(dls("--deep-iteration", "--print-data-log", "--files", str(seg)), args.repeat),
            measure([*KDUMP, "dump", "--records", "--data", "--format", "text", str(seg)], args.repeat), size)
        kafka_index = measure(dls("--verify-index-only", "--files", str(index)), args.repeat)
        row(label, "verify .index: `index --verify`", kafka_index,
            measure([*KDUMP, "index", "--verify", str(index)], args.repeat), size)
        row(label, "verify .index: `dump --verify-index-only`", kafka_index,
            measure([*KDUMP, "dump", "--verify-index-only", "--files", str(index)], args.repeat), size)
        if name in NO_TIMEINDEX:
            continue
        kafka_time = measure(dls("--verify-index-only", "--files", str(timeindex)), args.repeat)
        row(label, "verify .timeindex: `timeindex --verify`", kafka_time,
            measure([*KDUMP, "timeindex", "--verify", str(timeindex)], args.repeat), size)
        row(label, "verify .timeindex: `dump --verify-index-only`", kafka_time,
            measure([*KDUMP, "dump", "--verify-index-only", "--files", str(timeindex)], args.repeat), size)


if __name__ == "__main__":
    main()
