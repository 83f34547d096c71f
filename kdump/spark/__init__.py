"""kdump on Spark: the ``kafka-log`` data sources, sessions, and distributed export/verify.

Importing this package does not import pyspark (``kdump export --engine local`` and the
rest of kdump must work without it); each name below loads its module on first use.

    from kdump.spark import get_session
    spark = get_session("local[2]")          # kdump's defaults, data sources registered
    df = spark.read.format("kafka-log").load("/var/lib/kafka/data")
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "get_session": "session",
    "check_requirements": "session",
    "register": "source",
    "KafkaLogDataSource": "source",
    "KafkaLogBatchesDataSource": "source",
    "export_spark": "export",
    "export_on_spark": "export",
    "verify_on_spark": "verify",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kdump.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
