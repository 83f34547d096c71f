"""Fixtures shared by the whole suite; helpers live in tests/support/."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Kafka's own jars and broker; tests/kafka is no package (`kafka` is kafka-python's name).
sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

# A real Kafka broker: session-wide `kafka_broker`, per-test `make_broker` (tests/kafka/broker.py).
from broker_fixtures import kafka_broker, make_broker, pytest_runtest_makereport  # noqa: E402,F401

from support.run import run_kdump  # noqa: E402

# One SparkSession for the run: `spark`, `spark_available` (tests/support/spark_session.py).
from support.spark_session import spark, spark_available  # noqa: E402,F401


@pytest.fixture
def kdump():
    return run_kdump


@pytest.fixture(autouse=True)
def _finding_kinds_are_declared():
    """Every finding emitted while a test runs has a kind declared in kdump.findings."""
    from kdump import findings

    findings.undeclared.clear()
    yield
    assert not findings.undeclared, f"finding kinds not declared in kdump/findings.py: {findings.undeclared}"


def pytest_collection_modifyitems(config, items):
    """KDUMP_TEST_SAMPLE=N: a sample of the suite (tests/support/sample.py)."""
    from support.sample import sample

    kept = sample(items)
    if len(kept) < len(items):
        ids = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in ids])
        items[:] = kept
