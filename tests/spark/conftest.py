"""One SparkSession for every Spark test (local[2], loopback, UI off, C1 JIT for a fast start).

Skipped, with the reason, when pyspark, pyarrow or Java 17 is missing. Never run these
under pytest-xdist: each worker would start its own JVM.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparkkit import make_segment, next_offset  # noqa: E402

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


@pytest.fixture(scope="session")
def big_dir(tmp_path_factory):
    """A log dir with topic 'big': partitions 0 and 1, two segments each, ~1-2 MB per segment."""
    root = tmp_path_factory.mktemp("bigdir")
    for p in (0, 1):
        first = make_segment(root / f"big-{p}", batches=400, seed=10 + p)
        make_segment(root / f"big-{p}", batches=300, base_offset=next_offset(first), seed=20 + p)
    return root
