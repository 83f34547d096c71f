"""Buffered line output for the text and NDJSON views: one write per few thousand lines or
per MiB, whichever comes first (a write per line costs more than the formatting)."""

from __future__ import annotations

from typing import TextIO

FLUSH_LINES = 2048
FLUSH_CHARS = 1 << 20       # large batches: keep each write (and its copy) about 1 MiB


class Lines:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.buf: list[str] = []
        self.chars = 0

    def add(self, line: str) -> None:
        self.buf.append(line)
        self.chars += len(line)
        if len(self.buf) >= FLUSH_LINES or self.chars >= FLUSH_CHARS:
            self.write()

    def write(self) -> None:
        """Hand the buffered lines to the stream."""
        if self.buf:
            self.buf.append("")
            self.stream.write("\n".join(self.buf))
            self.buf = []
            self.chars = 0

    def flush(self) -> None:
        """Write and flush the stream: the end of a view."""
        self.write()
        self.stream.flush()
