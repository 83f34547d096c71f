"""Every error kdump raises, and the exit status each one maps to.

Exit status (the same table is in the README and in kdump(1)):

====  ==========================================================================
0     clean: everything read was intact
1     damage found (also when it was repaired): corrupt, torn or inconsistent data
2     usage error: bad option, or a PATH that names nothing kdump can read
3     could not complete: missing file, permission, I/O error, codec library missing
130   interrupted (Ctrl-C)
====  ==========================================================================

An error carries the file and byte position it is about; ``str()`` gives the one-line
form ``<file>:<position>: <message>`` that the CLI prints after ``kdump: error:``.
"""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    DAMAGE = 1
    USAGE = 2
    INCOMPLETE = 3
    INTERRUPTED = 130


class KdumpError(Exception):
    """Base class: something kdump could not do."""

    exit_code: ExitStatus = ExitStatus.INCOMPLETE
    hint: str | None = None

    def __init__(self, message: str, *, file: str | None = None, position: int | None = None,
                 offset: int | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.position = position
        self.offset = offset
        if hint is not None:
            self.hint = hint

    def located(self, file: str | None = None, position: int | None = None) -> KdumpError:
        """Fill in where the error happened if the raiser did not know (returns self)."""
        if self.file is None and file is not None:
            self.file = file
        if self.position is None and position is not None:
            self.position = position
        return self

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.position is not None:
            where.append(str(self.position))
        prefix = ":".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


# -- damage: the bytes are not what Kafka would have written -------------------------------

class CorruptDataError(KdumpError):
    """The data is damaged or is not in a Kafka format."""

    exit_code = ExitStatus.DAMAGE


class TruncatedError(CorruptDataError, EOFError):
    """The data ends before a structure does."""


class InvalidRecordError(CorruptDataError):
    """A record inside a batch does not decode."""


class CodecError(CorruptDataError):
    """A compressed payload does not decompress."""


class DecompressionLimitError(CodecError):
    """A compressed payload expands beyond the configured limit (possible decompression bomb)."""


class RecordCountLimitError(InvalidRecordError):
    """A batch declares more records than --max-records-per-batch (possible record-count bomb)."""


class InvalidFileError(CorruptDataError):
    """An index, checkpoint, snapshot or metadata file is malformed."""


class DecodeError(CorruptDataError):
    """A payload decoder (offsets, transaction log, cluster metadata, json, int...) failed."""


class UnknownSchemaError(DecodeError):
    """An internal topic's record of a type, or a value version, kdump has no schema for (a
    newer Kafka's record, or damage): ``record_type`` (the key's type, the metadata apiKey)
    and ``version`` (None where it was not read). The record is skipped, its batch read on
    (``record_unknown_schema``)."""

    def __init__(self, message: str, record_type: int, version: int | None = None) -> None:
        super().__init__(message)
        self.record_type = record_type
        self.version = version


# -- could not complete ---------------------------------------------------------------------

class InputError(KdumpError):
    """A file could not be opened or read (missing, permission, I/O)."""

    exit_code = ExitStatus.INCOMPLETE


class RemoteError(InputError):
    """An object store or HDFS refused or failed (no bucket, no such key, an object changed
    while read): never damage. ``fatal``: the store itself is unusable (see StoreUnusable)."""

    fatal = False


class Fatal(BaseException):
    """An error that ends the whole run with ``error``'s one line, instead of being taken for
    one file's or one record's failure: a BaseException, so that no reader's ``except
    KdumpError`` catches it."""

    def __init__(self, error: KdumpError) -> None:
        super().__init__(error)
        self.error = error
        self.exit_code = error.exit_code

    def __str__(self) -> str:
        return str(self.error)


class StoreUnusable(Fatal):
    """An object store or HDFS cannot be used at all: credentials refused, access denied, no
    connection, no answer within the time limit. The run stops (exit 3) instead of reporting
    every file after it unreadable."""

    def __init__(self, error: RemoteError) -> None:
        super().__init__(error)


class OutOfMemoryError(InputError):
    """The records of a batch did not fit in memory: the command stops, located at the batch
    (it is not damage, and the rest would be incomplete)."""


class UnsupportedCodecError(KdumpError):
    """The Python library for a compression codec is not installed."""

    exit_code = ExitStatus.INCOMPLETE


class MissingExtraError(KdumpError):
    """An optional library that the command needs is not installed (exit 3, as for a codec):
    the hint is the install command for this install of kdump (``install_hint``)."""

    exit_code = ExitStatus.INCOMPLETE

    def __init__(self, message: str, extra: str, *, file: str | None = None) -> None:
        super().__init__(message, file=file, hint=install_hint(extra))
        self.extra = extra


# The distribution's name on PyPI: ``kdump`` there is an unrelated project.
DISTRIBUTION = "kafka-kdump"


def install_hint(extra: str) -> str:
    """The command that adds ``extra`` to this install: the clone's editable install when kdump
    runs from a source checkout, otherwise the package from PyPI."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isfile(os.path.join(root, "pyproject.toml")):
        return f"pip install '{DISTRIBUTION}[{extra}]'"
    pip = os.path.join(sys.prefix, "bin", "pip")
    if os.path.exists(pip):
        rel = os.path.relpath(pip)
        pip = rel if not rel.startswith("..") else pip
        if os.sep not in pip:
            pip = f".{os.sep}{pip}"
    else:
        pip = "pip"
    if os.path.abspath(os.getcwd()) == root:
        target = "."
    else:
        rel = os.path.relpath(root)
        target = rel if not rel.startswith("..") else root
    return f"{pip} install -e '{target}[{extra}]'"


class WriteError(KdumpError):
    """A repair could not be written safely."""

    exit_code = ExitStatus.INCOMPLETE


# -- usage ----------------------------------------------------------------------------------

class UsageError(KdumpError):
    """The command line asks for something kdump cannot do."""

    exit_code = ExitStatus.USAGE


class UnknownFileKindError(UsageError):
    """A PATH is not a file kind kdump reads (chosen by its name)."""


class NothingToDoError(UsageError):
    """A PATH holds no file the command works on."""
