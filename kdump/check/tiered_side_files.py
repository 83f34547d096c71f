"""A remote segment's side files checked as a local segment's are.

Its offset, time and transaction indexes, producer snapshot and leader-epoch checkpoint
(LocalTieredStorage's objects, the pieces of Aiven's ``.indexes`` object) are given the names
a partition directory has for them (``kdump.storage.remote_parts``), beside the segment, in a
directory of their own that exists only as those names; ``kdump.check.partition`` then checks
them with verify's own checks and finding kinds. Each finding names the object it is about.
"""

from __future__ import annotations

from kdump import findings as F
from kdump.check.partition import VerifyOptions, check_directory
from kdump.format.checkpoint import LEADER_EPOCH as LEADER_EPOCH_FILE
from kdump.model import Finding
from kdump.storage import views
from kdump.storage.logdir import LEADER_EPOCH, LOG, SEGMENT_EXTENSIONS, LogFile
from kdump.storage.remote_parts import alias

# Judged for the whole partition (the tiered checks do that), not for one remote segment:
# a segment alone shows records "missing" below its base, or a log start past its end.
_PARTITION_KINDS = (F.RECORDS_MISSING, F.LOG_START_PAST_END)


def side_file_findings(sides: dict, log_path: str, stem: str, base: int) -> list[tuple[str, Finding]]:
    """``sides``: the store's ``side_files`` (a partition dir's name -> (where it is, its
    view)); ``log_path``: the segment's ``.log``; ``stem``: where the segment is, its objects'
    common prefix. (where, finding) of each finding of the side files."""
    directory = stem + ".side-files"
    seg = alias(f"{directory}/{base:020d}.log", log_path)
    files = [LogFile(seg, LOG, None, None, base, None)]
    where = {}
    for name, (shown, view) in sides.items():
        path = f"{directory}/{name}" if name == LEADER_EPOCH_FILE else f"{directory}/{base:020d}{name}"
        views.register(path, view)
        where[path] = shown
        kind = LEADER_EPOCH if name == LEADER_EPOCH_FILE else SEGMENT_EXTENSIONS[name]
        files.append(LogFile(path, kind, None, None, None if name == LEADER_EPOCH_FILE else base, None))
    out: list[tuple[str, Finding]] = []
    for r in check_directory(directory, files, VerifyOptions()):
        if r.file in where:
            out.extend((where[r.file], f) for f in r.findings if f.kind not in _PARTITION_KINDS)
        elif r.file == seg:         # what the segment's own report says of its side files
            out.extend((log_path, f) for f in r.findings if f.kind == F.TXNINDEX_MISSING)
    return out
