"""Decode throughput: kdump against kafka-python and aiokafka's Cython decoder, in one run.

    python bench/bench_decode.py [--data bench/data] [--quick] [--repeat N]

Generates its segments once (kdump.encode; cached under bench/data/, git-ignored):
v2 uncompressed with 1-record batches, v2 uncompressed with 100-record batches of 1 KB values
(the largest, >= 256 MiB), v2 lz4/zstd/snappy and v1 gzip with 50-record batches. Then times,
page cache warm, N runs each, interleaved, and reports the median (the machine may be shared):

- full decode to NDJSON: ``kdump dump --records --data --encoding base64 --json`` (the
  real command, start-up included) at ``-j 1`` and ``-j 2`` (one segment cut into ranges for
  the workers), in records/s and MB/s of segment, against the same work written with
  kafka-python and with aiokafka (decode every record, base64 key/value/headers, one JSON
  object a batch); on the 1 KB-value set also against ``base64 FILE > /dev/null``, the floor;
- ``--rss-4gib``: kdump's peak RSS and time on a 4 GiB segment at ``-j 1`` (made of copies of
  the 1 KB-value set, offsets shifted; deleted afterwards);
- batch listing: ``kdump dump`` (text, no records) in batches/s;
- verify: ``kdump verify`` on the large segment against ``cat FILE > /dev/null``, and on
  the 1-record-batch segment against aiokafka's ``next_batch()`` + ``validate_crc()`` loop.

Targets (issues 2, 3 and 25): NDJSON >= 3x aiokafka records/s on every set and >= 500 MB/s
of segment on 1 KB values, peak RSS < 100 MB at -j 1 on 4 GiB; listing >= 150k batches/s;
verify >= 40% of cat's throughput and >= aiokafka's batches/s.
"""

from __future__ import annotations

import argparse
import base64
import compileall
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from kdump import encode as build  # noqa: E402
from kdump.format.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD  # noqa: E402

T0 = 1_700_000_000_000
KDUMP = [sys.executable, "-m", "kdump"]

# name -> (magic, codec, records per batch, value size, target bytes)
SETS = {
    "v2-none-1rec": (2, NONE, 1, 100, 64 << 20),
    "v2-none-100rec": (2, NONE, 100, 1000, 256 << 20),
    "v2-lz4-50rec": (2, LZ4, 50, 200, 32 << 20),
    "v2-zstd-50rec": (2, ZSTD, 50, 200, 32 << 20),
    "v2-snappy-50rec": (2, SNAPPY, 50, 200, 32 << 20),
    "v1-gzip-50rec": (1, GZIP, 50, 200, 32 << 20),
    # Kafka's default segment.bytes; only with --with-1gib (it takes a while to generate).
    "v2-none-100rec-1gib": (2, NONE, 100, 1000, 1 << 30),
}
DEFAULT_SETS = [name for name in SETS if not name.endswith("-1gib")]
QUICK_DIVISOR = 16


