"""The verify run without its output: which files, checked a directory at a time.

``kdump verify`` (local and ``--engine spark``) resolves its PATHS here; the local run checks
each directory with ``directory_events``, in this process or a worker of ``-j``. The exit
status a report gives is ``kdump.findings.report_status``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from kdump.check import load_fates
from kdump.errors import ExitStatus, KdumpError
from kdump.storage import fs, levels

# What --truncate may rewrite: a directory holding none of these (a log dir's own checkpoints)
# is read without taking its lock.
WRITABLE = ("log", "index", "timeindex", "txnindex")

# What checking one directory gives, in the order it is printed: a file's report, an error,
# the stale temporary files removed on locking, the changes of the repair; or, for a dir named
# like a partition that holds only dirs, LOG_DIR with its path (it is walked later, as a log dir).
REPORT, ERROR, CLEANED, REPAIRED, LOG_DIR = "report", "error", "cleaned", "repaired", "log_dir"
# With --truncate, the summary counts of a directory's reports taken before its repair (what a
# broker's next start would have made of it is read from the disk, which the repair changes).
COUNTED = "counted"


def resolve_paths(paths, jobs: int = 1) -> tuple[list, ExitStatus, list[KdumpError]]:
    """The files under PATHS, each once (by real path: a file named twice is checked and
    repaired once), the exit status so far, and the errors to report for PATHS that cannot
    be read (in order; they come before any report)."""
    from kdump.storage.levels import resolve

    status = ExitStatus.OK
    errors: list[KdumpError] = []
    files = []
    seen: set[str] = set()
    dirs: dict[str, str] = {}
    for path in paths:
        try:
            found = resolve([path], jobs=jobs)
        except KdumpError as e:
            errors.append(e)
            status = max(status, e.exit_code)
            continue
        if len(paths) == 1:
            return found, status, errors     # one PATH lists each file once: no need to resolve links
        for f in found:
            key = _real(f.path, dirs)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, status, errors


def _real(path: str, dirs: dict[str, str]) -> str:
    """``os.path.realpath(path)``, resolving each directory once (a partition may hold
    100,000 segments) and only a file that is itself a link in full."""
    if os.path.islink(path):
        return fs.realpath(path)
    directory, name = os.path.split(path)
    real = dirs.get(directory)
    if real is None:
        real = dirs[directory] = fs.realpath(directory)
    return os.path.join(real, name)


def directory_events(group, opts, repair: Callable | None = None, force: bool = False) -> Iterator[tuple]:
    """One directory, a unit of ``-j``: (directory, files), or a partition dir still to list
    (``Pending``). With ``repair`` (``verify --truncate``: it takes the directory's reports and
    options and returns the changes) the directory is locked before it is read and until it is
    repaired, by this process alone. Yields (kind, value) events."""
    if isinstance(group, levels.Pending):
        try:
            files = levels.list_pending(group)
        except KdumpError as e:
            yield ERROR, e
            return
        if files is None:
            yield LOG_DIR, group.directory
            return
        group = (group.directory, files)
    directory, files = group
    if not files:
        return
    if repair is None:          # reading only: no lock to take (nor its module to import)
        for r in load_fates.verify_directory(directory, files, opts):     # a group is one directory already
            yield REPORT, light(r)
        return
    yield from _repaired(directory, files, opts, repair, force)


def _repaired(directory: str, files: list, opts, repair: Callable, force: bool) -> Iterator[tuple]:
    from kdump.storage.logdir import take_listing
    from kdump.storage.writelock import Locks

    with Locks(force) as locks:
        if any(f.kind in WRITABLE for f in files):
            try:
                yield CLEANED, locks.take(directory)
            except KdumpError as e:
                yield ERROR, e
                return
            take_listing(directory)     # listed before the lock: list it again
        done = []
        for r in load_fates.verify_directory(directory, files, opts):
            r = light(r)
            yield REPORT, r
            done.append(r)
        from kdump.check.loss import summary_counts

        yield COUNTED, summary_counts(done, opts.offsets, as_broker=False)     # what --truncate cuts
        try:
            yield REPAIRED, repair(done, opts)
        except KdumpError as e:
            yield ERROR, e


def listed(check, group) -> list:
    """A worker sends a directory's events at once."""
    return list(check(group))


def light(r):
    """Keep what the summary and the repair need, not the per-segment transaction lists."""
    if r.scan is not None:
        r.scan.txn_events = []
        r.scan.epochs = []
    return r
