"""Finding partitions in one or more log dirs and reading them for the state commands.

A PATH is a partition dir, a log dir, or a dir holding several log dirs (a copy of a
dead broker's disks, JBOD). Only the directory names are listed until a command asks for a
partition, so a question about ``__consumer_offsets`` never touches the other 5,000
partitions. A partition found twice (a ``-future`` replica being moved between log dirs,
or the same dir given twice) is read from its live copy; the others are named in notes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from kdump.check.lost_records import orphan_bases
from kdump.errors import InputError, KdumpError, NothingToDoError, UnknownSchemaError
from kdump.format.walk import Walker, decode_records
from kdump.model import Batch, Record, RecordFinding
from kdump.storage import fs
from kdump.storage.levels import levels, list_pending
from kdump.storage.logdir import LOG, LogFile, parse_partition_dir, partition_files
from kdump.storage.mapped import MappedFile

CLUSTER_METADATA = "__cluster_metadata"
CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"


class Partition(NamedTuple):
    topic: str
    partition: int
    path: str

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


class LogDirs:
    """The partitions under some PATHs, by (topic, partition), listed once."""

    def __init__(self, paths) -> None:
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.notes: list[str] = []
        self.roots = list(paths)
        for path in paths:
            if not fs.exists(path):
                raise InputError("cannot read: no such file or directory", file=path)
            if not fs.isdir(path):
                raise NothingToDoError("expected a log dir or a partition dir", file=path)
            self._add_dir(path)
        if not self.partitions:
            raise NothingToDoError("no partition directories found here", file=paths[0] if paths else None)

    def _add_dir(self, path: str) -> None:
        # ``levels``' walk: a remote listing of many pages taken as it comes, not held whole
        for level in levels(path, "dir"):
            if level.partition_dir is not None:
                parsed = parse_partition_dir(os.path.basename(fs.normpath(level.partition_dir)))
                if parsed is not None:
                    self._add_partition(level.partition_dir, parsed)
            for p in level.partitions:
                if list_pending(p) is None:     # only dirs: a log dir named like a partition
                    level.log_dirs.append(p.directory)
                else:
                    self._add_partition(p.directory, (p.topic, p.partition, p.state or None))

    def _add_partition(self, path: str, parsed: tuple[str, int, str | None]) -> None:
        topic, partition, state = parsed
        if state is not None:          # -delete, -future, -stray: not the replica the broker serves
            self.notes.append(f"{path}: skipped ({state} replica)")
            return
        key = (topic, partition)
        if key in self.partitions:
            self.notes.append(f"{path}: skipped ({topic}-{partition} already read from "
                              f"{self.partitions[key].path})")
            return
        self.partitions[key] = Partition(topic, partition, path)

    def topic(self, topic: str) -> list[Partition]:
        return [p for (t, _), p in sorted(self.partitions.items()) if t == topic]

    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def all(self) -> list[Partition]:
        return [p for _, p in sorted(self.partitions.items())]


def segments(p: Partition) -> list[LogFile]:
    """The partition's live segments in offset order (leftovers are not part of the log)."""
    return [f for f in partition_files(p.path) if f.kind == LOG and f.leftover is None]


def orphan_segments(p: Partition) -> list[int]:
    """Base offsets of segments whose ``.index``/``.timeindex``/``.txnindex`` is here without
    their ``.log`` (the rule ``verify``'s ``records_missing`` uses: ``check.lost_records``)."""
    return list(orphan_bases(partition_files(p.path)))


def missing_logs(p: Partition) -> str | None:
    """Why the partition's records are not all on disk, or None: it has no ``.log`` at all
    (a broker always keeps the active segment), or segments lost their ``.log``."""
    if not segments(p):
        return f"{p.path}: no .log segment: its records are gone"
    orphans = orphan_segments(p)
    if not orphans:
        return None
    shown = ", ".join(f"{b:020d}.log" for b in orphans[:3]) + (f" and {len(orphans) - 3} more" if len(orphans) > 3
                                                                 else "")
    return f"{p.path}: {len(orphans)} segment{'s' if len(orphans) > 1 else ''} missing (indexes without their " \
           f".log: {shown}): their records are gone"