def _value(rnd: random.Random, size: int) -> bytes:
    # Half random, half repetitive: compressible like real JSON-ish payloads.
    half = size // 2
    return rnd.randbytes(half) + (b"abcdefgh" * (size // 8 + 1))[: size - half]


def generate(directory: Path, name: str, quick: bool) -> Path:
    magic, codec, per_batch, value_size, target = SETS[name]
    if quick:
        target //= QUICK_DIVISOR
    part = directory / ("quick" if quick else "full") / f"{name}-0"
    seg = part / "00000000000000000000.log"
    if seg.exists() and seg.stat().st_size >= target:
        return seg
    part.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(42)
    offset = 0
    size = 0
    tmp = seg.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        while size < target:
            recs = [(offset + i, T0 + offset + i, b"key-%d" % (offset + i), _value(rnd, value_size))
                    for i in range(per_batch)]
            if magic == 2:
                data = build.build_v2_batch([(i, ts, k, v) for i, (_, ts, k, v) in enumerate(recs)],
                                            base_offset=offset, codec=codec, partition_leader_epoch=0)
            elif codec == NONE:
                data = b"".join(build.build_legacy_message(o, k, v, magic=magic, timestamp=ts) for o, ts, k, v in recs)
            else:
                data = build.build_legacy_wrapper(recs, magic=magic, codec=codec)
            out.write(data)
            size += len(data)
            offset += per_batch
    os.replace(tmp, seg)
    return seg


def _b64(x):
    return None if x is None else base64.b64encode(x).decode("ascii")


def peer_ndjson(path: Path, module: str) -> tuple[int, int]:
    """The same work as `dump --records --data --encoding base64 --json`, written with a peer library."""
    if module == "kafka-python":
        from kafka.record import MemoryRecords
    else:
        from aiokafka.record._crecords import MemoryRecords
    data = path.read_bytes()
    mr = MemoryRecords(data)
    records = batches = 0
    with open(os.devnull, "w") as out:
        while mr.has_next():
            batch = mr.next_batch()
            if batch is None:
                break
            recs = [{"offset": r.offset, "timestamp": r.timestamp, "key": _b64(r.key), "value": _b64(r.value),
                     "headers": [{"key": k, "value": _b64(v)} for k, v in (r.headers or [])]} for r in batch]
            out.write(json.dumps({"base_offset": getattr(batch, "base_offset", None), "records": recs}) + "\n")
            records += len(recs)
            batches += 1
    return records, batches


def aiokafka_crc_loop(path: Path) -> int:
    from aiokafka.record._crecords import MemoryRecords

    mr = MemoryRecords(path.read_bytes())
    n = 0
    while mr.has_next():
        b = mr.next_batch()
        if b is None:
            break
        b.validate_crc()
        n += 1
    return n


def count(path: Path) -> tuple[int, int]:
    from kdump.format.walk import Walker
    from kdump.storage.mapped import MappedFile

    m = MappedFile(str(path))
    batches = records = 0
    for b in Walker(m.buf):
        batches += 1
        records += b.count or 0
    m.close()
    return records, batches


def best(fn, repeat: int) -> float:
    """The median of ``repeat`` runs (the name is older than the median)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def medians(fns: dict, repeat: int) -> dict:
    """Each of ``fns`` run ``repeat`` times, interleaved (a round runs every one once, so that a
    change in the machine's load weighs on all alike): name -> median seconds."""
    times: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def run_cmd(args: list[str]) -> None:
    with open(os.devnull, "wb") as devnull:
        rc = subprocess.run(args, stdout=devnull, stderr=subprocess.PIPE, check=False)
    if rc.returncode not in (0, 1):
        raise SystemExit(f"command failed ({rc.returncode}): {' '.join(map(str, args))}\n{rc.stderr.decode()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--quick", action="store_true", help=f"segments 1/{QUICK_DIVISOR} of the full size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=DEFAULT_SETS, metavar="SET", help="set names to run")
    ap.add_argument("--rss-4gib", action="store_true",
                    help="only: peak RSS and time at -j 1 on a 4 GiB segment (made, then deleted)")
    ap.add_argument("--with-1gib", action="store_true",
                    help="also verify a 1 GiB segment (Kafka's default segment.bytes) against cat")
    args = ap.parse_args()
    names = args.only or DEFAULT_SETS
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"median of {args.repeat}")
    if args.rss_4gib:
        rss_4gib(args)
        return
    from kdump import _accel
    print("kdump C accelerator:", _accel.status())
    # Start-up as from the second run on: where PYTHONDONTWRITEBYTECODE is set (some
    # sandboxes set it), an editable install would otherwise compile kdump on every command.
    compileall.compile_dir(str(ROOT / "kdump"), quiet=1)
    rows = []
    for name in names:
        seg = generate(args.data, name, args.quick)
        records, batches = count(seg)
        mb = seg.stat().st_size / 1e6
        row = {"set": name, "MB": round(mb, 1), "records": records, "batches": batches}
        fns = {f"-j {j}": (lambda j=j: run_cmd([*KDUMP, "dump", str(seg), "--records", "--data", "--encoding",
                                                "base64", "--json", "--no-auto-decode", "-j", str(j)]))
               for j in (1, 2)}
        for peer in ("kafka-python", "aiokafka"):
            try:
                peer_ndjson(seg, peer)
                fns[peer] = lambda p=peer: peer_ndjson(seg, p)
            except Exception as e:  # noqa: BLE001 - a peer without a codec is reported, not fatal
                print(f"  {peer} on {name}: {type(e).__name__}: {e}")
        if name == "v2-none-100rec":
            fns["base64"] = lambda: subprocess.run(f"base64 '{seg}' > /dev/null", shell=True, check=True)
        load = os.getloadavg()[0]
        t = medians(fns, args.repeat)
        row["load"] = f"{load:.1f}-{os.getloadavg()[0]:.1f}"     # one-minute load average, before and after
        row["kdump rec/s"] = records / t["-j 1"]
        row["kdump -j 2 rec/s"] = records / t["-j 2"]
        row["kdump MB/s"] = mb / t["-j 1"]
        row["kdump -j 2 MB/s"] = mb / t["-j 2"]
        for peer in ("kafka-python", "aiokafka"):
            row[f"{peer} rec/s"] = records / t[peer] if peer in t else None
        if "base64" in t:
            print(f"  the floor: base64 {t['base64']:.2f} s; kdump -j 1 {t['-j 1']:.2f} s = "
                  f"{t['-j 1'] / t['base64']:.2f}x base64's time, -j 2 {t['-j 2']:.2f} s = "
                  f"{t['-j 2'] / t['base64']:.2f}x")
        t = best(lambda: run_cmd([*KDUMP, "dump", str(seg), "--format", "text"]), args.repeat)
        row["list batch/s"] = batches / t
        rows.append(row)
        _print_row(row)
    _verify_figures(args, names)


def _verify_against_cat(args, name: str) -> tuple[float, float, int]:
    """``kdump verify`` and ``cat FILE > /dev/null`` on one segment: their best times and its size."""
    seg = generate(args.data, name, args.quick)
    size = seg.stat().st_size
    t_cat = best(lambda: subprocess.run(f"cat '{seg}' > /dev/null", shell=True, check=True), args.repeat)
    t_v = best(lambda: run_cmd([*KDUMP, "verify", str(seg), "--format", "text", "-q"]), args.repeat)
    print(f"verify {seg.parent.name}: {size / t_v / 1e6:,.0f} MB/s vs cat {size / t_cat / 1e6:,.0f} MB/s "
          f"= {t_cat / t_v:.0%} of cat")
    return t_cat, t_v, size


def _start_up_floor(args, t_cat: float, t_v: float, size: int) -> None:
    """What a run costs before the first byte is checked, against the time 40% of cat allows:
    verify on an empty segment (interpreter, Click, kdump's imports, the report), and the
    interpreter alone and with Click, as floors no scan speed can go under."""
    empty = args.data / "empty-0" / "00000000000000000000.log"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.touch()
    t_empty = best(lambda: run_cmd([*KDUMP, "verify", str(empty), "--format", "text", "-q"]), args.repeat)
    t_py = best(lambda: run_cmd([sys.executable, "-c", "pass"]), args.repeat)
    t_click = best(lambda: run_cmd([sys.executable, "-c", "import click"]), args.repeat)
    budget = t_cat / 0.4
    print(f"  start-up: verify of an empty segment {t_empty * 1e3:.0f} ms (python alone {t_py * 1e3:.0f} ms, "
          f"python + import click {t_click * 1e3:.0f} ms); 40% of cat allows {budget * 1e3:.0f} ms in all")
    scan = (f"{size / (t_v - t_empty) / 1e6:,.0f} MB/s" if t_v > t_empty * 1.05
            else "within the noise of the start-up")
    print(f"  the scan once started: {scan}; with a scan taking no time at all verify would reach "
          f"{t_cat / t_empty:.0%} of cat")


def _print_row(row: dict) -> None:
    kp, aio = row.get("kafka-python rec/s"), row.get("aiokafka rec/s")
    ours, two = row["kdump rec/s"], row["kdump -j 2 rec/s"]
    ratio_kp = f"{ours / kp:.2f}x" if kp else "n/a"
    ratio_aio = f"{ours / aio:.2f}x / {two / aio:.2f}x" if aio else "n/a"
    print(f"{row['set']:16} {row['MB']:8.1f} MB  records {row['records']:>9}  "
          f"ndjson kdump -j 1 {ours:>10,.0f}/s {row['kdump MB/s']:6,.0f} MB/s, -j 2 {two:>10,.0f}/s "
          f"{row['kdump -j 2 MB/s']:6,.0f} MB/s  kafka-python {kp or 0:>9,.0f}/s ({ratio_kp})  "
          f"aiokafka {aio or 0:>9,.0f}/s (-j 1 / -j 2: {ratio_aio})  listing {row['list batch/s']:>10,.0f} batches/s  "
          f"load {row['load']}", flush=True)


def rss_4gib(args) -> None:
    """kdump's peak RSS and time at -j 1 on a 4 GiB segment: copies of the 1 KB-value set, each
    batch's base offset shifted past the copy before (outside the CRC), then deleted."""
    from kdump.format.walk import Walker
    from kdump.storage.mapped import MappedFile

    src = generate(args.data, "v2-none-100rec", False)
    part = args.data / "full" / "v2-none-100rec-4gib-0"
    part.mkdir(parents=True, exist_ok=True)
    seg = part / "00000000000000000000.log"
    m = MappedFile(str(src))
    positions = [(b.position, b.base_offset) for b in Walker(m.buf)]
    data = bytes(m.buf[:m.size])
    m.close()
    span = max(o for _, o in positions) + 1000
    try:
        with open(seg, "wb") as out:
            copy = 0
            while out.tell() < 4 << 30:
                chunk = bytearray(data)
                for position, base in positions:
                    chunk[position:position + 8] = (base + copy * span).to_bytes(8, "big")
                out.write(chunk)
                copy += 1
        size = seg.stat().st_size
        code = ("import resource, subprocess, sys, time\n"
                "t = time.perf_counter()\n"
                "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
                "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                "print(time.perf_counter() - t, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)\n")
        runs = []
        for _ in range(args.repeat):
            r = subprocess.run([sys.executable, "-c", code, *KDUMP, "dump", str(seg), "--records", "--data",
                                "--encoding", "base64", "--json", "--no-auto-decode", "-j", "1"],
                               capture_output=True, text=True, check=True)
            runs.append(tuple(float(x) for x in r.stdout.split()))
        wall = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        cpu = statistics.median(r[2] for r in runs)
        print(f"4 GiB segment ({size / 1e9:.2f} GB), -j 1: peak RSS {rss / 1024:.0f} MB (the largest of "
              f"{len(runs)} runs), median {wall:.1f} s wall ({size / wall / 1e6:,.0f} MB/s), {cpu:.1f} s CPU")
    finally:
        seg.unlink(missing_ok=True)


def _verify_figures(args, names) -> None:
    verify_available = subprocess.run([*KDUMP, "verify", "--help"], capture_output=True).returncode == 0
    if not verify_available:
        print("verify: command not available yet")
        return
    if "v2-none-100rec" in names:
        _start_up_floor(args, *_verify_against_cat(args, "v2-none-100rec"))
    if args.with_1gib:
        _verify_against_cat(args, "v2-none-100rec-1gib")
    if "v2-none-1rec" in names:
        seg = generate(args.data, "v2-none-1rec", args.quick)
        _, batches = count(seg)
        t_a = best(lambda: aiokafka_crc_loop(seg), args.repeat)
        t_v = best(lambda: run_cmd([*KDUMP, "verify", str(seg), "--format", "text", "-q"]), args.repeat)
        print(f"verify {seg.parent.name}: {batches / t_v:,.0f} batches/s vs aiokafka next_batch+validate_crc "
              f"{batches / t_a:,.0f} batches/s = {t_a / t_v:.2f}x")


if __name__ == "__main__":
    main()
