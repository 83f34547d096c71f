"""The folders of a log dir a broker cannot start with: ``LogManager.loadLogs`` asks
``LocalLog.parseTopicPartitionName`` of each (the rule: ``storage.names.broker_rejects_dir``)."""

from __future__ import annotations

import os

from kdump import findings as F
from kdump.model import Finding
from kdump.storage import logdir as K
from kdump.storage.names import broker_rejects_dir


def add_foreign_dirs(directory: str, reports: list) -> None:
    """A log dir's folders that a broker cannot parse as partitions (``names.broker_rejects_dir``),
    one finding each on the report of its ``meta.properties`` (the file that makes it a log dir)."""
    meta = next((r for r in reports if r.kind == K.META_PROPERTIES), None)
    if meta is None:
        return
    try:
        with os.scandir(directory) as it:
            foreign = sorted(e.name for e in it if e.is_dir(follow_symlinks=False) and broker_rejects_dir(e.name))
    except OSError:
        return
    for name in foreign:
        meta.findings.append(Finding(F.LOGDIR_FOREIGN_DIR, None, None,
                                     f"the folder '{name}' in this log dir is not in the form of topic-partition: "
                                     f"a broker does not start until it is moved out of the log dir"))
