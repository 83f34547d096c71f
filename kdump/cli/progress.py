"""A progress bar on stderr for work longer than about a second.

Off when stderr is not a terminal, with --quiet, or when the command's own output is
going to the same terminal (the output is the progress then). Rich is imported only once
the bar is actually shown.
"""

from __future__ import annotations

import os
import sys
import time

SHOW_AFTER = 1.0      # seconds: quick runs never flash a bar


class Progress:
    def __init__(self, total_bytes: int, label: str, enabled: bool) -> None:
        self.total = max(total_bytes, 1)
        self.label = label
        self.enabled = enabled
        self.done_before = 0          # bytes of files already finished
        self._started = time.monotonic()
        self._bar = None
        self._task = None

    @classmethod
    def for_output(cls, out, total_bytes, label: str) -> Progress:
        """``total_bytes`` may be a function, called only if the bar can be shown (a stat per file)."""
        stderr_tty = _isatty(sys.stderr)
        stdout_tty = _isatty(out.stream)
        enabled = stderr_tty and not out.quiet and not stdout_tty and not os.environ.get("KDUMP_NO_PROGRESS")
        if callable(total_bytes):
            total_bytes = total_bytes() if enabled else 0
        return cls(total_bytes, label, enabled)

    def update(self, position_in_file: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._started < SHOW_AFTER:
                return
            self._start()
        self._bar.update(self._task, completed=self.done_before + position_in_file)

    def file_done(self, size: int) -> None:
        self.done_before += size
        self.update(0)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress as RichProgress, TextColumn,
                                   TimeRemainingColumn, TransferSpeedColumn)

        console = Console(file=sys.stderr, no_color=bool(os.environ.get("NO_COLOR")))
        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(), console=console, transient=True)
        self._task = self._bar.add_task(self.label, total=self.total)
        self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
