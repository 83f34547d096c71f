"""A progress bar on stderr for work longer than about a second: bytes read, rate, ETA.

Shown whenever stderr is a terminal, for every command that reads data, unless --quiet,
KDUMP_NO_PROGRESS, or --json going to a pipe (a pipeline wants no decoration). When
stdout is the same terminal, what the command prints goes through the bar's console
(Rich's stdout redirection) and scrolls above the bar instead of tearing it.

How far a file has been read comes from the mappings themselves: a sequential reader
tells its mapping where it is (``mapped.listen``), so a 500 MB segment moves the bar
without any command passing positions around; commands only say when a file is done.

With ``-j`` the reading happens in forked workers, which inherit the listener: there it
adds to a counter shared with the parent (``shared`` is the bytes read in workers for
units not yet handed back), and a thread in the parent moves the bar from it, so the bar
moves by bytes as with ``-j 1``, not by partition. ``counted`` wraps a unit's function so
the worker hands back what it counted, which the parent then replaces by the unit's whole
size (``unit_done``): the bar never moves back. Rich is imported only once the bar is shown.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kdump.render.output import isatty
from kdump.storage import mapped

SHOW_AFTER = 1.0      # seconds: quick runs never flash a bar
POLL = 0.1            # seconds between the parent's looks at the workers' counter
FLUSH_BYTES = 1 << 20  # a worker adds to the shared counter at most once per MiB read


class Progress:
    def __init__(self, total_bytes: int, label: str, enabled: bool, stdout_tty: bool = False) -> None:
        self.total = max(total_bytes, 1)
        self.label = label
        self.enabled = enabled
        self.stdout_tty = stdout_tty
        self.completed = 0
        self._read: dict[str, int] = {}      # bytes read so far, per file (a file read twice counts once)
        self._started = time.monotonic()
        self._bar = None
        self._task = None
        self._pid = os.getpid()
        self._shared = None                  # multiprocessing.Value: bytes counted in workers, in flight
        self._pending = 0                    # in a worker: counted, not yet added to _shared
        self._unit = 0                       # in a worker: counted for the unit under way
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()        # the parent's thread and its poller both draw

    @classmethod
    def for_output(cls, out, total_bytes, label: str) -> Progress:
        """``total_bytes`` may be a function, called only if the bar can be shown (a stat per file)."""
        on = enabled(out)
        if callable(total_bytes):
            total_bytes = total_bytes() if on else 0
        return cls(total_bytes, label, on, isatty(sys.stdout))

    @classmethod
    def for_paths(cls, out, paths, label: str) -> Progress:
        return cls.for_output(out, lambda: sum(mapped.file_size(p) for p in paths), label)

    def advance(self, path: str, position: int) -> None:
        """``path`` has been read up to ``position`` (monotonic per file)."""
        if not self.enabled:
            return
        if self._take(path, position):
            self._show()

    def _take(self, path: str, position: int) -> bool:
        """Count ``path`` read up to ``position``; whether this process draws the bar."""
        before = self._read.get(path, 0)
        if position > before:
            self._read[path] = position
            if os.getpid() != self._pid:        # a forked worker: count for the parent's bar
                self._count(position - before)
                return False
            self.completed += position - before
        return os.getpid() == self._pid

    def begin_at(self, path: str, position: int) -> None:
        """``path`` is read from ``position`` on (a range of it): what lies before is another's."""
        if self.enabled:
            self._read[path] = max(self._read.get(path, 0), position)

    def done(self, path: str, size: int | None = None) -> None:
        """``path`` is finished (its whole size counts as read)."""
        if self.enabled:
            self.advance(path, mapped.file_size(path) if size is None else size)

    # -- workers (-j) -----------------------------------------------------------------------------

    def counted(self, fn: Callable[..., Any], ranged: bool = False) -> Callable[..., Any]:
        """``fn`` for ``ordered_map``/``ordered_output`` with workers: it also returns the bytes
        its worker counted for the unit, to give to ``unit_done`` with the unit's files.
        ``ranged`` (``ordered_map(ranged=True)``): ``fn`` returns (results, error) for a run of
        units, and the run's count goes with its first result."""
        if self.enabled and self._shared is None:
            import multiprocessing

            self._shared = multiprocessing.get_context("fork").Value("q", 0)
            self._poller = threading.Thread(target=self._poll, name="kdump-progress", daemon=True)
            self._poller.start()

        def run(*args):
            self._unit = 0
            result = fn(*args)
            self._flush()
            if not ranged:
                return result, self._unit
            results, raised = result
            return [(r, self._unit if i == 0 else 0) for i, r in enumerate(results)], raised
        return run

    def unit_done(self, paths: Iterable[str], counted: int) -> None:
        """A worker handed back a unit: its files count whole, what it counted in flight goes."""
        if not self.enabled:
            return
        with self._lock:        # both at once, as the bar's thread sees them: it never goes back
            for p in paths:
                self._take(p, mapped.file_size(p))
            if self._shared is not None and counted:
                with self._shared.get_lock():
                    self._shared.value -= counted
        self._show()

    def _count(self, n: int) -> None:
        self._unit += n
        self._pending += n
        if self._pending >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._shared is not None and self._pending and os.getpid() != self._pid:
            with self._shared.get_lock():
                self._shared.value += self._pending
        self._pending = 0

    def _poll(self) -> None:
        while not self._stop.wait(POLL):
            self._show()

    # -- the bar ----------------------------------------------------------------------------------

    def _show(self) -> None:
        if self._bar is None and time.monotonic() - self._started < SHOW_AFTER:
            return
        with self._lock:
            if self._bar is None:
                self._start()
            flight = self._shared.get_obj().value if self._shared is not None else 0    # a glance: no lock
            self._bar.update(self._task, completed=min(self.completed + max(flight, 0), self.total))

    def _start(self) -> None:
        from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn, TransferSpeedColumn
        from rich.progress import Progress as RichProgress

        from kdump.render.escape import console_class

        # What the bar's console is given is escaped too: the lines it carries above the bar.
        console = console_class()(file=sys.stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False,
                                  emoji=False)
        # Output to the same terminal is routed through the bar so it scrolls above it.
        self._bar = RichProgress(TextColumn("kdump {task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
                                 transient=True, redirect_stdout=self.stdout_tty, redirect_stderr=True)
        self._task = self._bar.add_task(self.label, total=self.total)
        self._bar.start()

    def close(self) -> None:
        self._stop.set()
        if self._poller is not None and self._poller.is_alive() and os.getpid() == self._pid:
            self._poller.join()
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None

    def __enter__(self) -> Progress:
        if self.enabled:
            mapped.listen(self.advance)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            mapped.listen(None)
        self.close()


def enabled(out) -> bool:
    """Whether a command writing through ``out`` may show a bar on stderr."""
    if out.quiet or os.environ.get("KDUMP_NO_PROGRESS") or not isatty(sys.stderr):
        return False
    return not (out.format == "json" and not isatty(out.stream))
