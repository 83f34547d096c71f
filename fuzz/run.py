"""Run the kdump fuzz harnesses (atheris / libFuzzer) for a fixed time budget each.

    python fuzz/run.py --seconds 60                 # every target, 60 s each (what CI runs)
    python fuzz/run.py --seconds 600 --parallel 2 walker codecs
    python fuzz/run.py --replay                     # no atheris: run every corpus and
                                                    # regression input through check()

Corpora live in ``fuzz/corpus/<target>/`` (git-ignored, seeded from ``fixtures/`` by
``seeds.py`` when empty); committed crash reproducers in ``fuzz/regressions/<target>/``
are given to libFuzzer as extra seeds and replayed by the test suite. A crash leaves
``fuzz/artifacts/<target>/crash-*`` and makes the exit status 1. Every run appends its
executions and seconds to ``fuzz/stats.jsonl`` (git-ignored); ``--stats`` sums them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = ("walker", "records", "codecs", "sidefiles", "decoders", "schemas", "text", "ndjson", "scan", "info",
           "avro", "indexes")
# libFuzzer options per target: longer inputs where whole segments make sense.
MAX_LEN = {"walker": 65536, "records": 16384, "codecs": 16384, "sidefiles": 8192, "decoders": 4096,
           "schemas": 16384, "text": 16384, "ndjson": 16384, "scan": 16384, "info": 16384, "avro": 4096,
           "indexes": 16384}
STATS = os.path.join(HERE, "stats.jsonl")


def corpus_dir(target: str) -> str:
    return os.path.join(HERE, "corpus", target)


def regressions_dir(target: str) -> str:
    return os.path.join(HERE, "regressions", target)


def ensure_seeds() -> None:
    if all(os.path.isdir(corpus_dir(t)) and os.listdir(corpus_dir(t)) for t in TARGETS):
        return
    subprocess.run([sys.executable, os.path.join(HERE, "seeds.py")], check=True)


def command(target: str, seconds: int, extra: list[str], timeout: int = 20) -> list[str]:
    artifacts = os.path.join(HERE, "artifacts", target)
    os.makedirs(artifacts, exist_ok=True)
    dirs = [corpus_dir(target)]
    if os.path.isdir(regressions_dir(target)):
        dirs.append(regressions_dir(target))
    return [sys.executable, os.path.join(HERE, f"fuzz_{target}.py"), *dirs,
            f"-max_total_time={seconds}", f"-timeout={timeout}", "-rss_limit_mb=2048", f"-max_len={MAX_LEN[target]}",
            f"-artifact_prefix={artifacts}{os.sep}", "-print_final_stats=1", *extra]


def parse_stats(log: str) -> tuple[int | None, int | None]:
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    if not runs:
        runs = re.findall(r"Done (\d+) runs in", log)
    cov = re.findall(r"cov: (\d+)", log)
    return (int(runs[-1]) if runs else None), (int(cov[-1]) if cov else None)


def run_targets(targets: list[str], seconds: int, parallel: int, extra: list[str], timeout: int = 20) -> int:
    ensure_seeds()
    logs_dir = os.path.join(HERE, "logs")
    os.makedirs(logs_dir, exist_ok=True)
    pending = list(targets)
    running: list[tuple[str, subprocess.Popen, str, float]] = []
    failed = []
    while pending or running:
        while pending and len(running) < parallel:
            target = pending.pop(0)
            log = os.path.join(logs_dir, f"{target}-{time.strftime('%Y%m%dT%H%M%S')}.log")
            with open(log, "wb") as out:
                proc = subprocess.Popen(command(target, seconds, extra, timeout), stdout=out, stderr=subprocess.STDOUT,
                                        cwd=HERE)
            running.append((target, proc, log, time.monotonic()))
        time.sleep(0.5)
        for item in list(running):
            target, proc, log, started = item
            if proc.poll() is None:
                continue
            running.remove(item)
            elapsed = time.monotonic() - started
            with open(log, encoding="utf-8", errors="replace") as f:
                text = f.read()
            execs, cov = parse_stats(text)
            crashed = proc.returncode != 0
            with open(STATS, "a") as f:
                f.write(json.dumps({"target": target, "seconds": round(elapsed, 1), "execs": execs, "cov": cov,
                                    "crashed": crashed, "log": os.path.relpath(log, HERE),
                                    "when": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
            print(f"{target}: {execs} executions in {elapsed:.0f} s, coverage {cov}, "
                  f"{'CRASH (see ' + log + ')' if crashed else 'no crash'}", flush=True)
            if crashed:
                failed.append(target)
                tail = text.splitlines()[-40:]
                print("\n".join(f"  | {line}" for line in tail), file=sys.stderr)
    return 1 if failed else 0


def replay(targets: list[str]) -> int:
    """Run every committed regression input (and the local corpus) through ``check``."""
    sys.path.insert(0, HERE)
    failures = 0
    for target in targets:
        check = importlib.import_module(f"fuzz_{target}").check
        n = 0
        for directory in (regressions_dir(target), corpus_dir(target)):
            if not os.path.isdir(directory):
                continue
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                with open(path, "rb") as f:
                    data = f.read()
                n += 1
                try:
                    check(data)
                except Exception as e:  # noqa: BLE001 - report every failing input, then fail
                    failures += 1
                    print(f"{target}: {path}: {type(e).__name__}: {e}", file=sys.stderr)
        print(f"{target}: replayed {n} inputs")
    return 1 if failures else 0


def totals() -> int:
    if not os.path.exists(STATS):
        print("no runs recorded")
        return 0
    sums: dict[str, list] = {}
    with open(STATS) as f:
        for line in f:
            row = json.loads(line)
            s = sums.setdefault(row["target"], [0, 0.0, 0, 0])
            s[0] += row["execs"] or 0
            s[1] += row["seconds"]
            s[2] += 1
            s[3] += 1 if row["crashed"] else 0
    for target, (execs, seconds, runs, crashes) in sorted(sums.items()):
        print(f"{target}: {execs} executions in {seconds / 60:.1f} min over {runs} runs, {crashes} crashed")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description="Run kdump's fuzz harnesses.",
                                     epilog="Options after -- go to libFuzzer (e.g. -- -jobs=2).")
    parser.add_argument("targets", nargs="*", help=f"targets to run (default: all of {', '.join(TARGETS)})")
    parser.add_argument("--seconds", type=int, default=60, help="time budget per target (default 60)")
    parser.add_argument("--parallel", type=int, default=1, help="targets run at the same time (default 1)")
    parser.add_argument("--timeout", type=int, default=20,
                        help="seconds one input may take before it counts as a hang (default 20; raise it "
                             "on a loaded machine, where a stalled process looks like a hang)")
    parser.add_argument("--replay", action="store_true", help="replay corpora through check() without atheris")
    parser.add_argument("--stats", action="store_true", help="print the executions and time recorded so far")
    args = parser.parse_args(argv)
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; choose from {', '.join(TARGETS)}")
    targets = list(args.targets) or list(TARGETS)
    if args.stats:
        return totals()
    if args.replay:
        return replay(targets)
    return run_targets(targets, args.seconds, args.parallel, extra, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
