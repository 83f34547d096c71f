"""Kafka's DumpLogSegments (kafka-dump-log.sh) run as an oracle, many files per JVM.

A JVM costs about half a second and the fixtures hold thousands of files, so files are
passed in batches through one ``--files a,b,c`` argument and the output is cut back into
one ``Dumped`` per file: DumpLogSegments prints ``Dumping <file>`` before each file, and
its closing summaries on stderr (index mismatches, non-consecutive offsets) name the
file's absolute path. When DumpLogSegments dies on a file (an exception ends the JVM and
loses the summaries of the whole batch), that file keeps the exception and the files
around it are run again without it.

DumpLogSegments may write: it creates a missing ``.index`` next to a ``.timeindex``. Run it
on a copy (``copy_tree``), never on the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import kafka_jars

MAIN = "org.apache.kafka.tools.DumpLogSegments"
# The suffixes DumpLogSegments dumps (after the last dot); it ignores any other file.
SUFFIXES = (".log", ".checkpoint", ".index", ".timeindex", ".snapshot", ".txnindex")
# One argv string may not exceed 128 KiB (Linux MAX_ARG_STRLEN); stay well below.
MAX_FILES_ARG = 100_000
# stderr lines that name the file they are about (DumpLogSegments' closing summaries).
_SUMMARY = re.compile(r"^(Mismatches in :|Found timestamp mismatch in :|Found out of order timestamp in :"
                      r"|The following indexed offsets are not found in :|Non-consecutive offsets in )(.*)$")
_NOISE = re.compile(r"^(SLF4J: |NOTE: Picked up JDK_JAVA_OPTIONS)")
# Java prints in the locale's charset unless told; values are UTF-8 text.
_ENV = {**os.environ, "JDK_JAVA_OPTIONS": "-Dstdout.encoding=UTF-8 -Dstderr.encoding=UTF-8"}


@dataclass
class Dumped:
    """What DumpLogSegments printed for one file."""

    stdout: list[str] = field(default_factory=list)       # from its "Dumping" line on
    stderr: list[str] = field(default_factory=list)       # summary blocks naming this file, in order
    crash: str | None = None                               # the exception that ended the JVM here


def accepted(path: str) -> bool:
    name = os.path.basename(path)
    return "." in name and name[name.rindex("."):] in SUFFIXES


def copy_tree(src: Path, dst: Path) -> Path:
    """A private copy of a fixture tree for DumpLogSegments to run on."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _batches(files: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for f in files:
        if out[-1] and size + len(f) + 1 > MAX_FILES_ARG:
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f) + 1
    return [b for b in out if b]


def run(files: list[str], options: tuple[str, ...] = ()) -> dict[str, Dumped]:
    """Dump ``files`` (absolute paths DumpLogSegments accepts) with ``options``; one Dumped each."""
    result: dict[str, Dumped] = {}
    for batch in _batches(list(files)):
        _run_batch(batch, tuple(options), result)
    return result


def _run_batch(files: list[str], options: tuple[str, ...], result: dict[str, Dumped]) -> None:
    if not files:
        return
    proc = kafka_jars.java(MAIN, *options, "--files", ",".join(files), text=False, env=_ENV)
    # Bytes, split on "\n" only: a value may hold "\r" or other line separators.
    per_file = _split_stdout(files, proc.stdout.decode("utf-8", "surrogateescape"))
    errors = [line for line in proc.stderr.decode("utf-8", "replace").split("\n")
              if line and not _NOISE.match(line)]
    if proc.returncode != 0:
        # The JVM died in the last file it announced; the others lost their summaries.
        k = max(len(per_file) - 1, 0)
        result[files[k]] = Dumped(per_file[k] if per_file else [], [], "\n".join(errors))
        _run_batch(files[:k], options, result)
        _run_batch(files[k + 1:], options, result)
        return
    by_path, loose = _split_stderr(errors)
    if loose and len(files) > 1:
        # Lines that name no file (a corrupt producer snapshot's message): halve until each
        # batch holds one file, so every line is attributed to the file that printed it.
        half = len(files) // 2
        _run_batch(files[:half], options, result)
        _run_batch(files[half:], options, result)
        return
    for i, f in enumerate(files):
        stderr = by_path.get(os.path.abspath(f), []) + (loose if len(files) == 1 else [])
        result[f] = Dumped(per_file[i] if i < len(per_file) else [], stderr)


def _split_stdout(files: list[str], stdout: str) -> list[list[str]]:
    """The lines of each file in turn, cut at the expected ``Dumping <file>`` headers."""
    out: list[list[str]] = []
    nxt = 0
    lines = stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if nxt < len(files) and line == f"Dumping {files[nxt]}":
            out.append([])
            nxt += 1
        if out:
            out[-1].append(line)
    return out


def _split_stderr(lines: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Summary blocks by the absolute path they name, and the lines that name none."""
    by_path: dict[str, list[str]] = {}
    loose: list[str] = []
    current: list[str] | None = None
    for line in lines:
        m = _SUMMARY.match(line)
        if m:
            current = by_path.setdefault(m.group(2), [])
            current.append(line)
        elif current is not None and (line.startswith("  ") or line.startswith("Indexed offset: ")):
            current.append(line)
        else:
            current = None
            loose.append(line)
    return by_path, loose
