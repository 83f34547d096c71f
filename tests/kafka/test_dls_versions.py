"""``kdump dump --escape none --kafka-version LINE`` against LINE's own DumpLogSegments.

For every Kafka line kdump prints as (kdump.decoders.kafka_lines.LINES) but the oracle's
(tests/kafka/pom.xml's, which test_dls_parity.py checks in every mode), the line's own
DumpLogSegments (tests/kafka/dls-pom.xml) dumps every file of test_dls_parity's matrix in one
JVM (of fixtures/real, the first file of each kind in each folder), and kdump dumps them
with ``--kafka-version LINE --escape none``, one run per option set. stdout must be equal
byte for byte, and the closing report per file, under the same departures
(parity.compare). A difference between lines that kafka_lines has no rule for fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import dls
import dls_versions
import kafka_jars
import parity
import pytest
from test_dls_parity import FIXTURES, LOGS, MATRIX, ROOTS, _files

from kdump.decoders import kafka_lines

ORACLE_LINE = ".".join(kafka_jars.kafka_version().split(".")[:2])
OLDER = [line for line in kafka_lines.LINES if line != ORACLE_LINE]


# kafka.serializer's decoder classes, which only the lines up to 3.9 ship (4.0's refuse them, as
# kdump does), on two roots only: every line's JVM dumps these files too.
SERIALIZER = {
    "serializer-long-key-string-value": (("--key-decoder-class", "kafka.serializer.LongDecoder",
                                          "--value-decoder-class", "kafka.serializer.StringDecoder"), LOGS, None),
    "serializer-integer-value": (("--value-decoder-class", "kafka.serializer.IntegerDecoder"), LOGS, None),
}
SERIALIZER_ROOTS = [FIXTURES / "generated", FIXTURES / "broker" / "all-shapes"]
CASES = {**MATRIX, **SERIALIZER}


REAL = FIXTURES / "real"


def _sample(root, files: list[str]) -> list[str]:
    """Of fixtures/real (1,200 files, which test_dls_parity dumps whole with the newest line),
    the first file of each kind in each folder: every shape the real files hold, in half the
    JVM's and kdump's time; the generated and broker-written roots whole."""
    if root != REAL:
        return files
    seen: set[tuple[str, str]] = set()
    out = []
    for f in sorted(files):
        key = (os.path.dirname(f), os.path.splitext(f)[1])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _cases():
    """(option set, root, file) for every file of the matrix (fixtures/real sampled)."""
    for name, (_, suffixes, prefix) in CASES.items():
        for root in (SERIALIZER_ROOTS if name in SERIALIZER else ROOTS):
            for f in _sample(root, _files(root, suffixes, prefix)):
                yield name, root, f


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    """line -> ({(option set, root, file): Dumped}, {root: its private copy}), one JVM a line."""
    cache: dict[str, tuple[dict, dict]] = {}

    def get(line: str):
        if line not in cache:
            base = tmp_path_factory.mktemp(f"dls-{line}")
            copies = {root: dls.copy_tree(root, base / str(i)) for i, root in enumerate(ROOTS)}
            cases = list(_cases())
            out = dls.run_jobs([(CASES[name][0], str(copies[root] / f)) for name, root, f in cases],
                               dls_versions.classpath(line), dls_versions.main_class(line))
            cache[line] = (dict(zip(cases, out)), copies)
        return cache[line]

    return get


def test_every_line_has_a_profile():
    assert set(kafka_lines.LINES) <= set(dls_versions.profiles())
    assert ORACLE_LINE == kafka_lines.NEWEST, "the oracle's Kafka is the line kdump prints by default"


def _refused(line: str, options: tuple[str, ...]) -> bool:
    """Does LINE's kafka-dump-log.sh lack one of ``options`` (kdump then refuses them too)?"""
    kafka = kafka_lines.KafkaLine(line)
    return ("--remote-log-metadata-decoder" in options and not kafka.has(kafka_lines.REMOTE_LOG_METADATA_DECODER)
            or "--share-group-state-decoder" in options and not kafka.has(kafka_lines.SHARE_GROUP_STATE_DECODER)
            or any(o.startswith("org.apache.kafka.tools.api.") for o in options)
            and not kafka.has(kafka_lines.TOOLS_API_DECODERS)
            or any(o.startswith("kafka.serializer.") for o in options) and kafka.has(kafka_lines.KAFKA_SERIALIZER_GONE))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted({name for name, _, _ in _cases()}, key=list(CASES).index))
@pytest.mark.parametrize("line", OLDER)
def test_line_parity(line, name, theirs):
    dumped, copies = theirs(line)
    cases = [(root, f) for n, root, f in _cases() if n == name]
    options = CASES[name][0]
    if _refused(line, options):
        # The old tool dies on its first file (an option or a class it does not know); kdump
        # refuses the command line, exit 2, naming the line and the change that brought it.
        assert all(dumped[(name, root, f)].crash for root, f in cases)
        proc = subprocess.run([sys.executable, "-m", "kdump", "dump", *options, "--kafka-version", line,
                               "--files", str(cases[0][0] / cases[0][1])], capture_output=True, text=True)
        assert proc.returncode == 2 and f"Kafka {line}'s kafka-dump-log.sh has none" in proc.stderr, proc.stderr
        return
    ours = parity.run_kdump([str(root / f) for root, f in cases], options, escape=False, kafka_version=line)
    failures = []
    theirs_anonymous: list[str] = []
    for root, f in cases:
        problem = parity.compare(ours[str(root / f)], dumped[(name, root, f)], str(copies[root]), str(root), False)
        theirs_anonymous += [x.replace(str(copies[root]), str(root))
                             for x in parity.anonymous(dumped[(name, root, f)].stderr)[1]]
        if problem:
            failures.append(f"{root.relative_to(FIXTURES)}/{f}: {problem}")
    if theirs_anonymous != ours[parity.ANONYMOUS].summary:
        failures.append(parity._diff("report blocks naming no file", theirs_anonymous, ours[parity.ANONYMOUS].summary))
    assert not failures, f"{len(failures)} of {len(cases)} files differ from Kafka {dls_versions.release(line)}'s " \
                         f"kafka-dump-log.sh {' '.join(options)}:\n\n" + "\n\n".join(failures[:4])
