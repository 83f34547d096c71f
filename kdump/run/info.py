"""``kdump info``'s run: a summary per partition from batch headers, printed as each is done.

One remote log dir is summed up as its listing comes (``levels.walk``: a listing of many
pages hands its partitions on a piece at a time), the others once listed whole."""

from __future__ import annotations

import functools

from kdump.errors import ExitStatus, KdumpError, NothingToDoError
from kdump.jobs.fanout import in_process, ordered_map
from kdump.render.diagnostics import report_error, say
from kdump.render.escape import printable
from kdump.render.info import info_table, info_text
from kdump.render.progress import Progress
from kdump.run.schema_store import info_store, usage_of
from kdump.storage import fs
from kdump.storage.levels import NOTHING_HERE, expand, list_level, resolve, walk
from kdump.storage.logdir import BATCH_KINDS, directory_groups, is_bootstrap
from kdump.storage.mapped import file_size
from kdump.storage.remote import is_remote
from kdump.survey.summary import PartitionSummary, partition_summaries


def run_info(paths, out, *, schemas_path: str | None, jobs: int) -> int:
    if len(paths) == 1 and is_remote(paths[0]) and fs.kind(paths[0]) == "dir":
        return _run_walked(paths[0], out, schemas_path, jobs)
    unlisted: list = []         # partition dirs that cannot be listed: reported, the rest summed up
    bootstrap: list = []
    files = resolve(paths, kinds=BATCH_KINDS, jobs=jobs, errors=unlisted, left_out=bootstrap)
    run = _Run(out, paths, schemas_path, jobs)
    run.store()
    run.bootstrap(bootstrap)
    for e in unlisted:
        run.error(e)
    with Progress.for_paths(out, [f.path for f in files], "info") as run.progress:
        run.groups(directory_groups(files))
    return run.finish()


def _run_walked(path: str, out, schemas_path: str | None, jobs: int) -> int:
    """``run_info`` of one remote dir, each level summed up as ``walk`` hands it on."""
    run = _Run(out, [path], schemas_path, jobs)

    def visit(own, partitions) -> list[str]:
        files = [f for f in own if f.kind in BATCH_KINDS]
        run.bootstrap([f for f in files if is_bootstrap(f)])
        files = [f for f in files if not is_bootstrap(f)]
        listed, log_dirs, errors = list_level(partitions)
        for e in errors:
            run.error(e)
        files += [f for f in listed if f.kind in BATCH_KINDS]
        run.groups(directory_groups(files))
        return log_dirs

    with Progress.for_output(out, lambda: sum(file_size(f.path) for f in expand(path)), "info") as run.progress:
        walk(path, visit, kind="dir")
    if not run.found and run.status == ExitStatus.OK:
        raise NothingToDoError(NOTHING_HERE, file=path)
    return run.finish()


class _Run:
    """What the run has written so far: its exit status, and the summaries a table waits for."""

    def __init__(self, out, paths, schemas_path: str | None, jobs: int) -> None:
        self.out, self.paths, self.schemas_path, self.jobs = out, paths, schemas_path, jobs
        self.status = ExitStatus.OK
        self.summaries: list[PartitionSummary] = []
        self.found = False
        self.progress: Progress | None = None
        self._store = None
        self.checkpoints: dict = {}     # the log dirs' checkpoints, read once a run (a worker: once)

    def store(self):
        if self._store is None:
            self._store = (info_store(self.paths, self.schemas_path, self.out),)
        return self._store[0]

    def bootstrap(self, files) -> None:
        if files:
            self.store()        # (its notes first, as a whole listing gives them)
        for f in files:
            self.found = True
            self.out.note(printable(f"kdump: note: {f.path}: the KRaft bootstrap snapshot, not a partition "
                                    "(kdump dump reads it)"))

    def error(self, e: KdumpError) -> None:
        report_error(e)
        self.status = max(self.status, e.exit_code)

    def groups(self, groups) -> None:
        if not groups:
            return
        self.found = True
        out, progress, store = self.out, self.progress, self.store()
        here = in_process(groups, self.jobs)
        # A worker counts what it reads for the bar as it goes, and hands the count back.
        summary = functools.partial(_summary, cache=self.checkpoints)
        work = summary if here else progress.counted(summary)
        for group, result in zip(groups, ordered_map(work, groups, self.jobs)):
            s, counted = (result, 0) if here else result
            progress.unit_done((f.path for f in group[1]), counted)
            self.status = max(self.status, s.status, ExitStatus.DAMAGE if s.invalid_batches or s.trailing_bytes else 0)
            extra, line = usage_of(group[1], store)
            if out.format == "json":
                from kdump.export.ndjson import dumps

                out.stream.write(dumps({**s.to_dict(), **extra}) + "\n")
            elif out.format == "text":
                out.stream.write(info_text(s) + line)
            else:
                self.summaries.append(s)
            for p in s.problems:
                say(printable(f"kdump: error: {p}"))

    def finish(self) -> int:
        if self.summaries:
            info_table(self.out.console(), self.summaries)
        return int(self.status)


def _summary(group, cache: dict) -> PartitionSummary:
    return next(partition_summaries(group[1], cache))