def side_files(p: Partition, kind: str) -> list[LogFile]:
    return [f for f in partition_files(p.path) if f.kind == kind and f.leftover is None]


class Stop(NamedTuple):
    """Why reading a partition ended before its last byte (a torn batch after a crash)."""

    file: str
    position: int
    offset: int | None
    message: str

    def text(self) -> str:
        return f"{self.file}:{self.position}: {self.message}"


class LogReader:
    """Batches (and, when asked, records) of one partition across its segments.

    ``records(batch)`` decodes on demand, so callers that only need headers (producer
    state) pay for records only on the batches they look inside. A batch with a bad CRC or
    a walk that stops early ends the read, as a broker's recovery would cut the log there;
    ``stop`` then says where and why.
    """

    def __init__(self, files: list[LogFile]) -> None:
        self.files = files
        self.stop: Stop | None = None

    def batches(self, want_records=False) -> Iterator[tuple[LogFile, Batch, list[Record] | None]]:
        """(file, batch, records); records are decoded when ``want_records`` is True or,
        given a callable, when it answers True for the batch (None otherwise)."""
        choose = want_records if callable(want_records) else (lambda b, _w=bool(want_records): _w)
        for f in self.files:
            mapped = MappedFile(f.path)
            try:
                walker = Walker(mapped.buf)
                for b in walker:
                    if not b.crc_valid:
                        self.stop = Stop(f.path, b.position, b.base_offset,
                                         f"batch at offset {b.base_offset} fails its CRC check; read stops here, "
                                         f"where a broker's recovery would cut the log")
                        return
                    records = None
                    if choose(b):
                        try:
                            records = decode_records(mapped.buf, b)
                        except KdumpError as e:
                            self.stop = Stop(f.path, b.position, b.base_offset, e.message)
                            return
                    yield f, b, records
                if walker.stop is not None:
                    s = walker.stop
                    self.stop = Stop(f.path, s.position, s.offset, s.message)
                    return
            finally:
                mapped.close()


def decode_records_of(f: LogFile, b: Batch, records, decode, errors: list[str],
                      findings: list[RecordFinding]) -> list[tuple[Record, dict]]:
    """(record, decoded) for the data records of batch ``b`` of an internal topic; a record
    that does not decode is skipped, as DumpLogSegments skips it, and the rest of the batch
    read: one of a type or version there is no schema for is a ``record_unknown_schema``
    finding in ``findings``, another is named in ``errors``."""
    out = []
    for r in records or ():
        if r.control is not None:
            continue
        try:
            out.append((r, decode(r.key, r.value)))
        except UnknownSchemaError as e:
            findings.append(RecordFinding.unknown_schema(e, f.path, b.position, r.offset))
        except KdumpError as e:
            errors.append(f"{f.path}: offset {r.offset}: {e.message}")
    return out


def log_end_offset(p: Partition) -> int | None:
    """The offset after the last batch, read from the last segment's headers only (an empty
    last segment, as after a roll, ends the log at its base offset)."""
    segs = segments(p)
    if not segs:
        return None
    f = segs[-1]
    last = None
    try:
        with MappedFile(f.path) as m:
            for b in Walker(m.buf):
                last = b
    except KdumpError:
        return None
    if last is not None:
        return last.last_offset + 1
    return f.base_offset


def reference_time(given: int | None, newest: int, what: str) -> tuple[int, int, str]:
    """(the time ages are judged at, the same for the header, where it came from): --now when
    given, else the newest record read (the clock would judge a week-old copy all expired),
    else the clock."""
    import time

    if given is not None:
        return given, given, "--now"
    if newest >= 0:
        return newest, newest, what
    now = int(time.time() * 1000)
    return now, now, "the clock"
