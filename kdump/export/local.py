"""The local engine of ``kdump export``: the plan run in this process, written as Parquet or NDJSON.

Parquet goes through pyarrow (``kdump.export.write.ParquetSink``); NDJSON needs nothing
beyond the standard library. ``write_group`` is also one task of ``export --engine spark``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from kdump.errors import ExitStatus, UsageError, WriteError
from kdump.export.columns import TxnOf, record_batches
from kdump.export.read import damage_message
from kdump.export.schema import PARTITION_COLUMNS, text
from kdump.export.slice_rows import json_items
from kdump.export.slices import DEFAULT_SPLIT_BYTES, Scope, Slice, plan, plan_files
from kdump.export.write import ParquetSink, hive_dir
from kdump.format.codecs import DEFAULT_LIMITS, Limits


class ExportResult(NamedTuple):
    rows: int
    error_rows: int
    slices: int
    seconds: float
    errors: list[str]          # the first few error rows, as "file:position: message"
    unread: tuple = ()         # KdumpErrors: inputs not read (a partition dir that cannot be listed)
    startup: float = 0.0       # seconds beside ``seconds`` spent starting and stopping the engine (Spark's JVM)

    @property
    def status(self) -> int:
        if self.unread:
            return int(ExitStatus.INCOMPLETE)
        return int(ExitStatus.DAMAGE if self.error_rows else ExitStatus.OK)

    def to_dict(self) -> dict[str, Any]:
        out = {"rows": self.rows, "error_rows": self.error_rows, "slices": self.slices,
               "seconds": round(self.seconds + self.startup, 3), "errors": self.errors}
        if self.startup:
            out["engine_start_stop_seconds"] = round(self.startup, 3)
        if self.unread:
            out["incomplete"] = [str(e) for e in self.unread]
        return out


MAX_REPORTED_ERRORS = 20


def parse_partition_by(value: str | None) -> tuple[str, ...]:
    if value is None:
        return ("topic", "partition")
    cols = tuple(c.strip() for c in value.split(",") if c.strip() and c.strip().lower() != "none")
    bad = [c for c in cols if c not in PARTITION_COLUMNS]
    if bad:
        raise UsageError(f"cannot partition by {', '.join(bad)}: choose from {', '.join(PARTITION_COLUMNS)}")
    if len(set(cols)) != len(cols):
        raise UsageError("--partition-by names a column twice")
    return cols


class _Tally:
    """Counts rows and collects the first error rows while batches stream past."""

    def __init__(self) -> None:
        self.rows = 0
        self.error_rows = 0
        self.errors: list[str] = []

    def batches(self, batches: Iterable) -> Iterator:
        import pyarrow.compute as pc

        for batch in batches:
            self.rows += batch.num_rows
            err = batch.column("error")
            if err.null_count != len(err):
                idx = pc.indices_nonzero(pc.is_valid(err)).to_pylist()
                self.error_rows += len(idx)
                for i in idx[:max(0, MAX_REPORTED_ERRORS - len(self.errors))]:
                    self.errors.append(f"{batch.column('file')[i].as_py()}:{batch.column('position')[i].as_py()}: "
                                       f"{err[i].as_py()}")
            yield batch


def json_error_summary(topic, partition, segment, position, message) -> str:
    """How an NDJSON error line is reported (the line has no file path; both engines use this)."""
    where = segment if topic is None else f"{topic}-{partition}/{segment}"
    return f"{where}:{position}: {message}"


def write_parquet(slices: list[Slice], out: str, partition_by: tuple[str, ...], scope: Scope = Scope(),
                  tally: _Tally | None = None, name: str = "part-00000.zstd.parquet",
                  threads: bool = True, limits: Limits = DEFAULT_LIMITS, decode=None,
                  txn: TxnOf | None = None) -> _Tally:
    """Parquet files under ``out`` in hive directories by ``partition_by`` (zstd, ms timestamps).
    ``decode``: slice -> an object whose ``add(batch)`` appends decoded columns (export --decode);
    ``txn``: the txn column's outcomes (columns.record_batches)."""
    tally = tally or _Tally()
    os.makedirs(out, exist_ok=True)
    sink = ParquetSink(out, partition_by, name, threads)
    try:
        for sl in slices:
            column = decode(sl) if decode is not None else None
            for batch in tally.batches(record_batches(sl, scope, limits=limits, txn=txn)):
                sink.write(sl, batch if column is None else column.add(batch))
    finally:
        sink.close()
    return tally


def write_ndjson(slices: list[Slice], out: str, partition_by: tuple[str, ...], encoding: str = "base64",
                 scope: Scope = Scope(), tally: _Tally | None = None, name: str = "part-00000.ndjson",
                 limits: Limits = DEFAULT_LIMITS, txn: TxnOf | None = None) -> _Tally:
    """One file called ``name`` per output directory; slices arrive grouped, so one file is open."""
    tally = tally or _Tally()
    os.makedirs(out, exist_ok=True)
    current, fh = None, None
    opened: set[str] = set()
    try:
        for sl in slices:
            directory = hive_dir(out, partition_by, sl)
            if directory != current:
                if fh is not None:
                    fh.close()
                os.makedirs(directory, exist_ok=True)
                # "w" the first time: a retried Spark task rewrites its file instead of appending.
                fh = open(os.path.join(directory, name), "a" if directory in opened else "w", encoding="utf-8")
                opened.add(directory)
                current = directory
            write = fh.write
            for line, damage in json_items(sl, encoding, scope, limits, txn):
                write(line) if type(line) is str else fh.writelines(line)
                write("\n")
                tally.rows += 1
                if damage is not None:
                    tally.error_rows += 1
                    if len(tally.errors) < MAX_REPORTED_ERRORS:
                        tally.errors.append(json_error_summary(text(sl.topic), sl.partition, text(sl.segment),
                                                               damage.position, damage_message(damage)))
    finally:
        if fh is not None:
            fh.close()
    return tally


