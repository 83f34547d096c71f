"""A tiered partition read whole against the same segments on local disk (#37).

    python bench/bench_tiered.py [--segment-mib 256] [--segments 3] [--repeat 3] [--s3 s3proxy|moto] [--verify]

Writes a partition of ``--segments`` big segments the way bench_export.py writes them (v2
batches with offset indexes, under bench/data/tiered/, reused), then lays it out three ways:

- ``local copy``: every segment in one plain partition dir;
- ``kafka-local``: all but a small last segment offloaded to a LocalTieredStorage tree (hard
  links to the same files, with their .index, an empty .timeindex, a producer snapshot and a
  leader-epoch checkpoint), the last one local, and a ``__remote_log_metadata-0`` partition
  that lists them (tests/support/tiered.py: COPY_SEGMENT_STARTED then _FINISHED, written with
  kdump's encoder and tests/decoders/kafka_wire over the message specs);
- ``aiven (zstd)``: the same segments as Aiven's objects (zstd chunks of 4 MiB, the .indexes
  object, the manifest; tests/support/aiven.py) in a directory store; ``aiven (zstd+AES)`` the
  same encrypted (AES-GCM, its data key wrapped with a fresh RSA key).

``kdump dump --records --json`` of each (with ``--verify``: ``kdump verify``, every remote
segment read through, its side files checked) (stdout to /dev/null), in interleaved rounds: the
median wall time (start-up included), its ratio to the local copy, and the peak RSS
(/usr/bin/time). Every line starts with the 1-minute load average (the machine is shared).

With ``--s3``, an S3 server on loopback (tests/remote/servers.py, as bench_remote.py starts
it) holds the local copy as a log dir and the Aiven store, and two more cases run in the same
rounds: ``s3 plain`` (the log dir read from s3://, today's remote reading) and ``aiven s3``
(the tiered partition with ``--remote-storage s3://...``); beside them the server's raw
ranged-GET rate (bench_remote.raw_rates, of the first Aiven .log object) and each case's MB/s
of segment bytes as a ratio to it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "remote"))
KDUMP = os.path.join(os.path.dirname(sys.executable), "kdump")
TIME = "/usr/bin/time"
TOPIC = "bench"


def load() -> str:
    return f"[load {os.getloadavg()[0]:.1f}]"


def layouts(src: Path, tmp: Path) -> dict[str, list[str]]:
    """The layouts of ``src`` (a partition dir of segments); their dump commands."""
    from kdump.encode import build_v2_batch
    from kdump.storage.logdir import LOG, LogFile
    from kdump.storage.record_reader import SegmentReader
    from support.aiven import rsa_key, write_segment
    from support.tiered import TOPIC_ID, offload

    logs = sorted(src.glob("*.log"))
    local = tmp / "local" / f"{TOPIC}-0"
    local.mkdir(parents=True)
    for f in src.iterdir():
        os.link(f, local / f.name)
    # the last segment stays local: a small one after the big ones
    last = None
    for item in SegmentReader(LogFile(str(logs[-1]), LOG, TOPIC, 0, int(logs[-1].name[:20]), None)):
        last = item.batch
    tail_base = last.last_offset + 1
    tail = build_v2_batch([(0, 0, b"tail", b"tail record")], base_offset=tail_base, partition_leader_epoch=3)
    (local / f"{tail_base:020d}.log").write_bytes(tail)
    logdir = tmp / "tiered" / "logs"
    done = offload(TOPIC, logs, tail_base, logdir, tmp / "tiered" / "rsm", link=True)
    (logdir / f"{TOPIC}-0" / f"{tail_base:020d}.log").write_bytes(tail)
    aiven, sealed = tmp / "tiered" / "aiven", tmp / "tiered" / "aiven-aes"
    sealed.mkdir(parents=True)
    key, ring = rsa_key(sealed)
    for stem, log, side in done:
        data = {".log": log.read_bytes(), **side}
        write_segment(aiven / f"{TOPIC}-{TOPIC_ID}" / "0", stem, data, 4 << 20, compression=True)
        write_segment(sealed / f"{TOPIC}-{TOPIC_ID}" / "0", stem, data, 4 << 20, compression=True, key=key)
    part = str(logdir / f"{TOPIC}-0")
    dump = ["dump", "--records", "--json"]
    return {"local copy": [*dump, str(local)],
            "kafka-local": [*dump, part, "--remote-storage", str(tmp / "tiered" / "rsm")],
            "aiven (zstd)": [*dump, part, "--remote-storage", str(aiven), "--remote-layout", "aiven"],
            "aiven (zstd+AES)": [*dump, part, "--remote-storage", str(sealed), "--remote-layout", "aiven",
                                 "--remote-keyring", str(ring)]}


def on_s3(server_kind: str, tmp: Path, cases: dict[str, list[str]], repeat: int):
    """An S3 server holding the local copy (a log dir) and the Aiven store; the two cases that read
    them, the server's raw ranged-GET line, and the server to stop."""
    from bench_remote import SERVER_PID, raw_rates, upload
    from servers import S3Proxy, S3Server

    server = (S3Proxy(tmp / "s3proxy") if server_kind == "s3proxy" else S3Server(tmp / "moto.log")).start()
    SERVER_PID[:] = [server.proc.pid]
    for name, value in server.env().items():
        os.environ[name] = value            # (the cases' environment is this process's)
    plain = upload(server, str(tmp / "local"), "bench", "plain")
    aiven = upload(server, str(tmp / "tiered" / "aiven"), "bench", "aiven")
    first = sorted((tmp / "tiered" / "aiven").rglob("*.log"))[0]
    raw = raw_rates(server, "bench", f"aiven/{first.relative_to(tmp / 'tiered' / 'aiven')}", str(first), repeat)
    part = cases["aiven (zstd)"][3]
    s3_cases = {"s3 plain": ["dump", "--records", "--json", f"{plain}/{TOPIC}-0"],
                "aiven s3": ["dump", "--records", "--json", part, "--remote-storage", aiven,
                             "--remote-layout", "aiven"]}
    return s3_cases, raw, server


