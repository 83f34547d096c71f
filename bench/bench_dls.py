"""kdump against Kafka's own DumpLogSegments (kafka-dump-log.sh), same files, same run.

    python bench/bench_dls.py [--data bench/data] [--quick] [--repeat N] [--only SET ...] [--dump-only]

Segments come from bench_decode.py's generator (cached under bench/data/, git-ignored; the
1 GiB set is Kafka's default segment.bytes); their .index and .timeindex are written by
kdump's rebuild (as LogSegment.recover builds them, one entry per 4 KiB). Kafka 4.3.1's jars
come from tests/kafka (fetched with Maven when missing). Each command runs as its own
process (start-up included), output to /dev/null, page cache warm. The machine is shared:
the commands of a row run interleaved, round after round, and the figure is the median
wall time of N rounds, with the peak RSS of that run (wait4's ru_maxrss):

- dump: ``kafka-dump-log.sh --deep-iteration --print-data-log --files SEG.log`` against
  ``kdump dump`` with the same command line, at ``-j 1`` and ``-j 2`` (the same lines);
- index: ``kafka-dump-log.sh --verify-index-only --files SEG.index`` against
  ``kdump index --verify SEG.index`` (and ``kdump dump --verify-index-only``: Kafka's check);
- time index: the same with ``.timeindex`` and ``kdump timeindex --verify``.
"""

from __future__ import annotations

import argparse
import compileall
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
SETS = ["v2-none-100rec", "v2-lz4-50rec", "v2-zstd-50rec", "v1-gzip-50rec", "v2-none-1rec", "v2-none-100rec-1gib"]
DUMP = ("--deep-iteration", "--print-data-log")
# DumpLogSegments' time-index check lists every batch from each entry to the end of the
# segment: quadratic in batches, minutes on 1-record batches. Those sets skip it.
NO_TIMEINDEX = {"v2-none-1rec", "v2-none-100rec-1gib"}


def run_once(args: list[str]) -> tuple[float, int]:
    """Wall time (s) and peak RSS (bytes) of one run."""
    with open(os.devnull, "wb") as devnull:
        t = time.perf_counter()
        proc = subprocess.Popen(args, stdout=devnull, stderr=subprocess.PIPE)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"failed ({code}): {' '.join(args)}\n{err.decode()[-2000:]}")
    return wall, usage.ru_maxrss * 1024


def interleaved(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, int]]:
    """Each command once per round, ``repeat`` rounds, each round starting one command further
    on (what runs first in a round is not always the same): its median wall time and that run's RSS."""
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    names = list(commands)
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            runs[name].append(run_once(commands[name]))
    return {name: sorted(r)[len(r) // 2] for name, r in runs.items()}


def dls(*args: str) -> list[str]:
    return ["java", "-cp", kafka_jars.classpath(), DLS, *args]


def row(name: str, what: str, kafka: tuple[float, int], ours: tuple[float, int], load: str) -> None:
    (tk, mk), (to, mo) = kafka, ours
    print(f"| {name} | {what} | {tk:.2f} s, {mk / 2**20:.0f} MiB | {to:.2f} s, {mo / 2**20:.0f} MiB | "
          f"{tk / to:.1f}x | {mk / mo:.1f}x | {load} |", flush=True)


def timed(commands: dict[str, list[str]], repeat: int) -> tuple[dict[str, tuple[float, int]], str]:
    """``interleaved``, and the one-minute load average before and after (other work on the machine)."""
    before = os.getloadavg()[0]
    got = interleaved(commands, repeat)
    return got, f"{before:.1f}-{os.getloadavg()[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--quick", action="store_true", help="segments 1/16 of the full size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=SETS, metavar="SET")
    ap.add_argument("--dump-only", action="store_true", help="only the record dump, not the index checks")
    args = ap.parse_args()
    # kdump as pip installs it: byte-code compiled (PYTHONDONTWRITEBYTECODE=1 would otherwise
    # have every run compile its modules again).
    compileall.compile_dir(str(ROOT / "kdump"), quiet=1)
    print(f"Kafka {kafka_jars.kafka_version()} DumpLogSegments vs kdump; median of {args.repeat} interleaved "
          f"rounds; wall time and peak RSS; ratio = Kafka / kdump (above 1: kdump faster / smaller)\n")
    print("| set | work | kafka-dump-log.sh | kdump | time ratio | RSS ratio | load average |")
    print("|---|---|---|---|---|---|---|")
    for name in args.only or SETS:
        seg = bench_decode.generate(args.data, name, args.quick)
        index, timeindex = seg.with_suffix(".index"), seg.with_suffix(".timeindex")
        if not args.dump_only and (not index.exists() or not timeindex.exists()):
            rebuild_indexes(str(seg), backup=False)
        size = seg.stat().st_size
        label = f"{name} ({size / 1e6:.0f} MB)"
        got, load = timed({"kafka": dls(*DUMP, "--files", str(seg)),
                           "j1": [*KDUMP, "dump", *DUMP, "--files", str(seg), "-j", "1"],
                           "j2": [*KDUMP, "dump", *DUMP, "--files", str(seg), "-j", "2"]}, args.repeat)
        row(label, "`--deep-iteration --print-data-log`, kdump `-j 1`", got["kafka"], got["j1"], load)
        row(label, "`--deep-iteration --print-data-log`, kdump `-j 2`", got["kafka"], got["j2"], load)
        if args.dump_only:
            continue
        got, load = timed({"kafka": dls("--verify-index-only", "--files", str(index)),
                           "index": [*KDUMP, "index", "--verify", str(index)],
                           "dump": [*KDUMP, "dump", "--verify-index-only", "--files", str(index)]}, args.repeat)
        row(label, "verify .index: `index --verify`", got["kafka"], got["index"], load)
        row(label, "verify .index: `dump --verify-index-only`", got["kafka"], got["dump"], load)
        if name in NO_TIMEINDEX:
            continue
        got, load = timed({"kafka": dls("--verify-index-only", "--files", str(timeindex)),
                           "index": [*KDUMP, "timeindex", "--verify", str(timeindex)],
                           "dump": [*KDUMP, "dump", "--verify-index-only", "--files", str(timeindex)]}, args.repeat)
        row(label, "verify .timeindex: `timeindex --verify`", got["kafka"], got["index"], load)
        row(label, "verify .timeindex: `dump --verify-index-only`", got["kafka"], got["dump"], load)


if __name__ == "__main__":
    main()
