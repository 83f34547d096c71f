"""A tiered partition read whole against the same segments on local disk (#37).

    python bench/bench_tiered.py LOGDIR REMOTE [--repeat 5]

LOGDIR/REMOTE: a tiered broker's log dir and its LocalTieredStorage ``rsm.config.dir`` (the
tests' broker leaves one: ``pytest tests/kafka/test_tiered.py --basetemp DIR``). The same
remote segments are copied into a plain partition dir, and laid out as Aiven's
objects (zstd chunks of 4 MiB) for a third row. ``kdump dump --records --json`` of each, in
interleaved rounds; medians and ratios to the local copy (start-up included).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _run(args: list[str]) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "kdump", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.monotonic() - started


def main() -> None:
    from support.aiven import from_local_tiered

    p = argparse.ArgumentParser()
    p.add_argument("logdir", type=Path)
    p.add_argument("remote", type=Path)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kdump-bench-tiered-"))
    try:
        src = a.remote / "kafka-tiered-storage"
        part_dirs = [d for d in src.iterdir() if d.is_dir()]
        topic = part_dirs[0].name[:-23].rpartition("-")[0]
        local = tmp / "local" / f"{topic}-0"
        local.mkdir(parents=True)
        for f in part_dirs[0].glob("*.log"):
            shutil.copy(f, local / (f.name.split("-")[0] + ".log"))
        for f in (a.logdir / f"{topic}-0").glob("*.log"):
            shutil.copy(f, local / f.name)
        from_local_tiered(src, tmp / "aiven", chunk_size=4 << 20, compression=True)
        part = str(a.logdir / f"{topic}-0")
        cases = {
            "local copy": ["dump", str(local), "--records", "--json"],
            "kafka-local": ["dump", part, "--remote-storage", str(a.remote), "--records", "--json"],
            "aiven (zstd)": ["dump", part, "--remote-storage", str(tmp / "aiven"), "--remote-layout", "aiven",
                             "--records", "--json"],
        }
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(a.repeat):
            for name, args in cases.items():
                times[name].append(_run(args))
        base = statistics.median(times["local copy"])
        print(f"{'case':<14} {'median s':>9} {'x local':>8}")
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"{name:<14} {m:9.3f} {base / m:8.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
