"""The local verify's progress bar for ``verify --engine spark``: the bytes of the segments
Spark's tasks have scanned, read from an accumulator each task adds its segment's size to
(the driver merges a task's additions as the task finishes), polled by a thread while the
job runs. Spark's own console progress stays off (``session.py``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

POLL = 0.2        # seconds between looks at the accumulator
KEY = "\0spark-scan"   # the bar counts per file; the scan's bytes are one pseudo-file's


@contextlib.contextmanager
def scan_progress(spark, progress, items) -> Iterator[object | None]:
    """Yields the accumulator for ``scan_and_link``'s tasks (None when no bar is shown); on
    leaving, the scanned segments count as read in full."""
    from kdump.storage.mapped import file_size

    if not progress.enabled or not items:
        yield None
        return
    total = sum(file_size(f.path) for _, f in items)
    acc = spark.sparkContext.accumulator(0)
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(POLL):
            progress.advance(KEY, min(acc.value, total))

    t = threading.Thread(target=poll, name="kdump-spark-progress", daemon=True)
    t.start()
    try:
        yield acc
    finally:
        stop.set()
        t.join()
    progress.advance(KEY, total)
