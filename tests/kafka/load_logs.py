"""Kafka's own log load as the oracle: ``LoadLogs.java`` (ours, compiled once into
tests/kafka/target) opens each partition directory with ``UnifiedLog.create`` as a broker's
``LogManager`` does at start (after a clean shutdown or not), then closes it as a clean stop does.

The load is Kafka 4.3.1's (kafka_jars.classpath_4_3_1(), the jars of tests/kafka/kafka-4.3.1-pom.xml):
the rules of check/clean_load.py and check/loader_snapshots.py are read from 4.3.1's sources.
Kafka 4.4.0 leaves a cleanly closed active segment's .index preallocated where 4.3.1 trims
it: that 4.4 change is not followed yet."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import NamedTuple

import javac
import kafka_jars

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "LoadLogs.java"
CLASSES = HERE / "target" / "loadlogs-classes-4.3.1"


class Loaded(NamedTuple):
    log_end_offset: int | None
    recovery_point: int | None
    failure: str | None         # "ExceptionClass: message" where the load threw


def _compiled() -> Path:
    return javac.compiled(SOURCE, CLASSES, "-cp", kafka_jars.classpath_4_3_1())


def load(groups: list[tuple[Path, bool, list[str]]]) -> dict[str, Loaded]:
    """Each (log dir, had a clean shutdown, partition names) loaded and closed by Kafka, in one
    JVM: ``{partition dir path: Loaded}``."""
    classes = _compiled()
    lines = "".join(f"{d}\t{'true' if clean else 'false'}\t{' '.join(parts)}\n" for d, clean, parts in groups)
    proc = subprocess.run(["java", "-cp", f"{classes}{os.pathsep}{kafka_jars.classpath_4_3_1()}", "LoadLogs"],
                          input=lines, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("@@ok "):
            _, path, leo, rp = line.split(" ")
            out[path] = Loaded(int(leo), int(rp), None)
        elif line.startswith("@@fail "):
            _, path, failure = line.split(" ", 2)
            out[path] = Loaded(None, None, failure)
    return out