def export_local(paths: list[str], out: str, fmt: str = "parquet",
                 partition_by: tuple[str, ...] = ("topic", "partition"), encoding: str = "base64",
                 split_bytes: int = DEFAULT_SPLIT_BYTES, overwrite: bool = False, scope: Scope = Scope(),
                 threads: bool = True, limits: Limits = DEFAULT_LIMITS, jobs: int = 1, decode=None,
                 chosen: tuple[list, dict[str, int], list, dict[str, int]] | None = None, guard: tuple[str, ...] = (),
                 txn: TxnOf | None = None) -> ExportResult:
    """Export on this machine (no Spark): Parquet through pyarrow, or NDJSON.

    ``threads=False`` encodes Parquet in the decoding thread (one core), for comparisons.
    ``limits`` bound decompression as in ``dump``: a payload beyond them is an error row.
    ``jobs``: worker processes, each writing whole output directories (the files are the
    same as from one process). ``chosen``: the files to read, their offset bounds
    (``slices.plan_files``), the PATHS that could not be listed and the segments read only up
    to an offset, instead of the PATHS' own (a tiered partition's whole log); ``guard``: more
    inputs --out must not be (the remote store).
    """
    from kdump.export.extras import require_pyarrow
    from kdump.export.outdir import check_out, staged

    started = time.monotonic()
    # partition dirs that cannot be listed: the rest is exported, marked incomplete
    unread: list = [] if chosen is None else list(chosen[2])
    slices = plan(paths, split_bytes, scope, unread) if chosen is None else plan_files(chosen[0], split_bytes,
                                                                                        scope, chosen[1], chosen[3])
    inputs = [*paths, *guard]
    check_out(out, overwrite, inputs)
    if fmt not in ("parquet", "ndjson"):
        raise UsageError(f"unknown export format {fmt!r}")
    if fmt == "parquet":
        require_pyarrow()
    try:
        from kdump.jobs.fanout import ordered_map

        with staged(out, overwrite, inputs, unread) as tmp:      # renamed to `out` when done, _SUCCESS if complete
            def write(group: list[Slice]) -> _Tally:
                if fmt == "parquet":
                    return write_parquet(group, tmp, partition_by, scope, threads=threads, limits=limits,
                                         decode=decode, txn=txn)
                return write_ndjson(group, tmp, partition_by, encoding, scope, limits=limits, txn=txn)

            tally = _Tally()
            for t in ordered_map(write, _by_output_dir(slices, tmp, partition_by), jobs):
                tally.rows += t.rows
                tally.error_rows += t.error_rows
                tally.errors += t.errors[:MAX_REPORTED_ERRORS - len(tally.errors)]
    except OSError as e:
        raise WriteError(f"cannot write the export: {e.strerror or e}", file=out) from None
    return ExportResult(tally.rows, tally.error_rows, len(slices), time.monotonic() - started, tally.errors,
                        tuple(unread))


def _by_output_dir(slices: list[Slice], out: str, partition_by: tuple[str, ...]) -> list[list[Slice]]:
    """The slices cut into runs that each fill whole output directories: a worker's unit. A
    directory fed from two places in the order (no partition column) makes it one run."""
    runs: list[list[Slice]] = []
    seen: set[str] = set()
    current = None
    for sl in slices:
        d = hive_dir(out, partition_by, sl)
        if d == current:
            runs[-1].append(sl)
        elif d in seen:
            return [slices]
        else:
            seen.add(d)
            current = d
            runs.append([sl])
    return runs


def write_group(task: int, slices: list[Slice], out: str, fmt: str, partition_by: tuple[str, ...],
                encoding: str = "base64", scope: Scope = Scope(), threads: bool = False,
                limits: Limits = DEFAULT_LIMITS, txn: TxnOf | None = None) -> tuple[int, int, list[str]]:
    """One Spark task of ``export --engine spark``: write these slices under ``out`` with this
    module's writers, into files named by the task number (so a retried task overwrites its
    own files and two tasks never share one). Returns (rows, error rows, first errors).

    A task is given one core (spark.task.cpus=1), so by default Parquet is encoded inline
    rather than in a second thread.
    """
    if fmt == "parquet":
        tally = write_parquet(slices, out, partition_by, scope, name=f"part-{task:05d}.zstd.parquet",
                              threads=threads, limits=limits, txn=txn)
    else:
        tally = write_ndjson(slices, out, partition_by, encoding, scope, name=f"part-{task:05d}.ndjson",
                             limits=limits, txn=txn)
    return tally.rows, tally.error_rows, tally.errors
