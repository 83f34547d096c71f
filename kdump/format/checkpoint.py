"""Text checkpoint files (``CheckpointFile.java`` and its entry formatters).

::

    <version>
    <entry count>
    <entry>          one per line, fields separated by whitespace

Reading follows ``CheckpointReadBuffer``: an empty file, or one with a version line and
nothing else, has no entries; every line after the count is an entry (more lines than
the count is an error too); ``\\n``, ``\\r`` and ``\\r\\n`` end lines (``readLine``).
Errors carry the 1-based line number in ``position`` and Kafka's message text, with
``file_name`` standing in for the absolute path Kafka prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kdump.errors import InvalidFileError, UnknownFileKindError
from kdump.format.javanumber import INT32, INT64, clip, java_int

# The files' names, which are also their kinds.
LEADER_EPOCH = "leader-epoch-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_KINDS = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
                CLEANER_OFFSET_CHECKPOINT)
KINDS = (LEADER_EPOCH, *OFFSET_KINDS)
VERSION = 0      # the only version of every kind above

_LINE_END = re.compile(r"\r\n|\r|\n")
_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")      # Java's \s+, narrower than str.split()


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class OffsetEntry(NamedTuple):
    topic: str
    partition: int
    offset: int


def _lines(data: bytes, file_name: str) -> list[str]:
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        line = bytes(data[:e.start]).count(b"\n") + 1
        raise InvalidFileError(f"checkpoint file [{file_name}] is not valid UTF-8 (byte {e.start}, line {line})",
                               file=file_name, position=line) from None
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":       # the terminator of the last line does not start another
        lines.pop()
    return lines


def _parse_entry(line: str, kind: str) -> EpochEntry | OffsetEntry | None:
    if kind != LEADER_EPOCH:
        # The line a broker writes ("topic partition offset", single spaces, ASCII digits too
        # short to leave the range) without the regex split and Java's number rules: a log dir's
        # checkpoints list every partition. Anything else takes the general way below.
        parts = line.split(" ")
        if len(parts) == 3:
            topic, p, o = parts
            if (topic and p.isascii() and p.isdigit() and len(p) <= 9 and o.isascii() and o.isdigit()
                    and len(o) <= 18 and _WHITESPACE.search(topic) is None):
                return OffsetEntry(topic, int(p), int(o))
    # Java's split drops trailing empty strings but keeps a leading one.
    parts = _WHITESPACE.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    if kind == LEADER_EPOCH:
        if len(parts) != 2:
            return None
        epoch, offset = java_int(parts[0], INT32), java_int(parts[1], INT64)
        return None if epoch is None or offset is None else EpochEntry(epoch, offset)
    if len(parts) != 3:
        return None
    # Kafka lets a bad number escape as NumberFormatException; kdump reports the line as malformed.
    partition, offset = java_int(parts[1], INT32), java_int(parts[2], INT64)
    return None if partition is None or offset is None else OffsetEntry(parts[0], partition, offset)


def parse_checkpoint(data: bytes, kind: str, file_name: str | None = None) -> list:
    """Entries of a checkpoint file of ``kind`` (a name in KINDS): EpochEntry or OffsetEntry tuples."""
    return list(iter_checkpoint(_lines(data, file_name or kind), kind, file_name))


def iter_checkpoint(lines: Iterable[str], kind: str, file_name: str | None = None) -> Iterator:
    """``parse_checkpoint`` over lines (without their ends) as they are read: one entry at a
    time, so a file of 10 million lines costs no more memory than one. The errors come where
    the line at fault is reached (a wrong entry count, after the last line)."""
    if kind not in KINDS:
        raise UnknownFileKindError(f"unknown checkpoint kind {kind!r}; expected one of {', '.join(KINDS)}")
    name = file_name or kind

    def malformed(i: int, line: str) -> InvalidFileError:
        return InvalidFileError(f"Malformed line in checkpoint file [{name}]: {clip(line)}", file=file_name,
                                position=i + 1)

    it = iter(lines)

    def header(i: int) -> int | None:
        """The version (line 0) or the entry count (line 1); None at the end of the file."""
        line = next(it, None)
        if line is None:
            return None
        value = java_int(line, INT32)
        if value is None:
            raise malformed(i, line)
        return value

    version = header(0)
    if version is None:
        return
    if version != VERSION:
        raise InvalidFileError(f"Unrecognised version:{version}, expected version: {VERSION} in checkpoint file "
                               f"at: {name}", file=file_name, position=1)
    expected = header(1)
    if expected is None:
        return
    found = 0
    for i, line in enumerate(it, 2):
        entry = _parse_entry(line, kind)
        if entry is None:
            raise malformed(i, line)
        found += 1
        yield entry
    if found != expected:
        raise InvalidFileError(f"Expected [{expected}] entries in checkpoint file [{name}], but found only "
                               f"[{found}]", file=file_name, position=found + 2)


# The lines a broker writes in an offset checkpoint: "topic partition offset", single spaces,
# ASCII digits too short to leave the range, "\n" ends (``_parse_entry``'s shortcut, here over
# many lines at once in the regex engine: a log dir's checkpoints list every partition).
_USUAL_FIELDS = (r"[^ \t\n\x0b\f\r]+", "[0-9]{1,9}", "[0-9]{1,18}")     # (no Java whitespace in a topic)
_USUAL_LINES = re.compile("(?:" + " ".join(_USUAL_FIELDS) + "\n)*")


def usual_header(lines: list[str]) -> int | None:
    """The entry count of an offset checkpoint whose first two lines (without their ends) are
    ``lines``, when both are as a broker writes them (version 0, then the count); None
    otherwise (``iter_checkpoint`` then reads the file, and says what is wrong)."""
    if len(lines) != 2 or "\r" in lines[0] or "\r" in lines[1] or java_int(lines[0], INT32) != VERSION:
        return None
    return java_int(lines[1], INT32)


def usual_offset_fields(text: str) -> list[str] | None:
    """The fields of ``text`` (whole lines, each ending in "\n"), topic, partition and offset
    of each line one after another, when every line is the usual one; None otherwise. Each is
    as ``iter_checkpoint`` reads it: it is the reference, this a shortcut for the common file."""
    if _USUAL_LINES.fullmatch(text) is None:
        return None
    fields = text.replace("\n", " ").split(" ")    # (a space and a line end are the only separators)
    fields.pop()        # the empty string after the last line end
    return fields


def encode_checkpoint(entries: Iterable[EpochEntry | OffsetEntry | tuple]) -> bytes:
    """A checkpoint file as Kafka writes it (``\\n`` line ends, the platform's on Linux)."""
    entries = list(entries)
    return b"".join(iter_encoded(entries, len(entries)))


def iter_encoded(entries: Iterable[EpochEntry | OffsetEntry | tuple], count: int,
                 rows_per_chunk: int = 65536) -> Iterator[bytes]:
    """``encode_checkpoint`` in chunks, for ``count`` entries given as an iterator."""
    yield f"{VERSION}\n{count}\n".encode()
    rows: list[str] = []
    for entry in entries:
        rows.append(" ".join(str(field) for field in entry) + "\n")
        if len(rows) >= rows_per_chunk:
            yield "".join(rows).encode("utf-8")
            rows = []
    if rows:
        yield "".join(rows).encode("utf-8")


def encode_leader_epochs(entries: Iterable[EpochEntry | tuple[int, int]]) -> bytes:
    return encode_checkpoint(EpochEntry(*e) for e in entries)

