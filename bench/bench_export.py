"""Export throughput: the local engine (one Python process, pyarrow) against Spark local[2].

    python bench/bench_export.py [--size-gib 1.05] [--partitions 4] [--segments 2] [--keep]

Generates a log dir under bench/data/export/ (git-ignored; reused when it already has the
requested size) of v2 batches with offset indexes, then times

  * ``kdump export --engine local`` (in this process, through ``export_local``), and
  * ``kdump export --engine spark --master local[2]`` (through ``kdump.spark.export``),

both writing Parquet, and prints rows/s for each and the ratios. The local engine is timed
twice: as shipped (Parquet encoded by a writer thread while the main thread decodes) and
inline (one core). Spark runs with both of its
writers: ``arrow`` (each task writes its files with pyarrow, the default) and ``spark``
(Spark's DataFrame writer). Jobs are timed with the session already up; the session start
is printed apart (and a rate counting it).

How the data is made: about one segment's worth of distinct batches is encoded once with
``kdump.encode.build_v2_batch`` (mixed sizes, ~10% records with headers, 70% of
batches uncompressed, the rest lz4 or zstd). Every segment then reuses those batches with
their base offset rewritten: the base offset is outside the CRC-32C, so each copy stays a
valid batch and the generator runs at disk speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kdump.encode import build_v2_batch  # noqa: E402
from kdump.format.index import encode_index  # noqa: E402

DATA = os.path.join(HERE, "data", "export")
T0 = 1_700_000_000_000
INDEX_INTERVAL = 4096
CODECS = [0] * 7 + [3, 4, 4]          # none 70%, lz4 10%, zstd 20%


def _template(target_bytes: int, seed: int = 7) -> tuple[list[bytes], list[int]]:
    """Distinct batches (base offset 0) adding up to ~target_bytes, and their record counts."""
    rnd = random.Random(seed)
    words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789 ,.:{}\"") for _ in range(rnd.randint(3, 12)))
             for _ in range(2000)]
    batches, counts, total, ts = [], [], 0, T0
    while total < target_bytes:
        n = rnd.choice((10, 50, 100, 100, 200, 400))
        records = []
        for i in range(n):
            value = b" ".join(rnd.choices(words, k=rnd.randint(8, 60)))
            headers = [("trace-id", rnd.randbytes(16))] if rnd.random() < 0.1 else []
            records.append((i, ts + i, b"user-%06d" % rnd.randrange(1_000_000), value, headers))
        data = build_v2_batch(records, codec=rnd.choice(CODECS), producer_id=1000 + len(batches) % 7,
                              producer_epoch=0, base_sequence=0, partition_leader_epoch=3)
        batches.append(data)
        counts.append(n)
        total += len(data)
        ts += n
    return batches, counts


def generate(root: str, size_gib: float, partitions: int, segments: int) -> dict:
    """Write the log dir (idempotent: a matching manifest means it is already there)."""
    manifest_path = os.path.join(root, "manifest.json")
    want = {"size_gib": size_gib, "partitions": partitions, "segments": segments, "version": 1}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
        if {k: manifest.get(k) for k in want} == want:
            return manifest
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    per_segment = int(size_gib * (1 << 30)) // (partitions * segments)
    t = time.monotonic()
    batches, counts = _template(per_segment)
    print(f"encoded {len(batches)} distinct batches ({sum(counts)} records) in {time.monotonic() - t:.1f}s",
          file=sys.stderr)
    total_records = total_bytes = 0
    for p in range(partitions):
        directory = os.path.join(root, f"bench-{p}")
        os.makedirs(directory)
        offset = 0
        for _ in range(segments):
            base = offset
            entries, position, last_entry_at = [], 0, 0
            with open(os.path.join(directory, f"{base:020d}.log"), "wb") as log:
                for data, n in zip(batches, counts):
                    if position - last_entry_at > INDEX_INTERVAL:       # the broker's interval rule
                        entries.append((offset + n - 1, position))
                        last_entry_at = position
                    log.write(struct.pack(">q", offset) + data[8:])
                    position += len(data)
                    offset += n
            with open(os.path.join(directory, f"{base:020d}.index"), "wb") as idx:
                idx.write(encode_index(entries, base))
            total_records += offset - base
            total_bytes += position
    manifest = {**want, "records": total_records, "log_bytes": total_bytes}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    return manifest


def bench_local(root: str, out: str, threads: bool) -> tuple[float, int]:
    from kdump.export.local import export_local

    t = time.monotonic()
    result = export_local([root], out, overwrite=True, threads=threads)
    return time.monotonic() - t, result.rows


def bench_spark(root: str, out: str, master: str, conf: dict, writers: list[str]) -> tuple[float, dict]:
    from kdump.spark.export import export_spark
    from kdump.spark.session import get_session

    t = time.monotonic()
    spark = get_session(master, conf)
    startup = time.monotonic() - t
    jobs = {}
    for writer in writers:
        t = time.monotonic()
        result = export_spark(spark, [root], out, overwrite=True, writer=writer)
        jobs[writer] = (time.monotonic() - t, result.rows)
    spark.stop()
    return startup, jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gib", type=float, default=1.05)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--segments", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--conf", action="append", default=[], help="extra Spark conf k=v")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--writers", default="arrow,spark",
                    help="Spark writers to time, in order (arrow: tasks write with pyarrow; spark: DataFrame writer)")
    args = ap.parse_args()

    manifest = generate(DATA, args.size_gib, args.partitions, args.segments)
    records, size = manifest["records"], manifest["log_bytes"]
    print(f"log dir: {DATA}: {size / (1 << 30):.2f} GiB, {records} records, "
          f"{args.partitions} partitions x {args.segments} segments")
    work = tempfile.mkdtemp(prefix="kdump-bench-export-")
    results = {"log_bytes": size, "records": records}
    try:
        if not args.skip_local:
            # The default local engine encodes Parquet in a second thread (~1.6 cores busy);
            # "inline" keeps everything on one core: the single-process, single-core rate.
            for key, threads in (("local", True), ("local_inline", False)):
                secs, rows = bench_local(DATA, os.path.join(work, key), threads)
                assert rows == records, (rows, records)
                results[key] = {"seconds": round(secs, 2), "rows_per_s": round(rows / secs)}
                print(f"{key:<23}: {secs:7.1f} s  {rows / secs:10,.0f} rows/s")
        if not args.skip_spark:
            conf = dict(c.split("=", 1) for c in args.conf)
            startup, jobs = bench_spark(DATA, os.path.join(work, "spark"), args.master, conf,
                                        args.writers.split(","))
            results["spark"] = {"master": args.master, "startup_s": round(startup, 2)}
            print(f"spark session start ({args.master}): {startup:.1f} s")
            for writer, (job, rows) in jobs.items():
                assert rows == records, (rows, records)
                results["spark"][writer] = {"job_s": round(job, 2), "rows_per_s": round(rows / job),
                                            "rows_per_s_with_start": round(rows / (job + startup))}
                line = (f"spark {args.master} writer={writer}: {job:7.1f} s  {rows / job:10,.0f} rows/s "
                        f"({rows / (job + startup):,.0f} rows/s counting the session start)")
                for key in ("local", "local_inline"):
                    if key in results:
                        ratio = rows / job / results[key]["rows_per_s"]
                        results["spark"][writer][f"ratio_vs_{key}"] = round(ratio, 2)
                        line += f"; {ratio:.2f}x {key}"
                print(line)
        print(json.dumps(results))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
