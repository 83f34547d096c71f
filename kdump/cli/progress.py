"""A progress bar on stderr for work longer than about a second: bytes read, rate, ETA.

Shown whenever stderr is a terminal, for every command that reads data, unless --quiet,
KDUMP_NO_PROGRESS, or --json going to a pipe (a pipeline wants no decoration). When
stdout is the same terminal, what the command prints goes through the bar's console
(Rich's stdout redirection) and scrolls above the bar instead of tearing it.

How far a file has been read comes from the mappings themselves: a sequential reader
tells its mapping where it is (``segment.listen``), so a 500 MB segment moves the bar
without any command passing positions around; commands only say when a file is done.
Rich is imported only once the bar is actually shown.
"""

from __future__ import annotations

import os
import sys
import time

from kdump.storage import segment

SHOW_AFTER = 1.0      # seconds: quick runs never flash a bar


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

    @classmethod
    def for_output(cls, out, total_bytes, label: str) -> Progress:
        """``total_bytes`` may be a function, called only if the bar can be shown (a stat per file)."""
        on = enabled(out)
        if callable(total_bytes):
            total_bytes = total_bytes() if on else 0
        return cls(total_bytes, label, on, _isatty(sys.stdout))

    @classmethod
    def for_paths(cls, out, paths, label: str) -> Progress:
        return cls.for_output(out, lambda: sum(segment.file_size(p) for p in paths), label)

    def advance(self, path: str, position: int) -> None:
        """``path`` has been read up to ``position`` (monotonic per file)."""
        if not self.enabled:
            return
        before = self._read.get(path, 0)
        if position > before:
            self._read[path] = position
            self.completed += position - before
        if self._bar is None:
            if time.monotonic() - self._started < SHOW_AFTER:
                return
            self._start()
        self._bar.update(self._task, completed=min(self.completed, self.total))

    def done(self, path: str, size: int | None = None) -> None:
        """``path`` is finished (its whole size counts as read)."""
        if self.enabled:
            self.advance(path, segment.file_size(path) if size is None else size)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn, TransferSpeedColumn
        from rich.progress import Progress as RichProgress

        console = Console(file=sys.stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
        # Output to the same terminal is routed through the bar so it scrolls above it.
        self._bar = RichProgress(TextColumn("kdump {task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
                                 transient=True, redirect_stdout=self.stdout_tty, redirect_stderr=True)
        self._task = self._bar.add_task(self.label, total=self.total)
        self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        if self.enabled:
            segment.listen(self.advance)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            segment.listen(None)
        self.close()


def enabled(out) -> bool:
    """Whether a command writing through ``out`` may show a bar on stderr."""
    if out.quiet or os.environ.get("KDUMP_NO_PROGRESS") or not _isatty(sys.stderr):
        return False
    return not (out.format == "json" and not _isatty(out.stream))


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
