"""How pytest-xdist's workers share the suite under ``--dist loadgroup`` (the README's test
command): each test file goes whole to one worker, so that its module-scoped fixtures (a
broker, a big segment written once) start once; and every test that needs the SparkSession goes
to the same worker, since each worker would start a Spark JVM of its own. Without xdist nothing
is marked: the suite runs as before."""

from __future__ import annotations

import pytest

SPARK = "spark"


def group(item) -> str:
    if SPARK in item.fixturenames or item.nodeid.startswith("tests/spark/"):
        return SPARK
    return item.nodeid.split("::")[0]


def mark_groups(config, items) -> None:
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group(item)))
