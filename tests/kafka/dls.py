"""Kafka's DumpLogSegments (kafka-dump-log.sh) run as an oracle, many files per JVM.

A JVM costs about half a second and the fixtures hold thousands of files, so
``DlsBatch.java`` (ours, compiled once into tests/kafka/target) calls DumpLogSegments.main once
per file inside one JVM, as ``kafka-dump-log.sh OPTIONS --files FILE`` would, and frames
each file's stdout and stderr. A file on which Kafka throws keeps the exception and the
others are unaffected. Results are cached per (files, options) for the session.

DumpLogSegments may write: it creates a missing ``.index`` next to a ``.timeindex``. Run it
on a copy (``copy_tree``), never on the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import javac
import kafka_jars

HERE = Path(__file__).resolve().parent
BATCH_SOURCE = HERE / "DlsBatch.java"
BATCH_CLASSES = HERE / "target" / "dls-batch"
# The suffixes DumpLogSegments dumps (after the last dot); it ignores any other file.
SUFFIXES = (".log", ".checkpoint", ".index", ".timeindex", ".snapshot", ".txnindex")
# One argv string may not exceed 128 KiB (Linux MAX_ARG_STRLEN): kdump's --files is cut below it.
MAX_FILES_ARG = 100_000
# stderr lines that name the file they are about (DumpLogSegments' closing summaries).
# (Kafka's Scala tool, up to 4.2, headed a .timeindex's missing entries "The following indexed
# offsets are not found in the log.", naming no file: such blocks come under the path "".)
_SUMMARY = re.compile(r"^(Mismatches in :|Found timestamp mismatch in :|Found out of order timestamp in :"
                      r"|The following indexed offsets are not found in :|Non-consecutive offsets in "
                      r"|The following indexed offsets are not found in the log\.)(.*)$")
_NOISE = re.compile(r"^(SLF4J\(?\w*\)?: |NOTE: Picked up JDK_JAVA_OPTIONS)")
_FRAME = re.compile(rb"@@dls (\d+) (\d+) ([01])\n")
# Java prints in the locale's charset unless told; values are UTF-8 text.
_ENV = {**os.environ, "JDK_JAVA_OPTIONS": "-Dstdout.encoding=UTF-8 -Dstderr.encoding=UTF-8"}
_cache: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, Dumped]] = {}


@dataclass
class Dumped:
    """What DumpLogSegments printed for one file."""

    stdout: list[str] = field(default_factory=list)       # from its "Dumping" line on
    stderr: list[str] = field(default_factory=list)       # its closing report (summary blocks)
    crash: str | None = None                               # the exception that ended it
    messages: list[str] = field(default_factory=list)     # other stderr lines (a corrupt snapshot's)


def accepted(path: str) -> bool:
    name = os.path.basename(path)
    return "." in name and name[name.rindex("."):] in SUFFIXES


def copy_tree(src: Path, dst: Path) -> Path:
    """A private copy of a fixture tree for DumpLogSegments to run on."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def run(files: list[str], options: tuple[str, ...] = ()) -> dict[str, Dumped]:
    """Dump each of ``files`` (paths DumpLogSegments accepts) with ``options``; one Dumped each."""
    key = (tuple(files), tuple(options))
    if key not in _cache:
        _cache[key] = _run(list(files), tuple(options))
    return _cache[key]


def _run(files: list[str], options: tuple[str, ...]) -> dict[str, Dumped]:
    if not files:
        return {}
    return dict(zip(files, run_jobs([(options, f) for f in files], kafka_jars.classpath())))


def run_jobs(jobs: list[tuple[tuple[str, ...], str]], classpath: str,
             main: str = "org.apache.kafka.tools.DumpLogSegments") -> list[Dumped]:
    """One JVM of ``main`` (DumpLogSegments' class) on ``classpath`` for many (options, file)
    jobs, many option sets in one run; one Dumped a job, in order."""
    classes = _compiled()
    lines = "".join("\t".join((*options, f)) + "\n" for options, f in jobs)
    proc = subprocess.run(["java", f"-Ddls.main={main}", "-cp", f"{classes}{os.pathsep}{classpath}", "DlsBatch"],
                          input=lines.encode(), capture_output=True, env=_ENV)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    result: list[Dumped] = []
    data, pos = proc.stdout, 0
    for _, f in jobs:
        m = _FRAME.match(data, pos)
        assert m, f"DlsBatch.java wrote no frame for {f}"
        n_out, n_err = int(m.group(1)), int(m.group(2))
        out = data[m.end():m.end() + n_out].decode("utf-8", "surrogateescape")
        err = data[m.end() + n_out:m.end() + n_out + n_err].decode("utf-8", "replace")
        pos = m.end() + n_out + n_err
        result.append(_dumped(out, err, m.group(3) == b"1"))
    return result


def _compiled() -> Path:
    """DlsBatch.java compiled once (the source launcher would pay javac per run). DlsBatch
    finds DumpLogSegments by name: it compiles without Kafka's jars."""
    return javac.compiled(BATCH_SOURCE, BATCH_CLASSES)


def _dumped(out: str, err: str, crashed: bool) -> Dumped:
    # Split on "\n" only: a value may hold "\r" or other line separators.
    lines = out.split("\n")
    if lines[-1] == "":
        lines.pop()
    errors = [x for x in err.split("\n") if x and not _NOISE.match(x)]
    crash = None
    if crashed:
        crash = errors.pop()
    summary, loose = split_stderr(errors)
    return Dumped(lines, [x for block in summary.values() for x in block], crash, loose)


def split_stdout(files: list[str], stdout: str) -> list[list[str]]:
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


def split_stderr(lines: list[str]) -> tuple[dict[str, list[str]], list[str]]:
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


def batches(files: list[str]) -> list[list[str]]:
    """``files`` cut into lists whose comma-joined form fits one argv string."""
    out: list[list[str]] = [[]]
    size = 0
    for f in files:
        if out[-1] and size + len(f) + 1 > MAX_FILES_ARG:
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f) + 1
    return [b for b in out if b]
