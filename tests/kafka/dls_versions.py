"""DumpLogSegments of each Kafka minor line kdump prints as (``kdump dump --kafka-version``).

tests/kafka/dls-pom.xml holds one Maven profile per line: the newest patch release of the
line and the artifact whose DumpLogSegments it is (kafka_2.13's kafka.tools one, Scala, up to
4.2; kafka-tools' org.apache.kafka.tools one, Java, from 4.3). ``jars(line)`` fetches a line's
runtime jars into target/dls-jars/VERSION once (``.ci/run`` does it up front), as kafka_jars
does for the oracle's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import kafka_jars

HERE = Path(__file__).resolve().parent
POM = HERE / "dls-pom.xml"
JARS = HERE / "target" / "dls-jars"
_PROFILE = re.compile(r"<id>([\d.]+)</id>\s*<properties>\s*<dls\.version>([^<]+)</dls\.version>\s*"
                      r"<dls\.artifact>([^<]+)</dls\.artifact>")


def profiles() -> dict[str, tuple[str, str]]:
    """line -> (release, artifact), as the pom names them."""
    return {m.group(1): (m.group(2), m.group(3)) for m in _PROFILE.finditer(POM.read_text())}


def release(line: str) -> str:
    return profiles()[line][0]


def main_class(line: str) -> str:
    artifact = profiles()[line][1]
    return "kafka.tools.DumpLogSegments" if artifact == "kafka_2.13" else "org.apache.kafka.tools.DumpLogSegments"


def _present(line: str) -> bool:
    version, artifact = profiles()[line]
    return (JARS / version / f"{artifact}-{version}.jar").is_file()


def classpath(line: str) -> str:
    """The line's jars (fetched with Maven when missing; skip/fail as kafka_jars does)."""
    if not _present(line):
        if not shutil.which("mvn"):
            kafka_jars._missing("no mvn on PATH")
        proc = subprocess.run(["mvn", "-q", "-B", "-f", str(POM), "-P", line, "dependency:copy-dependencies"],
                              capture_output=True, text=True)
        if proc.returncode != 0 or not _present(line):
            kafka_jars._missing(f"mvn -P {line} dependency:copy-dependencies failed: {proc.stdout[-2000:]}")
    return str(JARS / release(line) / "*")


def main(argv: list[str]) -> int:
    """``python tests/kafka/dls_versions.py LINE [OTHER]``: where LINE's DumpLogSegments prints
    otherwise than OTHER's (default: the oracle's) on test_dls_parity's matrix, a line each
    option set with the first difference of each kind: how a rule of kdump.decoders.kafka_lines
    is found."""
    import difflib
    import sys
    import tempfile

    import dls
    from test_dls_parity import MATRIX, ROOTS, _files

    line, other = argv[0], argv[1] if len(argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        copies = {root: dls.copy_tree(root, Path(tmp) / str(i)) for i, root in enumerate(ROOTS)}
        cases = [(name, root, f) for name, (_, suffixes, prefix) in MATRIX.items()
                 for root in ROOTS for f in _files(root, suffixes, prefix)]
        jobs = [(MATRIX[name][0], str(copies[root] / f)) for name, root, f in cases]
        ours = dls.run_jobs(jobs, classpath(line), main_class(line))
        theirs = (dls.run_jobs(jobs, classpath(other), main_class(other)) if other
                  else dls.run_jobs(jobs, kafka_jars.classpath()))
    seen: set[tuple[str, str]] = set()
    for (name, root, f), a, b in zip(cases, ours, theirs):
        for x in difflib.unified_diff(b.stdout + b.stderr, a.stdout + a.stderr, lineterm="", n=0):
            if x[:1] in "+-" and x[:3] not in ("+++", "---"):
                kind = (name, re.sub(r"\d+", "N", x)[:60])
                if kind not in seen:
                    seen.add(kind)
                    sys.stdout.write(f"{name} {root.name}/{f}: {x[:300]}\n")
    return 0


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(HERE))
    raise SystemExit(main(sys.argv[1:]))
