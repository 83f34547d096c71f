"""The lines kdump writes on stderr about a run, and what a cut-off stdout means.

Every error becomes one line, ``kdump: error: <file>:<byte position>: <what>``, with its
hint (if any) on a second; ``kdump.cli.main`` uses these for the errors that end a run, the
commands' runs for the errors they report and carry on after.
"""

from __future__ import annotations

import os
import sys

from kdump.errors import ExitStatus, KdumpError
from kdump.render.escape import printable


def error_line(e: KdumpError) -> str:
    return printable(f"kdump: error: {e}")


def say(line: str) -> None:
    """One line on stderr, now (a note, an error, a summary): stderr is where the run speaks
    of itself, stdout holds only what was asked for. On a terminal a line wider than it is
    folded between words (the terminal would cut a word or a number in two), the rest
    indented; piped, it stays one line for grep."""
    err = sys.stderr
    try:
        tty = err.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        line = fold(line, _terminal_width())
    err.write(line + "\n")
    err.flush()


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def fold(line: str, width: int, indent: str = "  ") -> str:
    """``line`` cut between words into lines of at most ``width`` (a word longer than that, a
    path say, stands alone on its line, whole)."""
    if len(line) <= width or width < 20:
        return line
    import textwrap

    return "\n".join(textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                                    break_on_hyphens=False))


def report_error(e: KdumpError, hint: bool = True) -> None:
    """``e``'s line (and its hint's) on stderr."""
    say(error_line(e))
    if hint and e.hint:
        say(printable(f"kdump: hint: {e.hint}"))


def record_findings(out, findings) -> ExitStatus:
    """Findings about single records (``model.RecordFinding``: ``record_unknown_schema``) as
    every command shows them: a ``finding`` object a line on stdout with --json, else a
    located ``kdump: error:`` line on stderr; the exit status their classes give."""
    from kdump.findings import classes_status

    for f in findings:
        if out.format == "json":
            from kdump.export.ndjson import dumps

            out.stream.write(dumps(f.to_dict()) + "\n")
        else:
            say(printable(f"kdump: error: {f.line()}"))
    return classes_status(f.cls for f in findings)


def quiet_broken_pipe() -> int:
    """Point stdout at devnull so the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return ExitStatus.OK


def output_cut(status: int) -> int:
    """The reader of stdout went away (``kdump verify DIR | head -1``) before everything was
    checked: keep the status of what was checked if it found something, else 3 (could not
    complete): a cut verdict is never "clean"."""
    quiet_broken_pipe()
    return int(status) if status else ExitStatus.INCOMPLETE
