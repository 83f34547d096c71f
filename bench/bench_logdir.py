"""A whole broker's log dir: thousands of small partitions, kdump at -j 1 and -j N against cat.

    python bench/bench_logdir.py [--partitions 5000] [--repeat 3] [--jobs N] [--only CMD ...]

Generates (once, cached under bench/data/, git-ignored) a log dir of PARTITIONS partitions
``topic<k>-<p>``, each one lz4 segment (v2, 50-record batches, ~29 KB) with the .index and
.timeindex a broker leaves on a rolled segment (kdump.format.rebuild), ~146 MB in 15,000
files for 5,000 partitions; a few dozen distinct segments are written round-robin so
generation takes seconds. A second dir holds one partition whose single segment is the
same batches back to back (for dump's single-segment record rate).

Then, page cache warm, the best of REPEAT runs of each command, all in this one run (so
figures are relative to each other on a machine whose load changes between runs):
``cat`` of every file, and ``verify -q``, ``info``, ``recover`` (plan), ``index --verify``,
``timeindex --verify``, ``dump --records --json`` and ``export --format ndjson`` (local
engine), each at ``-j 1`` and ``-j N`` (N = all cores). It prints each time, its ratio to
cat and the ratios issue 18 asks for: verify >= 0.5x cat and >= 1.7x its own -j 1; info
and recover <= 2x verify; dump's records/s on the whole dir against the single segment.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from kdump import testing as build  # noqa: E402
from kdump.format.codecs import LZ4  # noqa: E402
from kdump.format.index import encode_index  # noqa: E402
from kdump.check.broker_rule import build_indexes  # noqa: E402
from kdump.format.timeindex import encode_timeindex  # noqa: E402

T0 = 1_700_000_000_000
KDUMP = [sys.executable, "-m", "kdump"]
TEMPLATES = 32            # distinct segments, written round-robin
BATCHES, PER_BATCH, VALUE = 5, 50, 200
TOPICS = 50


def _value(rnd: random.Random, size: int) -> bytes:
    # Half random, half repetitive, as bench_decode: compresses like JSON-ish payloads.
    half = size // 2
    return rnd.randbytes(half) + (b"abcdefgh" * (size // 8 + 1))[: size - half]


def _segment(seed: int) -> bytes:
    rnd = random.Random(seed)
    out, offset = [], 0
    for _ in range(BATCHES):
        recs = [(i, T0 + offset + i, b"key-%d" % (offset + i), _value(rnd, VALUE)) for i in range(PER_BATCH)]
        out.append(build.build_v2_batch(recs, base_offset=offset, codec=LZ4, partition_leader_epoch=0))
        offset += PER_BATCH
    return b"".join(out)


def _write_partition(pdir: Path, data: bytes) -> None:
    pdir.mkdir(parents=True, exist_ok=True)
    entries, times, _ = build_indexes(data, 0)
    stem = pdir / ("0" * 20)
    stem.with_suffix(".log").write_bytes(data)
    stem.with_suffix(".index").write_bytes(encode_index(entries, 0))
    stem.with_suffix(".timeindex").write_bytes(encode_timeindex(times, 0))


def generate(root: Path, partitions: int) -> tuple[Path, Path]:
    """The many-partition log dir and the one-segment dir, made once."""
    logdir = root / f"logdir-{partitions}p"
    single = root / f"logdir-{partitions}p-single" / "single-0"
    done = logdir / ".complete"
    if not done.exists():
        shutil.rmtree(logdir, ignore_errors=True)
        segments = [_segment(s) for s in range(TEMPLATES)]
        for n in range(partitions):
            _write_partition(logdir / f"topic{n % TOPICS:02d}-{n // TOPICS}", segments[n % TEMPLATES])
        # One partition whose segment is the same batches back to back, renumbered.
        shutil.rmtree(single.parent, ignore_errors=True)
        rnd = random.Random(7)
        chunks, offset = [], 0
        for n in range(min(partitions, 500)):
            for _ in range(BATCHES):
                recs = [(i, T0 + offset + i, b"key-%d" % (offset + i), _value(rnd, VALUE)) for i in range(PER_BATCH)]
                chunks.append(build.build_v2_batch(recs, base_offset=offset, codec=LZ4, partition_leader_epoch=0))
                offset += PER_BATCH
        _write_partition(single, b"".join(chunks))
        done.touch()
    return logdir, single.parent


CPU: dict[str, float] = {}      # CPU seconds (user + system, all processes) of the best run, by command


def best(args: list[str], repeat: int, shell: bool = False) -> float:
    import resource

    times = []
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        rc = subprocess.run(args, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if times[-1] == min(times):
            CPU[str(args)] = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        if rc.returncode not in (0, 1):
            raise SystemExit(f"failed ({rc.returncode}): {args}\n{rc.stderr.decode()[-2000:]}")
    return min(times)


def _spin() -> None:
    x = 0
    for i in range(3_000_000):
        x += i


def cores_available(repeat: int) -> float:
    """How many cores this run gets now: one busy process, then two at once (other users of a
    shared machine take the rest). 2.0 on an idle 2-core machine."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")

    def timed(k: int) -> float:
        t = time.perf_counter()
        ps = [ctx.Process(target=_spin) for _ in range(k)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        return time.perf_counter() - t

    return max(2 * timed(1) / timed(2) for _ in range(repeat))


def files_of(logdir: Path) -> list[str]:
    return sorted(str(p) for p in logdir.rglob("*") if p.is_file() and not p.name.startswith("."))


COMMANDS = {
    "verify": lambda d, o: ["verify", "-q", d],
    "info": lambda d, o: ["info", d],
    "recover": lambda d, o: ["recover", d],
    "index": lambda d, o: ["index", "--verify", d],
    "timeindex": lambda d, o: ["timeindex", "--verify", d],
    "dump": lambda d, o: ["dump", "--records", "--json", d],
    "export": lambda d, o: ["export", d, "--out", o, "--format", "ndjson", "--overwrite", "-q"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="the -j N to compare with -j 1")
    ap.add_argument("--only", nargs="*", choices=list(COMMANDS), metavar="CMD")
    args = ap.parse_args()
    compileall.compile_dir(str(ROOT / "kdump"), quiet=1)
    t = time.perf_counter()
    logdir, single = generate(args.data, args.partitions)
    files = files_of(logdir)
    size = sum(os.path.getsize(f) for f in files)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"{args.partitions} partitions, {len(files)} files, {size / 1e6:.0f} MB "
          f"(ready in {time.perf_counter() - t:.1f}s); best of {args.repeat}")
    listing = Path(tempfile.mkstemp(prefix="kdump-bench-files-")[1])
    listing.write_text("\0".join(files))
    # cat's own start-up is paid once per xargs batch, as kdump's once per run.
    t_cat = best(f"xargs -0 cat < '{listing}' > /dev/null", args.repeat + 2, shell=True)
    print(f"{'cat of every file':<34} {t_cat:7.2f}s  {size / t_cat / 1e6:7.0f} MB/s")
    out = tempfile.mkdtemp(prefix="kdump-bench-export-")
    times: dict[tuple[str, int], float] = {}
    try:
        for name in args.only or COMMANDS:
            for jobs in (1, args.jobs):
                cmd = [*KDUMP, *COMMANDS[name](str(logdir), out), "-j", str(jobs)]
                times[name, jobs] = t_k = best(cmd, args.repeat)
                print(f"kdump {name:<12} -j {jobs:<3}{'':13} {t_k:7.2f}s  {size / t_k / 1e6:7.0f} MB/s  "
                      f"{t_cat / t_k:5.2f}x cat  (cpu {CPU[str(cmd)]:.2f}s)", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        listing.unlink()
    n = args.jobs
    print(f"\ncores this run could get (two busy processes against one, best of 3): {cores_available(3):.2f}, "
          f"load {os.getloadavg()[0]:.1f}")
    if ("verify", n) in times:
        v1, vn = times["verify", 1], times["verify", n]
        print(f"verify -j {n}: {t_cat / vn:.2f}x cat's throughput (target >= 0.5x), {v1 / vn:.2f}x its own -j 1 "
              f"(target >= 1.7x)")
        for name in ("info", "recover"):
            if (name, n) in times:
                print(f"{name} -j {n}: {times[name, n] / vn:.2f}x verify's time (target <= 2x); -j 1: "
                      f"{times[name, 1] / v1:.2f}x")
    if ("dump", 1) in times:
        records = args.partitions * BATCHES * PER_BATCH
        single_records = min(args.partitions, 500) * BATCHES * PER_BATCH
        t_single = best([*KDUMP, "dump", "--records", "--json", str(single)], args.repeat)
        print(f"dump --records --json: one segment {single_records / t_single:,.0f} rec/s; whole dir -j 1 "
              f"{records / times['dump', 1]:,.0f} rec/s, -j {n} {records / times['dump', n]:,.0f} rec/s")


if __name__ == "__main__":
    main()
