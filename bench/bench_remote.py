"""Remote log dirs (issue #26): kdump reading from S3 against reading the same files locally.

    .venv/bin/python bench/bench_remote.py [--server moto|s3proxy] [--size-mib 256] [--big-gib 1]
        [--repeat 3] [--spark] [--listing N [--listing-only]]

Starts an S3 server on 127.0.0.1 (tests/remote/servers.py: moto's, or S3Proxy's, a JVM serving
files, several times faster), uploads a generated log dir
(bench_export's data: 2 partitions x 2 segments, with .index files) and measures, each run of
the installed console script timed whole (start-up included), median of --repeat:

- ``verify -q -j 1`` and ``dump --json -j 1`` (stdout to /dev/null): MB/s from local disk (page
  cache warm) and from S3, and their ratio (target: S3 >= 0.5x local);
- peak RSS of ``verify`` and ``dump --records --json`` of one 1 GiB segment read from S3
  (target: under 150 MB);
- with --spark, ``export --engine spark`` from s3:// to s3:// on a standalone cluster (from
  pyspark's jars) with one 1-core Worker, then two (target: 2 cores >= 1.5x 1 core);
- the raw ranged-read rate of the server (pyarrow alone, 16 MiB ranges, 1, 2 and 4 requests in
  flight, a 67 MB segment), the ceiling of any reader, beside the same file read from local
  disk (page cache) in the same run;
- with --listing N (--listing-only: nothing else), ``verify`` and ``dump`` of a prefix of N
  empty keys that are no Kafka files, under a partition-like name, on a second S3Proxy (jclouds'
  in-memory store): wall time, peak RSS, what they printed and their exit status, beside the
  same listing paged by boto3 alone and by pyarrow alone, and the same commands on a local dir
  of the same N empty files, in the same run (--repeat rounds).

Every figure line starts with the 1-minute load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import resource
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
from servers import S3Proxy, S3Server, SparkCluster  # noqa: E402

DATA = os.path.join(HERE, "data", "remote")
KDUMP = os.path.join(os.path.dirname(sys.executable), "kdump")


TIME = "/usr/bin/time"


# The S3 server's process, whose CPU time a run's figures include (server_cpu).
SERVER_PID: list[int] = []


def server_cpu() -> float:
    """CPU seconds (user + system) the S3 server has used so far."""
    try:
        with open(f"/proc/{SERVER_PID[0]}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (IndexError, OSError):
        return 0.0


def run(args: list[str], env: dict[str, str]) -> tuple[float, int, int, float]:
    """(wall seconds, exit status, peak RSS in KiB, CPU seconds of kdump and of the S3 server)
    of one kdump run. The peak comes from /usr/bin/time: a child's own ru_maxrss counts the
    pages of the parent it was forked from (this process holds the uploads' buffers), until
    it execs. On a machine whose cores are all busy, wall time follows CPU time."""
    with tempfile.NamedTemporaryFile("r") as report:
        command = ([TIME, "-o", report.name, "-f", "%M %U %S", KDUMP, *args] if os.path.exists(TIME)
                   else [KDUMP, *args])
        before = server_cpu()
        t = time.monotonic()
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - t
        text = report.read().strip().splitlines()
    fields = text[-1].split() if text else []
    if len(fields) != 3:
        return wall, done.returncode, 0, 0.0
    return wall, done.returncode, int(fields[0]), float(fields[1]) + float(fields[2]) + server_cpu() - before


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


def load() -> str:
    return f"[load {os.getloadavg()[0]:.1f}]"


def raw_rates(server: S3Server, bucket: str, key: str, local: str, repeat: int) -> str:
    """The server's ranged-read ceiling (pyarrow alone, best of ``repeat``), and the local file's."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(endpoint_override=server.endpoint.partition("://")[2], scheme="http",
                           region="us-east-1", access_key="testing", secret_key="testing")
    f = fs.open_input_file(f"{bucket}/{key}")
    size, step = f.size(), 16 << 20
    rates, cpu = [], []
    for parallel in (1, 2, 4):
        best = 0.0
        for _ in range(repeat):
            used, server = resource.getrusage(resource.RUSAGE_SELF), server_cpu()
            t = time.monotonic()
            with ThreadPoolExecutor(parallel) as pool:
                n = sum(pool.map(lambda s: len(f.read_at(min(step, size - s), s)), range(0, size, step)))
            best = max(best, n / (time.monotonic() - t) / 1e6)
            now = resource.getrusage(resource.RUSAGE_SELF)
            cpu.append((now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime + server_cpu() - server) / n * 1e9)
        rates.append(f"{best:.0f}")
    t = time.monotonic()
    with open(local, "rb") as lf:
        n = sum(len(b) for b in iter(lambda: lf.read(step), b""))
    return (f"raw ranged reads (pyarrow, 16 MiB, 1/2/4 in flight, best of {repeat}): {'/'.join(rates)} MB/s, "
            f"{statistics.median(cpu):.2f} CPU s per GB (client + server); "
            f"the same file from local disk: {n / (time.monotonic() - t) / 1e6:.0f} MB/s")


