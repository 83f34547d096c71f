"""Kafka's own jars for the oracle tests: where they are, how to fetch them, how to run a class.

The version is pinned in tests/kafka/pom.xml alone. `ensure_jars()` runs Maven once when the
jar folder is missing; `.ci/run` does the same up front. Under CI=true a missing Java or
Maven fails the test instead of skipping it: CI must prove parity, not skip it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
JARS_DIR = HERE / "target" / "kafka-jars"


def kafka_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    assert match, "tests/kafka/pom.xml names no kafka.version"
    return match.group(1)


def _missing(why: str):
    import pytest

    if os.environ.get("CI") == "true":
        pytest.fail(f"Kafka oracle unavailable under CI: {why}")
    pytest.skip(f"Kafka oracle unavailable: {why}")


def jars_present() -> bool:
    # the slf4j binding too: a folder fetched before the pom named it gives a silent broker
    return ((JARS_DIR / f"kafka-tools-{kafka_version()}.jar").is_file()
            and any(JARS_DIR.glob("log4j-slf4j-impl-*.jar")))


def ensure_jars() -> Path:
    """The jar folder, fetched with Maven if it is not there yet (skip/fail if impossible)."""
    if jars_present():
        return JARS_DIR
    if not shutil.which("java"):
        _missing("no java on PATH")
    if not shutil.which("mvn"):
        _missing("no mvn on PATH")
    proc = subprocess.run(["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies"],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not jars_present():
        _missing(f"mvn dependency:copy-dependencies failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return JARS_DIR


def classpath() -> str:
    return str(ensure_jars() / "*")


POM_4_3_1 = HERE / "kafka-4.3.1-pom.xml"
DIR_4_3_1 = HERE / "target" / "kafka-4.3.1-jars"


def classpath_4_3_1() -> str:
    """Kafka 4.3.1 whole, with LocalTieredStorage (kafka-4.3.1-pom.xml): the tiered-storage
    tests' broker and the clean-load oracle (load_logs.py). Fetched with Maven on first use."""
    if not any(DIR_4_3_1.glob("kafka-storage-*-test.jar")):
        if not shutil.which("mvn"):
            _missing("no mvn on PATH")
        proc = subprocess.run(["mvn", "-q", "-B", "-f", str(POM_4_3_1), "dependency:copy-dependencies"],
                              capture_output=True, text=True)
        if proc.returncode != 0 or not any(DIR_4_3_1.glob("kafka-storage-*-test.jar")):
            _missing(f"mvn (kafka-4.3.1-pom.xml) failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return str(DIR_4_3_1 / "*")


def java(main_class: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """Run one of Kafka's main classes with the pinned jars (text mode, output captured)."""
    if not shutil.which("java"):
        _missing("no java on PATH")
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    return subprocess.run(["java", "-cp", classpath(), main_class, *args], **kwargs)
