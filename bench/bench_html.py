"""``kdump info --html`` on a whole broker: time and page size on 1,000 partitions.

    python bench/bench_html.py [--partitions 1000] [--segments 3] [--repeat 3]

Makes a log dir under bench/data/ (git-ignored) of N partitions of S segments each
(kdump.encode: 3 batches of 20 records a segment), one partition damaged (a flipped byte),
then times ``kdump info DIR --html FILE`` in a fresh process, page cache warm, and prints the
median wall time and the page's size.

Target (issue 40): 1,000 partitions in < 5 s and < 2 MB.
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
sys.path.insert(0, str(ROOT))

from kdump import encode  # noqa: E402

PER_SEGMENT = 60


def make(n: int, segments: int) -> Path:
    d = HERE / "data" / f"html-{n}x{segments}"
    if d.is_dir() and len(os.listdir(d)) == n:
        return d
    shutil.rmtree(d, ignore_errors=True)
    segs = []
    for s in range(segments):
        base = s * PER_SEGMENT
        segs.append(b"".join(encode.build_v2_batch([(i, 1_700_000_000_000 + base + b * 20 + i, b"k%d" % i, b"v" * 200)
                                                    for i in range(20)], base_offset=base + b * 20)
                             for b in range(3)))
    for i in range(n):
        part = d / f"t{i:04d}-0"
        part.mkdir(parents=True)
        for s, data in enumerate(segs):
            (part / f"{s * PER_SEGMENT:020d}.log").write_bytes(data)
    bad = d / f"t{n // 2:04d}-0" / f"{0:020d}.log"
    b = bytearray(bad.read_bytes())
    b[30] ^= 0xFF
    bad.write_bytes(bytes(b))
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    d = make(a.partitions, a.segments)
    page = HERE / "data" / "timeline.html"
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "kdump", "info", str(d), "--html", str(page)],
                           capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        times.append(time.perf_counter() - t)
        assert r.returncode == 1, r.stderr.decode()
    print(f"{a.partitions} partitions x {a.segments} segments, load {os.getloadavg()[0]:.1f}: "
          f"median {statistics.median(times):.2f} s, page {page.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
