"""The one SparkSession of a test run (local[2], loopback, UI off, C1 JIT for a fast start),
shared by tests/spark and the README's Spark example (tests/cli/test_docs.py): a JVM starts
once per run. kdump reuses an active session and leaves it running (kdump.spark.session).

Skipped, with the reason, when pyspark, pyarrow or Java 17 is missing.
"""

from __future__ import annotations

import pytest

# C1 only: the JVM starts in ~10 s instead of ~15-20 s; fine for small test jobs.
TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _requirements() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        return f"pyspark/pyarrow not installed ({e.name})"
    from kdump.spark.session import SparkUnavailableError, check_requirements

    try:
        check_requirements()
    except SparkUnavailableError as e:
        return e.message
    return None


@pytest.fixture(scope="session")
def spark_available():
    reason = _requirements()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def spark(spark_available):
    from kdump.spark.session import get_session

    session = get_session("local[2]", {
        "spark.driver.extraJavaOptions": TEST_JAVA_OPTIONS,
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
    })
    yield session
    session.stop()
