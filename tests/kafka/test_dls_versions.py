"""``kdump dump --escape none --kafka-version LINE`` against LINE's own DumpLogSegments.

For every Kafka line kdump prints as (kdump.decoders.kafka_lines.LINES) but the oracle's
(tests/kafka/pom.xml's, which test_dls_parity.py checks in every mode), the line's own
DumpLogSegments (tests/kafka/dls-pom.xml) dumps every file of test_dls_parity's matrix in one
JVM, and kdump dumps them with ``--kafka-version LINE --escape none``, one run per option
set. stdout must be equal byte for byte, and the closing report per file, under the same
departures (parity.compare). A difference between lines that kafka_lines has no rule for
fails here.
"""

from __future__ import annotations

import dls
import dls_versions
import kafka_jars
import parity
import pytest
from test_dls_parity import FIXTURES, MATRIX, ROOTS, _files

from kdump.decoders import kafka_lines

ORACLE_LINE = ".".join(kafka_jars.kafka_version().split(".")[:2])
OLDER = [line for line in kafka_lines.LINES if line != ORACLE_LINE]


def _cases():
    """(option set, root, file) for every file of the matrix."""
    for name, (_, suffixes, prefix) in MATRIX.items():
        for root in ROOTS:
            for f in _files(root, suffixes, prefix):
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
            out = dls.run_jobs([(MATRIX[name][0], str(copies[root] / f)) for name, root, f in cases],
                               dls_versions.classpath(line), dls_versions.main_class(line))
            cache[line] = (dict(zip(cases, out)), copies)
        return cache[line]

    return get


def test_every_line_has_a_profile():
    assert set(kafka_lines.LINES) <= set(dls_versions.profiles())
    assert ORACLE_LINE == kafka_lines.NEWEST, "the oracle's Kafka is the line kdump prints by default"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted({name for name, _, _ in _cases()}, key=list(MATRIX).index))
@pytest.mark.parametrize("line", OLDER)
def test_line_parity(line, name, theirs):
    dumped, copies = theirs(line)
    cases = [(root, f) for n, root, f in _cases() if n == name]
    ours = parity.run_kdump([str(root / f) for root, f in cases], MATRIX[name][0], escape=False, kafka_version=line)
    failures = []
    for root, f in cases:
        problem = parity.compare(ours[str(root / f)], dumped[(name, root, f)], str(copies[root]), str(root), False)
        if problem:
            failures.append(f"{root.relative_to(FIXTURES)}/{f}: {problem}")
    assert not failures, f"{len(failures)} of {len(cases)} files differ from Kafka {dls_versions.release(line)}'s " \
                         f"kafka-dump-log.sh {' '.join(MATRIX[name][0])}:\n\n" + "\n\n".join(failures[:4])
