"""Text parity with Kafka's own DumpLogSegments (kafka-dump-log.sh), line for line.

Every file DumpLogSegments accepts under fixtures/real, fixtures/generated and each log
dir under fixtures/broker (globbed when the tests are collected) is dumped by Kafka's tool
and by ``kdump dump --format text`` with the same command line, for every option kdump
takes over from it, and again with ``--escape none`` wherever records are printed (then
byte for byte: no escape rule). stdout must be equal line for line and the closing stderr report
(index mismatches, non-consecutive offsets) equal per file, except for what README.md's
departures table lists (tests/kafka/parity.py applies exactly those rules).

DumpLogSegments runs on a private copy of each tree: it creates a missing .index.
"""

from __future__ import annotations

import os
from pathlib import Path

import dls
import parity
import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
ROOTS = [FIXTURES / "real", FIXTURES / "generated",
         *sorted(p for p in (FIXTURES / "broker").glob("*") if p.is_dir())]

LOGS = (".log", ".checkpoint")
INDEXES = (".index", ".timeindex")
_STRING = "org.apache.kafka.tools.api.StringDecoder"

# name: (options, suffixes of the files they apply to, partition-dir prefix or None)
MATRIX: dict[str, tuple[tuple[str, ...], tuple[str, ...], str | None]] = {
    "plain": ((), dls.SUFFIXES, None),
    "deep-iteration": (("--deep-iteration",), LOGS, None),
    "print-data-log": (("--deep-iteration", "--print-data-log"), LOGS, None),
    "skip-record-metadata": (("--deep-iteration", "--skip-record-metadata"), LOGS, None),
    "print-data-skip-metadata": (("--print-data-log", "--skip-record-metadata"), LOGS, None),
    "max-bytes": (("--deep-iteration", "--max-bytes", "1500"), LOGS, None),
    "max-message-size": (("--max-message-size", "300"), (".index",), None),
    "index-sanity-check": (("--index-sanity-check",), INDEXES, None),
    "verify-index-only": (("--verify-index-only",), INDEXES, None),
    "string-decoder-classes": (("--key-decoder-class", _STRING, "--value-decoder-class", _STRING), LOGS, None),
    "long-key-decoder": (("--key-decoder-class", "org.apache.kafka.tools.api.LongDecoder"), LOGS, None),
    "integer-value-decoder": (("--value-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder"), LOGS, None),
    "offsets-decoder": (("--offsets-decoder",), LOGS, "__consumer_offsets-"),
    "transaction-log-decoder": (("--transaction-log-decoder",), LOGS, "__transaction_state-"),
    "cluster-metadata-decoder": (("--cluster-metadata-decoder",), LOGS, "__cluster_metadata-"),
    "remote-log-metadata-decoder": (("--remote-log-metadata-decoder",), LOGS, "__remote_log_metadata-"),
    "share-group-state-decoder": (("--share-group-state-decoder",), LOGS, "__share_group_state-"),
}


def _files(root: Path, suffixes: tuple[str, ...], dir_prefix: str | None) -> list[str]:
    out = []
    for dirpath, _, names in os.walk(root):
        if dir_prefix is not None and not os.path.basename(dirpath).startswith(dir_prefix):
            continue
        out += [os.path.relpath(os.path.join(dirpath, n), root) for n in names
                if dls.accepted(n) and n.endswith(suffixes)]
    return sorted(out)


def _params():
    for root in ROOTS:
        for name, (_, suffixes, prefix) in MATRIX.items():
            files = _files(root, suffixes, prefix)
            if files:
                yield pytest.param(root, name, files, True, id=f"{root.relative_to(FIXTURES)}-{name}")
                if suffixes == LOGS:
                    yield pytest.param(root, name, files, False, id=f"{root.relative_to(FIXTURES)}-{name}-escape-none")


@pytest.fixture(scope="session")
def kafka_copy(tmp_path_factory):
    """A private copy of a fixture tree for DumpLogSegments (which may write into it)."""
    copies: dict[Path, Path] = {}

    def get(root: Path) -> Path:
        if root not in copies:
            copies[root] = dls.copy_tree(root, tmp_path_factory.mktemp("dls") / root.name)
        return copies[root]

    return get


@pytest.mark.parametrize("root,name,files,escape", list(_params()))
def test_text_parity(root, name, files, escape, kafka_copy):
    options = MATRIX[name][0]
    copy = kafka_copy(root)
    theirs = dls.run([str(copy / f) for f in files], options)
    ours = parity.run_kdump([str(root / f) for f in files], options, escape)
    failures = []
    for f in files:
        problem = parity.compare(ours[str(root / f)], theirs[str(copy / f)], str(copy), str(root), escape)
        if problem:
            failures.append(f"{f}: {problem}")
    assert not failures, f"{len(failures)} of {len(files)} files differ from kafka-dump-log.sh " \
                         f"{' '.join(options)}:\n\n" + "\n\n".join(failures[:4])


def test_departures_table_names_the_rules_the_test_applies():
    assert parity.readme_rules() == parity.RULES


# -- hostile names --------------------------------------------------------------------------

# (The offsets, cluster-metadata and remote-log-metadata decoders are left out: on these
# generated records kdump's schemas read fields and record types Kafka 4.3.1 does not know,
# a difference of decoding, not of escaping; their payloads are in print-data-log's bytes.)
HOSTILE = ["print-data-log", "deep-iteration", "transaction-log-decoder", "share-group-state-decoder"]


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory) -> Path:
    from support.hostile_names import build

    # File names are escaped even with --escape none (no broker makes a topic whose name holds
    # a control character; README's departures table): the partitions here have plain names.
    return build(tmp_path_factory.mktemp("hostile"), plain_dir_names=True)


@pytest.mark.parametrize("escape", [False, True], ids=["escape-none", "escape"])
@pytest.mark.parametrize("name", HOSTILE)
def test_text_parity_hostile_names(name, escape, hostile_root, kafka_copy):
    """Every string field of every internal record, keys, values, header keys and topic names
    holding ESC sequences, C1, bidi and zero-width characters: with --escape none kdump
    writes DumpLogSegments' bytes, and escaped exactly what the escape rule says."""
    options, suffixes, prefix = MATRIX[name]
    files = [f for f in _files(hostile_root, suffixes, prefix) if f.endswith(".log")]
    copy = kafka_copy(hostile_root)
    theirs = dls.run([str(copy / f) for f in files], options)
    ours = parity.run_kdump([str(hostile_root / f) for f in files], options, escape)
    failures = [f"{f}: {problem}" for f in files
                if (problem := parity.compare(ours[str(hostile_root / f)], theirs[str(copy / f)], str(copy),
                                              str(hostile_root), escape))]
    assert not failures, "\n\n".join(failures[:3])
