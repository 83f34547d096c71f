"""A whole broker's log dir: thousands of small partitions, kdump at -j 1 and -j N against cat.

    .venv/bin/python bench/bench_logdir.py [--partitions 5000] [--repeat 3] [--jobs N] [--only CMD ...]
    .venv/bin/python bench/bench_logdir.py --layout few-mb [--partitions 300] ...
    .venv/bin/python bench/bench_logdir.py --checkpoints ...   # with the checkpoints a broker writes
    .venv/bin/python bench/bench_logdir.py --only verify --jobs 2 --against /tmp/old   # a before/after

``--against CHECKOUT`` times that checkout's kdump too (``git worktree add /tmp/old REV``, its C
accelerator built in place: ``python setup.py build_ext --inplace`` there), in the same rounds,
each run right after its own ``cat``.

Run it with the Python kdump is installed in (the README's ``pip install -e .``): it times the
``kdump`` console script beside that Python, as an operator runs it (``python -m kdump`` when
there is none, or when it runs another checkout's code).

Generates (once, cached under bench/data/, git-ignored) a log dir of PARTITIONS partitions
``topic<k>-<p>``, each one lz4 segment (v2, 50-record batches, ~29 KB) with the .index and
.timeindex a broker leaves on a rolled segment (kdump.format.index_encode), ~146 MB in 15,000
files for 5,000 partitions; a few dozen distinct segments are written round-robin so
generation takes seconds. A second dir holds one partition whose single segment is the
same batches back to back (for dump's single-segment record rate). ``--layout few-mb``
makes instead PARTITIONS (default 300) partitions of a few MB each, laid out as the pinterest
fixture is: four 1 MiB segments of one-record uncompressed batches (~140 bytes each, ~7,500
per segment), 1.2 GB for 300 partitions: where the cost is per batch, not per byte.

Then, page cache warm, REPEAT rounds; each round runs every command (``verify -q``,
``info``, ``recover`` (plan), ``index --verify``, ``timeindex --verify``, ``dump --records
--json``, ``export --format ndjson`` with the local engine) at ``-j 1`` and ``-j N`` (N = all
cores), each right after a ``cat`` of every file, so that kdump and cat are measured under
the same load, interleaved (dump's and export's rounds after the others', with a sync after
every run). It prints each one's median wall time with its spread (min-max
over the rounds), its CPU seconds, and its ratio to the cat run just before it (median),
then the ratios issue 18 asks for: verify >= 0.5x cat and >= 1.7x its own -j 1; info and
recover <= 2x verify; dump's records/s on the whole dir against the single segment.

Once a round ``verify -j N`` also runs with its phases timed: the parent's CPU while no
worker runs (start-up, the log dir's own listing), its CPU while workers run (its own share
of the partitions, receiving and printing the workers' reports) and the workers' CPU. From those, the wall
time the run would take on N idle cores (alone + (beside + workers) / N), which a shared
machine cannot show directly, against cat's CPU time (what cat takes on an idle machine).

kdump runs without PYTHONUNBUFFERED (set in some sandboxes: it makes every printed line a
write system call), with its bytecode compiled beforehand (PYTHONDONTWRITEBYTECODE would
otherwise make an editable install compile kdump on every run).
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from kdump import encode as build  # noqa: E402
from kdump.check.broker_rule import build_indexes  # noqa: E402
from kdump.format.codecs import LZ4  # noqa: E402
from kdump.format.index import encode_index  # noqa: E402
from kdump.format.timeindex import encode_timeindex  # noqa: E402

T0 = 1_700_000_000_000


def _kdump_command() -> list[str]:
    """The ``kdump`` an operator runs: the console script installed beside this Python (as the
    README's ``pip install -e .`` makes it) when it runs this checkout's code; else ``-m``."""
    script = Path(sys.executable).with_name("kdump")
    if script.exists():
        where = subprocess.run([sys.executable, "-c", "import kdump; print(kdump.__file__)"], cwd="/",
                               capture_output=True, text=True, check=False).stdout.strip()
        if where and Path(where).resolve() == ROOT / "kdump" / "__init__.py":
            return [str(script)]
    return [sys.executable, "-m", "kdump"]


KDUMP = _kdump_command()
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


def _write_partition(pdir: Path, data: bytes, base: int = 0) -> None:
    pdir.mkdir(parents=True, exist_ok=True)
    entries, times, _ = build_indexes(data, base)
    stem = pdir / f"{base:020d}"
    stem.with_suffix(".log").write_bytes(data)
    stem.with_suffix(".index").write_bytes(encode_index(entries, base))
    stem.with_suffix(".timeindex").write_bytes(encode_timeindex(times, base))


MB_SEGMENTS, MB_SEGMENT_BYTES, MB_VALUE, MB_TEMPLATES = 4, 1 << 20, 64, 4


def _mb_partition(seed: int) -> list[tuple[int, bytes]]:
    """(base offset, bytes) of each segment: one-record batches up to ~1 MiB a segment."""
    rnd = random.Random(seed)
    segments, offset = [], 0
    for _ in range(MB_SEGMENTS):
        base, out, size = offset, [], 0
        while size < MB_SEGMENT_BYTES:
            b = build.build_v2_batch([(0, T0 + offset * 10, b"key-%d" % offset, _value(rnd, MB_VALUE))],
                                     base_offset=offset, partition_leader_epoch=0)
            out.append(b)
            size += len(b)
            offset += 1
        segments.append((base, b"".join(out)))
    return segments


def generate_mb(root: Path, partitions: int) -> Path:
    """PARTITIONS partitions of MB_SEGMENTS ~1 MiB segments each, made once."""
    logdir = root / f"logdir-{partitions}x{MB_SEGMENTS}mb"
    done = logdir / ".complete"
    if not done.exists():
        shutil.rmtree(logdir, ignore_errors=True)
        templates = [_mb_partition(s) for s in range(MB_TEMPLATES)]
        for n in range(partitions):
            for base, data in templates[n % MB_TEMPLATES]:
                _write_partition(logdir / f"topic{n % TOPICS:02d}-{n // TOPICS}", data, base)
        done.touch()
    return logdir


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


# The log-dir checkpoints a broker writes, each listing every partition (the bench's first
# figures had none, so ``--checkpoints`` is a separate log dir): a per-partition read of them
# is quadratic, and only a log dir that has them shows it.
BROKER_CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                      "replication-offset-checkpoint")


def with_checkpoints(logdir: Path) -> Path:
    """A copy of ``logdir`` (hard links) with the broker's checkpoints, made once."""
    out = logdir.with_name(logdir.name + "-checkpoints")
    done = out / ".complete"
    if not done.exists():
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(logdir, out, copy_function=os.link, ignore=shutil.ignore_patterns(".complete"))
        parts = sorted(d.name for d in out.iterdir() if d.is_dir())
        for name in BROKER_CHECKPOINTS:
            lines = [f"{p.rsplit('-', 1)[0]} {p.rsplit('-', 1)[1]} {0 if 'start' in name else BATCHES * PER_BATCH}"
                     for p in parts]
            (out / name).write_text("0\n%d\n%s\n" % (len(lines), "\n".join(lines)))
        done.touch()
    return out


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def tree_env(tree: Path | None) -> dict[str, str]:
    """The environment kdump runs in; with ``tree``, that checkout's kdump is imported first."""
    return ENV if tree is None else {**ENV, "PYTHONPATH": str(tree)}


def tree_cwd(env: dict[str, str] | None) -> str | None:
    """Where another tree's kdump runs: not in this checkout, since ``python -m``/``-c`` put the
    working directory before PYTHONPATH (it would import this checkout's kdump instead)."""
    return None if env is None or env is ENV else "/"


def timed(args: list[str] | str, shell: bool = False, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the run and its children) of one run."""
    import resource

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rc = subprocess.run(args, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                        env=env or ENV, cwd=tree_cwd(env))
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc.returncode not in (0, 1):
        raise SystemExit(f"failed ({rc.returncode}): {args}\n{rc.stderr.decode()[-2000:]}")
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):6.2f}s ({min(xs):.2f}-{max(xs):.2f})"


# ``verify -j N`` with its phases timed, as a child process: the parent's CPU while no
# workers run (start-up; between the listing workers and the checking workers), while
# workers run, and the workers' CPU.
PHASES = """
import os, sys
import kdump.jobs.fanout as P
fan_out, marks = P.fan_out, []
def cpu():
    t = os.times()
    return t.user + t.system
def timed_fan_out(fn, units, jobs, **kw):
    marks.append(cpu())
    yield from fan_out(fn, units, jobs, **kw)
    marks.append(cpu())
P.fan_out = timed_fan_out
from kdump.cli import main
sys.argv = ["kdump", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
marks.append(cpu())
alone = marks[0] + sum(marks[i + 1] - marks[i] for i in range(1, len(marks) - 1, 2))
t = os.times()
print(alone, marks[-1] - alone, t.children_user + t.children_system, file=sys.stderr)
"""


def phases(logdir: str, jobs: int, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(parent CPU while no worker runs, parent CPU while they run, workers' CPU) of verify -j N."""
    rc = subprocess.run([sys.executable, "-c", PHASES, "verify", "-q", logdir, "-j", str(jobs)], env=env or ENV,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, text=True, cwd=tree_cwd(env))
    alone, beside, workers = map(float, rc.stderr.split()[-3:])
    return alone, beside, workers


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
    ap.add_argument("--layout", choices=["many-small", "few-mb"], default="many-small")
    ap.add_argument("--partitions", type=int, help="default: 5000 (many-small), 300 (few-mb)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="the -j N to compare with -j 1")
    ap.add_argument("--only", nargs="*", choices=list(COMMANDS), metavar="CMD")
    ap.add_argument("--checkpoints", action="store_true",
                    help="the log dir with the three checkpoints a broker writes, each listing every partition")
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="also time another checkout's kdump (its C accelerator built in place), in the same "
                         "rounds, each run right after its own cat: e.g. a `git worktree add` of an older commit")
    args = ap.parse_args()
    args.data = args.data.resolve()     # (another tree runs from /: tree_cwd)
    compileall.compile_dir(str(ROOT / "kdump"), quiet=1)
    t = time.perf_counter()
    if args.partitions is None:
        args.partitions = 5000 if args.layout == "many-small" else 300
    if args.layout == "many-small":
        logdir, single_dir = generate(args.data, args.partitions)
    else:
        logdir, single_dir = generate_mb(args.data, args.partitions), None
    if args.checkpoints:
        if args.layout != "many-small":
            ap.error("--checkpoints writes the log ends of the many-small layout's partitions")
        logdir = with_checkpoints(logdir)
    files = files_of(logdir)
    size = sum(os.path.getsize(f) for f in files)
    print(f"kdump run as: {' '.join(KDUMP)}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"{args.partitions} partitions, {len(files)} files, {size / 1e6:.0f} MB "
          f"(ready in {time.perf_counter() - t:.1f}s)")
    listing = Path(tempfile.mkstemp(prefix="kdump-bench-files-")[1])
    listing.write_text("\0".join(files))
    # cat's own start-up is paid once per xargs batch, as kdump's once per run.
    cat = f"xargs -0 cat < '{listing}' > /dev/null"
    out = tempfile.mkdtemp(prefix="kdump-bench-export-")
    n = args.jobs
    runs = {(name, jobs): [*KDUMP, *COMMANDS[name](str(logdir), out), "-j", str(jobs)]
            for name in args.only or COMMANDS for jobs in (1, n)}
    envs = {key: ENV for key in runs}
    if args.against is not None:
        label = f"{args.against.name}:"
        for name, jobs in list(runs):
            runs[label + name, jobs] = [sys.executable, "-m", "kdump", *runs[name, jobs][len(KDUMP):]]
            envs[label + name, jobs] = tree_env(args.against)
    wall: dict = {k: [] for k in ["cat", *runs]}
    cat_cpu: list[float] = []
    cpu: dict = {k: [] for k in runs}
    vs_cat: dict = {k: [] for k in runs}
    split: list[tuple[float, float, float]] = []
    split_against: list[tuple[float, float, float]] = []
    loads = []
    try:
        # dump and export put out hundreds of MB a run (memory taken and given back, files
        # written back) and take most of a round's time: their rounds come after the others'.
        heavy = ("dump", "export")
        light = [k for k in runs if k[0].split(":")[-1] not in heavy]
        for group in (light, [k for k in runs if k not in light]):
            for _ in range(args.repeat if group else 0):
                loads.append(os.getloadavg()[0])
                for key in group:
                    t_cat, c = timed(cat, shell=True)       # right before: the same load
                    wall["cat"].append(t_cat)
                    cat_cpu.append(c)
                    w, c = timed(runs[key], env=envs[key])
                    os.sync()       # what it wrote goes to disk now, not in the next command's time
                    wall[key].append(w)
                    cpu[key].append(c)
                    vs_cat[key].append(t_cat / w)
                if ("verify", n) in group and n > 1:
                    split.append(phases(str(logdir), n))
                    if args.against is not None:
                        split_against.append(phases(str(logdir), n, tree_env(args.against)))
        if ("dump", 1) in runs and single_dir is not None:
            single = [timed([*KDUMP, "dump", "--records", "--json", str(single_dir)])[0] for _ in range(args.repeat)]
    finally:
        shutil.rmtree(out, ignore_errors=True)
        listing.unlink()
    med = statistics.median
    print(f"load average during the rounds: {min(loads):.1f}-{max(loads):.1f}; median (min-max) of {args.repeat} "
          f"interleaved rounds\n")
    print(f"layout {args.layout}")
    print(f"{'cat of every file':<34} {spread(wall['cat'])}  {size / med(wall['cat']) / 1e6:6.0f} MB/s  "
          f"(cpu {med(cat_cpu):.2f}s)")
    for (name, jobs), ws in ((k, wall[k]) for k in runs):
        print(f"kdump {name:<21} -j {jobs:<3} {spread(ws)}  {size / med(ws) / 1e6:6.0f} MB/s  "
              f"{med(vs_cat[name, jobs]):5.2f}x cat  (cpu {med(cpu[name, jobs]):.2f}s)")
    print(f"\ncores this run could get (two busy processes against one, best of 3): {cores_available(3):.2f}, "
          f"load {os.getloadavg()[0]:.1f}")
    if ("verify", n) in runs:
        v1, vn = med(wall["verify", 1]), med(wall["verify", n])
        ratio = med([a / b for a, b in zip(wall["verify", 1], wall["verify", n])])
        print(f"verify -j {n}: {med(vs_cat['verify', n]):.2f}x cat's throughput (target >= 0.5x), {ratio:.2f}x its "
              f"own -j 1 (target >= 1.7x); -j 1: {med(vs_cat['verify', 1]):.2f}x cat")
        if split:
            alone, beside, workers = (med(x) for x in zip(*split))
            ideal = alone + (beside + workers) / n
            print(f"verify -j {n} phases (CPU s, median): parent with no worker running {alone:.2f}, parent while "
                  f"the workers run (its own share of the partitions included) {beside:.2f}, workers {workers:.2f}; on {n} "  # noqa: E501
                  f"idle cores: {ideal:.2f}s, "
                  f"{med(cat_cpu) / ideal:.2f}x cat's CPU time, {med(cpu['verify', 1]) / ideal:.2f}x -j 1's CPU time")
        if split_against:
            alone, beside, workers = (med(x) for x in zip(*split_against))
            ideal = alone + (beside + workers) / n
            print(f"{args.against.name}'s verify -j {n} phases (CPU s, median): alone {alone:.2f}, beside the workers "
                  f"{beside:.2f}, workers {workers:.2f}; on {n} idle cores: {ideal:.2f}s, {med(cat_cpu) / ideal:.2f}x "
                  f"cat's CPU time")
        for name, target in (("info", 1), ("recover", 2)):
            if (name, n) in runs:
                print(f"{name} -j {n}: {med(wall[name, n]) / vn:.2f}x verify's time (target <= {target}x); -j 1: "
                      f"{med(wall[name, 1]) / v1:.2f}x (cpu {med(cpu[name, 1]) / med(cpu['verify', 1]):.2f}x)")
    if ("dump", 1) in runs and single_dir is not None:
        records = args.partitions * BATCHES * PER_BATCH
        single_records = min(args.partitions, 500) * BATCHES * PER_BATCH
        print(f"dump --records --json: one segment {single_records / med(single):,.0f} rec/s; whole dir -j 1 "
              f"{records / med(wall['dump', 1]):,.0f} rec/s, -j {n} {records / med(wall['dump', n]):,.0f} rec/s")

if __name__ == "__main__":
    main()
