"""Buffered line output for the text and NDJSON views: one write per few thousand lines or
per MiB, whichever comes first (a write per line costs more than the formatting)."""

from __future__ import annotations

import io
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


class ByteLines:
    """Lines kept as UTF-8 bytes (the C text renderer appends to ``buf`` itself), written to
    a plain text stream's binary buffer or to a stream that takes bytes (``write_bytes``: a
    -j worker's capture), or decoded back for any other (a terminal whose output a progress
    bar redirects)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.buf = bytearray()
        binary = getattr(stream, "buffer", None)
        utf8 = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"
        tty = getattr(stream, "isatty", None)
        if binary is None or not utf8 or not isinstance(stream, io.TextIOWrapper) or (tty is not None and tty()):
            binary = None
        self._binary = binary
        # A -j worker's capture takes the bytes as they are (kdump.jobs.ordered_output).
        self._write_bytes = getattr(stream, "write_bytes", None) if binary is None else None
        # What the stream would do with a character UTF-8 cannot encode (a name's surrogate).
        self._errors = (getattr(stream, "errors", None) or "strict") if binary is not None else "surrogatepass"

    def add(self, line: str) -> None:
        self.buf += line.encode("utf-8", self._errors)
        self.buf += b"\n"
        if len(self.buf) >= FLUSH_CHARS:
            self.write()

    def write(self) -> None:
        """Hand the buffered lines to the stream."""
        if self.buf:
            if self._binary is not None:
                self.stream.flush()             # what was written as text goes first
                self._binary.write(self.buf)
            elif self._write_bytes is not None:
                self._write_bytes(self.buf)
            else:
                self.stream.write(self.buf.decode("utf-8", "surrogatepass"))
            self.buf = bytearray()

    def flush(self) -> None:
        """Write and flush the stream: the end of a view."""
        self.write()
        self.stream.flush()
