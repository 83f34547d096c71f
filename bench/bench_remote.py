"""Remote log dirs (issue #26): kdump reading from S3 against reading the same files locally.

    .venv/bin/python bench/bench_remote.py [--size-mib 256] [--big-gib 1] [--repeat 3] [--spark]

Starts moto's S3 server on 127.0.0.1 (tests/remote/servers.py), uploads a generated log dir
(bench_export's data: 2 partitions x 2 segments, with .index files) and measures, each run of
the installed console script timed whole (start-up included), median of --repeat:

- ``verify -q -j 1`` and ``dump --json -j 1`` (stdout to /dev/null): MB/s from local disk (page
  cache warm) and from S3, and their ratio (target: S3 >= 0.5x local);
- peak RSS of ``verify`` and ``dump --records --json`` of one 1 GiB segment read from S3
  (target: under 150 MB);
- with --spark, ``export --engine spark`` from s3:// to s3:// on a standalone cluster (from
  pyspark's jars) with one 1-core Worker, then two (target: 2 cores >= 1.5x 1 core);
- the raw ranged-read rate of the server (pyarrow, 16 MiB ranges), the ceiling of any reader.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "remote"))

from bench_export import generate  # noqa: E402
from servers import S3Server, SparkCluster  # noqa: E402

DATA = os.path.join(HERE, "data", "remote")
KDUMP = os.path.join(os.path.dirname(sys.executable), "kdump")


TIME = "/usr/bin/time"


def run(args: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, exit status, peak RSS in KiB) of one kdump run. The peak comes from
    /usr/bin/time: a child's own ru_maxrss counts the pages of the parent it was forked from
    (this process holds the uploads' buffers), until it execs."""
    with tempfile.NamedTemporaryFile("r") as report:
        command = [TIME, "-o", report.name, "-f", "%M", KDUMP, *args] if os.path.exists(TIME) else [KDUMP, *args]
        t = time.monotonic()
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - t
        text = report.read().strip().splitlines()
    return wall, done.returncode, int(text[-1]) if text and text[-1].isdigit() else 0


def upload(server: S3Server, src: str, bucket: str, prefix: str) -> str:
    from boto3.s3.transfer import TransferConfig

    s3 = server.client()
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    config = TransferConfig(multipart_chunksize=64 << 20, max_concurrency=2)
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if name == "manifest.json":
                continue
            path = os.path.join(dirpath, name)
            s3.upload_file(path, bucket, f"{prefix}/{os.path.relpath(path, src)}", Config=config)
    return f"s3://{bucket}/{prefix}"


def raw_rate(server: S3Server, bucket: str, key: str) -> float:
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(endpoint_override=server.endpoint, scheme="http", region="us-east-1",
                           access_key="testing", secret_key="testing")
    f = fs.open_input_file(f"{bucket}/{key}")
    t, n = time.monotonic(), 0
    while n < f.size():
        n += len(f.read_at(16 << 20, n))
    return n / (time.monotonic() - t) / 1e6


def listing(server: S3Server, env: dict[str, str], n: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    s3 = server.client()
    t = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: s3.put_object(Bucket="bench", Key=f"many/object-{i:06d}.txt", Body=b""), range(n)))
    print(f"{n} keys written in {time.monotonic() - t:.0f}s")
    proc = subprocess.run([KDUMP, "verify", "s3://bench/many"], env=env, capture_output=True, text=True)
    wall, code, rss = run(["verify", "s3://bench/many"], env)
    print(f"verify of a prefix of {n} keys: {wall:.1f}s, peak RSS {rss / 1024:.0f} MB, exit {code}: "
          f"{proc.stderr.strip()}")


def median(args, env, repeat) -> tuple[float, int]:
    runs = [run(args, env) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), runs[0][1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--big-gib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--listing", type=int, default=0, metavar="N",
                    help="also list a prefix of N keys (none of them a Kafka file): time, RSS, the one line")
    a = ap.parse_args()

    small = os.path.join(DATA, f"logdir-{a.size_mib}m")
    manifest = generate(small, a.size_mib / 1024, 2, 2)
    size = manifest["log_bytes"]
    with tempfile.TemporaryDirectory() as tmp:
        server = S3Server(Path(tmp) / "moto.log").start()
        env = {**os.environ, **server.env()}
        try:
            url = upload(server, small, "bench", "small")
            print(f"log dir: {size / 1e6:.0f} MB of segments, {manifest['records']} records; server: moto "
                  f"{__import__('moto').__version__}; raw ranged reads (pyarrow, 16 MiB): "
                  f"{raw_rate(server, 'bench', 'small/bench-0/' + f'{0:020d}.log'):.0f} MB/s")
            for name, args in (("verify", ["verify", "-q", "-j", "1"]), ("dump --json", ["dump", "--json", "-j", "1"]),
                               ("dump --records --json", ["dump", "--records", "--json", "-j", "1"])):
                local, code_l = median([*args, small], env, a.repeat)
                remote, code_r = median([*args, url], env, a.repeat)
                print(f"{name:22} local {size / local / 1e6:8.1f} MB/s ({local:.2f}s)   S3 {size / remote / 1e6:8.1f} "
                      f"MB/s ({remote:.2f}s)   ratio {local / remote:.2f}x   exit {code_l}/{code_r}")
            if not a.skip_big:
                big = os.path.join(DATA, f"segment-{a.big_gib}g")
                generate(big, a.big_gib, 1, 1)
                big_url = upload(server, big, "bench", "big")
                for name, args in (("verify", ["verify", "-q", "-j", "1"]),
                                   ("dump --records --json", ["dump", "--records", "--json", "-j", "1"])):
                    wall, code, rss = run([*args, big_url + "/bench-0"], env)
                    print(f"{a.big_gib:g} GiB segment from S3, {name}: peak RSS {rss / 1024:.0f} MB, {wall:.1f}s, "
                          f"exit {code}")
            if a.listing:
                listing(server, env, a.listing)
            if a.spark:
                times = {}
                for workers in (1, 2):
                    base = tempfile.mkdtemp(dir=tmp)
                    cluster = SparkCluster(Path(base), server.env(), workers=workers,
                                           cores=1).start()
                    try:
                        wall, code, _ = run(["export", url, "--out", f"s3://bench/out-{workers}", "--engine", "spark",
                                             "--master", cluster.url, "--conf", "spark.executor.memory=768m",
                                             "-q"], cluster.env)
                    finally:
                        cluster.stop()
                    times[workers] = wall
                    print(f"spark export s3:// -> s3://, {workers} worker core(s): {wall:.1f}s "
                          f"({size / wall / 1e6:.1f} MB/s), exit {code}")
                print(f"spark scaling: 2 cores {times[1] / times[2]:.2f}x 1 core")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
