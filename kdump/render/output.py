"""Where and how a command writes: the resolved output format (table on a terminal, text when
piped, NDJSON with --json), stdout, colour, and notes on stderr."""

from __future__ import annotations

import os
import sys
from typing import Any

from kdump.errors import UsageError


class Output:
    """Where and how a command writes: the resolved format, stdout, and colour choice."""

    def __init__(self, json_flag: bool, fmt: str | None, color: str = "auto", quiet: bool = False,
                 stream: Any = None) -> None:
        if stream is None:
            # On a terminal, write to whatever sys.stdout is at the time: a progress bar on
            # the same terminal redirects it so the output scrolls above the bar.
            stream = _CurrentStdout() if isatty(sys.stdout) else sys.stdout
        self.stream = stream
        if json_flag:
            if fmt not in (None, "json"):
                raise UsageError(f"--json and --format {fmt} contradict each other: give one")
            fmt = "json"
        if fmt is None:
            fmt = "table" if isatty(self.stream) else "text"
        self.format = fmt
        self.on_terminal = isatty(self.stream)
        if self.on_terminal:
            # A terminal acts on what it is sent: whatever a renderer writes reaches it escaped
            # (render/escape.py), --escape none's bytes and JSON's raw characters included. A
            # pipe or a file gets the bytes as they are.
            from kdump.render.escape import TerminalStream

            self.stream = TerminalStream(self.stream, json=fmt == "json")
        self.quiet = quiet
        self.color = color

    @property
    def color_enabled(self) -> bool:
        if self.color == "never" or (self.color == "auto" and os.environ.get("NO_COLOR")):
            return False
        if self.color == "always":
            return True
        return isatty(self.stream)

    def console(self, stderr: bool = False):
        """A Rich console on stdout (or stderr) honouring --color and NO_COLOR."""
        from kdump.render.escape import console_class

        # Rich writes its own styles: it gets the terminal itself, and escapes what it is given.
        stream = sys.stderr if stderr else getattr(self.stream, "raw", self.stream)
        color = self.color_enabled if not stderr else (self.color != "never" and not os.environ.get("NO_COLOR")
                                                       and isatty(stream))
        width = None if isatty(stream) else pipe_width()
        # No markup, no emoji codes: file names, keys and values are printed as they are (a
        # "[red]" or ":smile:" in a path is text, not a style); the renderers style with Text
        # and style= instead.
        return console_class()(file=stream, no_color=not color, color_system="auto" if color else None,
                               force_terminal=True if self.color == "always" else None, highlight=False,
                               markup=False, emoji=False, soft_wrap=False, width=width)

    def note(self, message: str) -> None:
        """A diagnostic line on stderr (suppressed by --quiet), control characters escaped."""
        from kdump.render.diagnostics import say
        from kdump.render.escape import printable

        if not self.quiet:
            say(printable(message))


def pipe_width() -> int:
    """The width of a table asked for on a pipe (``kdump dump --format table | head``): COLUMNS,
    else the terminal's that stderr is on (the pipe's reader is most likely shown there), else
    160 (Rich's default 80 would cut a file's table for no one)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (2, 0):
        try:
            return os.get_terminal_size(fd).columns
        except (OSError, ValueError):
            continue
    return 160


def isatty(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _CurrentStdout:
    """sys.stdout, looked up at each call."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)
