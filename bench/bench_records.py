"""``kdump records --json`` (the flat record stream) against today's NDJSON dump, in one run.

    python bench/bench_records.py [--quick] [--repeat N]

On bench_decode.py's 1 KB-value segment (v2, 100-record batches, >= 256 MiB; cached under
bench/data/), page cache warm, interleaved rounds, the median of N:

- ``kdump records --json`` (base64 keys and values), MB/s of segment;
- ``kdump records --json --isolation read_committed``, the same;
- ``kdump dump --records --data --encoding base64 --json -j 1``, the peer: the batch-nested NDJSON.

Targets (issue 40): the flat stream >= 500 MB/s of segment, at least as fast as the nested
NDJSON; read_committed >= 0.8x the plain stream.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_decode as base  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--quick", action="store_true", help=f"a segment 1/{base.QUICK_DIVISOR} of the full size")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    seg = base.generate(args.data, "v2-none-100rec", args.quick)
    size = seg.stat().st_size
    part = str(seg.parent)
    cmds = {
        "records --json": [*base.KDUMP, "records", part, "--json"],
        "records --json --isolation read_committed": [*base.KDUMP, "records", part, "--json", "--isolation",
                                                      "read_committed"],
        "dump --records --data --json (peer)": [*base.KDUMP, "dump", part, "--records", "--data", "--encoding",
                                                "base64", "--json", "-j", "1"],
    }
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"{size / 1e6:.0f} MB segment; median of {args.repeat}")
    times = base.medians({name: (lambda c=c: base.run_cmd(c)) for name, c in cmds.items()}, args.repeat)
    plain = times["records --json"]
    for name, t in times.items():
        print(f"{name:<45} {t:7.2f} s {size / t / 1e6:8.0f} MB/s  {plain / t:5.2f}x the plain stream")


if __name__ == "__main__":
    main()