def _timed_kdump(args: list[str], env: dict[str, str], limit: float) -> str:
    """One kdump run under ``/usr/bin/time -v``: wall, CPU (kdump's, the server's), peak RSS,
    exit status and what it printed."""
    with tempfile.NamedTemporaryFile("r") as report:
        before, t = server_cpu(), time.monotonic()
        try:
            done = subprocess.run([TIME, "-v", "-o", report.name, KDUMP, *args], env=env, capture_output=True,
                                  text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return f"still running after {limit:.0f}s (stopped)"
        wall, server = time.monotonic() - t, server_cpu() - before
        fields = dict(line.strip().rpartition(": ")[::2] for line in report.read().splitlines() if ": " in line)
    printed = " | ".join(line for line in (done.stdout + done.stderr).splitlines() if line.strip())
    cpu = float(fields.get("User time (seconds)", 0)) + float(fields.get("System time (seconds)", 0))
    return (f"{wall:.1f}s, CPU s kdump {cpu:.1f} / server {server:.1f}, "
            f"peak RSS {int(fields.get('Maximum resident set size (kbytes)', 0)) / 1024:.0f} MB, "
            f"exit {done.returncode}: {printed[:300]!r}")


def _listening_pid(endpoint: str) -> int | None:
    """The pid of this user's process listening at ``endpoint``'s port (``ss -p``), for its CPU time."""
    port = endpoint.rpartition(":")[2]
    try:
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True).stdout
    except OSError:
        return None
    pid = out.partition("pid=")[2].partition(",")[0]
    return int(pid) if pid.isdigit() else None


def _cpu_since(mark: tuple[float, float]) -> str:
    """CPU seconds of this process and of the server since ``mark`` (``_cpu_mark()``)."""
    now = _cpu_mark()
    return f"CPU s client {now[0] - mark[0]:.1f} / server {now[1] - mark[1]:.1f}"


def _cpu_mark() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, server_cpu()


def listing(env: dict[str, str], tmp: str, n: int, repeat: int, limit: float = 1800, endpoint: str = "") -> None:
    """``verify`` and ``dump`` of a partition-named prefix of ``n`` empty keys that are no Kafka
    files, from S3 and from a local dir of the same names; beside them the same listing paged
    by boto3 alone and by pyarrow alone (kdump's library), on the same server in the same run.

    Its own server: S3Proxy with jclouds' in-memory store (the filesystem store reads every
    object's metadata from disk for each page: 7 s a page of 100,000 keys), or the one at
    ``endpoint`` (keys ``testing``), where the keys are written only if they are not there yet."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.fs as pafs

    server = S3Proxy(Path(tmp) / "transient", provider="transient")
    if endpoint:
        server.endpoint = endpoint
        pid = _listening_pid(endpoint)
    else:
        server.base.mkdir()
        pid = server.start().proc.pid
    SERVER_PID[:] = [pid] if pid else []
    env = {**env, **server.env()}
    try:
        s3 = server.client()
        names = [f"object-{i:06d}.txt" for i in range(n)]
        try:
            s3.head_object(Bucket="bench", Key=f"many-0/{names[-1]}")
            print(f"{n} keys already under s3://bench/many-0/ at {server.endpoint}")
        except s3.exceptions.ClientError:
            s3.create_bucket(Bucket="bench")
            t = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda name: s3.put_object(Bucket="bench", Key=f"many-0/{name}", Body=b""), names))
            print(f"{load()} {n} empty keys written under s3://bench/many-0/ in {time.monotonic() - t:.0f}s "
                  f"({server.endpoint})")
        local = os.path.join(tmp, "local", "many-0")
        os.makedirs(local)
        for name in names:
            open(os.path.join(local, name), "wb").close()
        fs = pafs.S3FileSystem(endpoint_override=server.endpoint.partition("://")[2], scheme="http",
                               region="us-east-1", access_key="testing", secret_key="testing")
        for round_ in range(repeat):
            pages, keys, token, t, mark = 0, 0, {}, time.monotonic(), _cpu_mark()
            while True:
                page = s3.list_objects_v2(Bucket="bench", Prefix="many-0/", Delimiter="/", MaxKeys=1000, **token)
                pages, keys = pages + 1, keys + page.get("KeyCount", 0)
                if not page.get("IsTruncated"):
                    break
                token = {"ContinuationToken": page["NextContinuationToken"]}
            print(f"{load()} round {round_ + 1}: boto3 alone pages the listing: {time.monotonic() - t:.1f}s, "
                  f"{pages} pages, {keys} keys, {_cpu_since(mark)}")
            t, mark = time.monotonic(), _cpu_mark()
            infos = fs.get_file_info(pafs.FileSelector("bench/many-0", recursive=False))
            print(f"{load()} round {round_ + 1}: pyarrow alone (get_file_info, as kdump lists): "
                  f"{time.monotonic() - t:.1f}s, {len(infos)} entries, {_cpu_since(mark)}")
            del infos
            for command in (["verify"], ["dump"]):
                for where, path in (("S3", "s3://bench/many-0"), ("local dir", local)):
                    print(f"{load()} round {round_ + 1}: kdump {command[0]} of {n} keys, {where}: "
                          f"{_timed_kdump([*command, path], env, limit)}")
    finally:
        if not endpoint:
            server.stop()


# The control of the Spark figures: a job of pure Python CPU work (no kdump, no storage), timed
# inside the job (the driver's start excluded), 8 tasks of the same work.
CPU_JOB = """
import sys, time
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[1]).config("spark.executor.memory", "512m")
         .config("spark.ui.enabled", "false").getOrCreate())
