"""A file's report in ``verify`` (one object of ``verify --json``): its findings, and for a
segment its scan; what a file that cannot be read reports. The checks that fill it are
``kdump.check.partition``'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump import findings as F
from kdump.check.capped import not_listed
from kdump.check.scan import ScanReport, status_of
from kdump.errors import KdumpError
from kdump.model import Finding
from kdump.storage import fs
from kdump.storage.logdir import LogFile


@dataclass
class FileReport:
    """One object of ``verify --json``."""

    file: str
    kind: str
    size: int | None
    findings: list[Finding] = field(default_factory=list)
    scan: ScanReport | None = None
    log: LogFile | None = None

    @property
    def status(self) -> str:
        return status_of(self.findings) if self.findings else "ok"

    @property
    def not_listed(self) -> dict[str, int]:        # kind -> findings counted past the first 50 of it
        return self.scan.not_listed if self.scan is not None else not_listed(self.findings)

    @property
    def valid_bytes(self) -> int | None:
        if self.scan is not None:
            return self.scan.valid_bytes
        if self.size is None or not self.findings:
            return self.size
        # A side file: the bytes before its first damaged entry.
        positions = [f.position for f in self.findings if f.cls == F.DAMAGE and f.position is not None]
        return min([self.size, *positions]) if positions else (self.size if self.status == "ok" else None)

    def to_dict(self) -> dict[str, Any]:
        s = self.scan
        return {"file": self.file, "kind": self.kind, "status": self.status, "size": self.size,
                "valid_bytes": self.valid_bytes, "intact_bytes": s.intact_bytes if s else None,
                "batches": s.batches if s else None, "records": s.records if s else None,
                "first_offset": s.first_offset if s else None, "last_offset": s.last_offset if s else None,
                "findings": [f.to_dict() for f in self.findings], "not_listed": self.not_listed}


def unreadable(f: LogFile, e: KdumpError) -> FileReport:     # (e: a remote piece that cannot be read back, too)
    return FileReport(f.path, f.kind, file_size_or_none(f.path, (OSError, KdumpError)),
                      [Finding(F.UNREADABLE, e.position, e.offset, e.message)], log=f)


def file_size_or_none(path: str, errors: type[Exception] | tuple[type[Exception], ...] = OSError) -> int | None:
    try:
        return fs.getsize(path)
    except errors:
        return None