def _env(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """A case's kdump arguments, and its environment (NAME=VALUE words first)."""
    env = dict(os.environ)
    while args and "=" in args[0] and not args[0].startswith("-"):
        name, _, value = args[0].partition("=")
        env[name], args = value, args[1:]
    return args, env


def run(args: list[str]) -> tuple[float, int, int]:
    """(wall seconds, exit status, peak RSS in KiB) of one kdump run."""
    args, env = _env(args)
    with tempfile.NamedTemporaryFile("r") as report:
        command = [TIME, "-o", report.name, "-f", "%M", KDUMP, *args] if os.path.exists(TIME) else [KDUMP, *args]
        t = time.monotonic()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        wall = time.monotonic() - t
        text = report.read().strip().splitlines()
    return wall, done.returncode, int(text[-1]) if text and text[-1].isdigit() else 0


def _batches(args: list[str]) -> tuple[int, int]:
    """(batches, records) the dump of a layout reads (each must read the same log)."""
    import json

    args, env = _env(args)
    done = subprocess.run([KDUMP, *[a for a in args if a != "--records"]], capture_output=True, text=True, env=env)
    rows = [json.loads(line) for line in done.stdout.splitlines() if f"{TOPIC}-" in line or "/0/" in line]
    rows = [r for r in rows if r.get("object") == "batch" and "__remote_log_metadata" not in r["file"]]
    return len(rows), sum(r["last_offset"] - r["base_offset"] + 1 for r in rows)


def main() -> None:
    from bench_export import generate

    p = argparse.ArgumentParser()
    p.add_argument("--segment-mib", type=int, default=256)
    p.add_argument("--segments", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--s3", choices=("s3proxy", "moto"), help="also read the log dir and the Aiven store from S3")
    p.add_argument("--verify", action="store_true", help="time kdump verify instead of the dump")
    a = p.parse_args()
    data = HERE / "data" / "tiered" / f"{a.segments}x{a.segment_mib}m"
    manifest = generate(str(data), a.segments * a.segment_mib / 1024, 1, a.segments)
    tmp = Path(tempfile.mkdtemp(prefix="kdump-bench-tiered-", dir=data.parent))
    server = None
    try:
        cases = layouts(data / "bench-0", tmp)
        print(f"{a.segments} segments of {a.segment_mib} MiB ({manifest['log_bytes'] / 1e6:.0f} MB, "
              f"{manifest['records']} records), all remote, and a 1-batch local tail")
        raw = ""
        if a.s3:
            s3_cases, raw, server = on_s3(a.s3, tmp, cases, a.repeat)
            cases.update(s3_cases)
            print(f"{load()} {a.s3}: {raw}")
        batches = {name: _batches(args) for name, args in cases.items()}
        if len(set(batches.values())) != 1:
            sys.exit(f"the layouts read different logs: {batches}")
        if a.verify:        # the same layouts, verified (a clean log: exit 0)
            cases = {name: ["verify", *args[3:]] for name, args in cases.items()}
        times: dict[str, list[float]] = {k: [] for k in cases}
        peaks: dict[str, int] = {k: 0 for k in cases}
        for _ in range(a.repeat):
            for name, args in cases.items():
                wall, code, rss = run(args)
                if code:
                    sys.exit(f"{name}: kdump {' '.join(args)} exited {code}")
                times[name].append(wall)
                peaks[name] = max(peaks[name], rss)
        base = statistics.median(times["local copy"])
        # the raw GET rate at 2 in flight (kdump's remote reads run 2 at a time: storage.spool.PARALLEL)
        ceiling = float(raw.partition("in flight, best of")[2].partition(": ")[2].split("/")[1]) if raw else 0.0
        for name, ts in times.items():
            m = statistics.median(ts)
            rate = manifest['log_bytes'] / m / 1e6
            versus = f"  {rate / ceiling:5.2f}x raw GETs" if ceiling and name in ("s3 plain", "aiven s3") else ""
            print(f"{load()} {name:<16} median {m:7.2f} s  {rate:7.1f} MB/s  "
                  f"{base / m:5.2f}x local  peak RSS {peaks[name] / 1024:5.0f} MB{versus}")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