work = lambda i: sum(j * j for j in range(4_000_000))
spark.sparkContext.parallelize(range(2), 2).map(work).collect()        # executors up, workers warm
t = time.monotonic()
spark.sparkContext.parallelize(range(8), 8).map(work).collect()
print(time.monotonic() - t)
spark.stop()
"""


def spark_scaling(server: S3Server, url: str, size: int, tmp: str) -> None:
    """``export --engine spark`` s3:// -> s3:// with 1, then 2 worker cores; beside it the same
    export of a tiny log dir (the fixed cost: driver, executors, planning) and the CPU-bound
    control, on the same clusters."""
    tiny = upload(server, os.path.join(ROOT, "fixtures", "generated", "headers-0"), "bench", "tiny/headers-0")
    times: dict[str, dict[int, float]] = {"export": {}, "tiny": {}, "cpu": {}}
    for workers in (1, 2):
        base = tempfile.mkdtemp(dir=tmp)
        cluster = SparkCluster(Path(base), server.env(), workers=workers, cores=1).start()
        try:
            for name, src in (("tiny", tiny.rpartition("/")[0]), ("export", url)):
                # S3Proxy 2.6.0 refuses pyarrow's multipart uploads (XAmzContentSHA256Mismatch):
                # there the executors write to local disk (the tests write s3:// on moto)
                out = os.path.join(tmp, f"out-{name}-{workers}") if isinstance(server, S3Proxy) else \
                    f"s3://bench/out-{name}-{workers}"
                wall, code, _, _ = run(["export", src, "--out", out, "--engine", "spark",
                                     "--master", cluster.url, "--conf", "spark.executor.memory=768m", "-q"],
                                    cluster.env)
                times[name][workers] = wall
                print(f"{load()} spark export s3:// -> {out.partition(':')[0] if '://' in out else 'local disk'} of "
                      f"{'a 3 kB log dir' if name == 'tiny' else 'the log dir'}"
                      f", {workers} worker core(s): {wall:.1f}s, exit {code}")
            done = subprocess.run([sys.executable, "-c", CPU_JOB, cluster.url], env=cluster.env, capture_output=True,
                                  text=True)
            times["cpu"][workers] = float(done.stdout.split()[-1]) if done.returncode == 0 else float("nan")
            print(f"{load()} CPU-bound control job (8 tasks of pure Python), {workers} worker core(s): "
                  f"{times['cpu'][workers]:.1f}s")
        finally:
            cluster.stop()
    e, t, c = times["export"], times["tiny"], times["cpu"]
    print(f"spark scaling, 2 cores against 1: export {e[1] / e[2]:.2f}x; export less the tiny export's fixed cost "
          f"{(e[1] - t[1]) / (e[2] - t[2]):.2f}x; CPU-bound control {c[1] / c[2]:.2f}x")


def median(args, env, repeat) -> tuple[float, int, float]:
    """Median wall seconds, the exit status, median CPU seconds (kdump's and the server's)."""
    runs = [run(args, env) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), runs[0][1], statistics.median(r[3] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=("moto", "s3proxy"), default="s3proxy")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--big-gib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--listing", type=int, default=0, metavar="N",
                    help="also list a prefix of N keys (none of them a Kafka file) on its own in-memory "
                         "S3Proxy: time, RSS, what kdump printed, against boto3 and pyarrow alone and a local dir")
    ap.add_argument("--listing-only", action="store_true", help="only the --listing figures")
    ap.add_argument("--listing-endpoint", default="", metavar="URL",
                    help="list on this S3 server (keys 'testing'; the N keys written if not there yet)")
    ap.add_argument("--listing-limit", type=float, default=1800, metavar="SECONDS",
                    help="stop a kdump run of the listing after this long")
    a = ap.parse_args()
    if a.listing_only:
        with tempfile.TemporaryDirectory() as tmp:
            listing(dict(os.environ), tmp, a.listing, a.repeat, a.listing_limit, a.listing_endpoint)
        return

    small = os.path.join(DATA, f"logdir-{a.size_mib}m")
    manifest = generate(small, a.size_mib / 1024, 2, 2)
    size = manifest["log_bytes"]
    with tempfile.TemporaryDirectory() as tmp:
        server = (S3Proxy(Path(tmp)) if a.server == "s3proxy" else S3Server(Path(tmp) / "moto.log")).start()
        env = {**os.environ, **server.env()}
        SERVER_PID.append(server.proc.pid)
        try:
            url = upload(server, small, "bench", "small")
            name = "S3Proxy 2.6.0" if a.server == "s3proxy" else f"moto {__import__('moto').__version__}"
            segment = f"bench-0/{0:020d}.log"
            print(f"log dir: {size / 1e6:.0f} MB of segments, {manifest['records']} records; server: {name}")
            print(f"{load()} {raw_rates(server, 'bench', 'small/' + segment, os.path.join(small, segment), a.repeat)}")
            for name, args in (("verify", ["verify", "-q", "-j", "1"]), ("dump --json", ["dump", "--json", "-j", "1"]),
                               ("dump --records --json", ["dump", "--records", "--json", "-j", "1"])):
                local, code_l, cpu_l = median([*args, small], env, a.repeat)
                remote, code_r, cpu_r = median([*args, url], env, a.repeat)
                print(f"{load()} {name:22} local {size / local / 1e6:8.1f} MB/s ({local:.2f}s)   "
                      f"S3 {size / remote / 1e6:8.1f} MB/s ({remote:.2f}s)   ratio {local / remote:.2f}x   "
                      f"exit {code_l}/{code_r}   CPU s (kdump + server) {cpu_l:.2f} / {cpu_r:.2f}")
                if os.path.isdir("/dev/shm") and name != "dump --records --json":
                    # the spool in RAM: no disk blocks to allocate and write back
                    shm, _, cpu_s = median([*args, url], {**env, "KDUMP_SPOOL_DIR": "/dev/shm"}, a.repeat)
                    print(f"{load()} {name:22} S3 with KDUMP_SPOOL_DIR=/dev/shm {size / shm / 1e6:8.1f} MB/s "
                          f"({shm:.2f}s)   ratio {local / shm:.2f}x   CPU s {cpu_s:.2f}")
            if not a.skip_big:
                big = os.path.join(DATA, f"segment-{a.big_gib}g")
                generate(big, a.big_gib, 1, 1)
                big_url = upload(server, big, "bench", "big")
                for name, args in (("verify", ["verify", "-q", "-j", "1"]),
                                   ("dump --records --json", ["dump", "--records", "--json", "-j", "1"])):
                    wall, code, rss, _ = run([*args, big_url + "/bench-0"], env)
                    print(f"{load()} {a.big_gib:g} GiB segment from S3, {name}: peak RSS {rss / 1024:.0f} MB, "
                          f"{wall:.1f}s, exit {code}")
            if a.listing:
                listing(env, tmp, a.listing, a.repeat, a.listing_limit, a.listing_endpoint)
            if a.spark:
                spark_scaling(server, url, size, tmp)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
