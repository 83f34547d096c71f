"""Spark tests' own fixtures. The SparkSession (`spark`, one for the whole run: local[2],
loopback, UI off, C1 JIT for a fast start) lives in tests/support/spark_session.py, so that
the README's Spark example shares it too. Under pytest-xdist each worker that runs a Spark
test file starts its own (two workers: two JVMs at most).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparkkit import make_segment, next_offset  # noqa: E402

# The session itself (`spark`, `spark_available`) is shared with the whole suite: tests/support/spark_session.py.


@pytest.fixture(scope="session")
def big_dir(tmp_path_factory):
    """A log dir with topic 'big': partitions 0 and 1, two segments each, ~1-2 MB per segment."""
    root = tmp_path_factory.mktemp("bigdir")
    for p in (0, 1):
        first = make_segment(root / f"big-{p}", batches=400, seed=10 + p)
        make_segment(root / f"big-{p}", batches=300, base_offset=next_offset(first), seed=20 + p)
    return root
