"""Ctrl-C at any moment of kdump's start: exit 130 and one line, never a traceback.

A SIGINT 20-130 ms after launch used to end in a Python traceback (``KeyboardInterrupt``
raised inside an import, before the command's error handler was entered). kdump's first
line now installs a handler that prints one line and exits 130; the command's own run puts
Python's handler back, so an interrupted repair still cleans up.

The interpreter's own start-up, before the first line of kdump runs, is not kdump's: a
SIGINT before Python installs any handler kills the process (the shell shows 130), and
one in the few milliseconds of ``site`` can still print the interpreter's traceback. Nor is
the handful of bytecodes in kdump's own prologue, before its handler exists: no Python code
can install a handler before its first line runs, and a signal that came in while the import
system was still loading the module is acted on at that first line (CI saw it at the line
that installs the handler). Those outcomes are recognised by their frames: none of them is in
kdump's code past the handler's installation.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KDUMP = Path(sys.executable).parent / "kdump"
PACKAGE = str(ROOT / "kdump")


def _outcome(delay: float) -> tuple[int, str] | None:
    # SIGINT as a terminal leaves it, whatever the test run inherited (a background job ignores it).
    p = subprocess.Popen([str(KDUMP), "verify", "--deep", str(ROOT / "fixtures" / "generated")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    if p.poll() is not None:            # the run was over before the signal: nothing to interrupt
        p.communicate()
        return None
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    if p.returncode in (0, 1) and "kdump: verified " in err and "interrupted" not in err:
        return None                     # it ended between the look and the signal
    return p.returncode, err


def _before_kdump(code: int, err: str) -> bool:
    """Interrupted before kdump's first line ran: killed by the signal with nothing said, or
    the interpreter's own report (a traceback, or a bare ``KeyboardInterrupt`` while its
    streams are not set up yet) with no frame in kdump's package."""
    if code == -signal.SIGINT and err == "":
        return True
    if "KeyboardInterrupt" not in err:
        return False
    frames = [line.strip() for line in err.splitlines() if line.lstrip().startswith("File ")]
    ours = [f for f in frames if PACKAGE in f]
    return not ours or _in_prologue(ours[-1])


def _handler_line() -> int:
    """The line of kdump/cli/__init__.py that installs the start-up handler."""
    source = (ROOT / "kdump" / "cli" / "__init__.py").read_text().splitlines()
    return next(n for n, line in enumerate(source, 1)
                if line.strip() == "_signal.signal(_signal.SIGINT, _interrupted_starting)")


def _in_prologue(frame: str) -> bool:
    """A traceback frame (``File "...", line N, in <module>``) in the code that runs before
    kdump's handler exists: the package's __init__, or kdump.cli's lines up to the handler."""
    match = re.fullmatch(r'File "(.+)", line (\d+), in (.+)', frame)
    if match is None or match.group(3) != "<module>":
        return False
    path, line = Path(match.group(1)).resolve(), int(match.group(2))
    if path == ROOT / "kdump" / "__init__.py":
        return True
    return path == ROOT / "kdump" / "cli" / "__init__.py" and line <= _handler_line()


@pytest.mark.skipif(not KDUMP.exists(), reason="the console script is not installed next to this Python")
def test_sigint_at_any_moment_of_start_up_exits_130_with_one_line():
    # The signal's moments span kdump's start-up as this machine runs it now (5 ms apart on a
    # quiet one: 0..150 ms), so that a loaded machine is sampled inside its start-up too.
    started = time.monotonic()
    subprocess.run([str(KDUMP), "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    step_s = max(0.005, (time.monotonic() - started) / 20)
    ours = 0
    for step in range(31):
        outcome = _outcome(step * step_s)
        if outcome is None:
            continue
        code, err = outcome
        if _before_kdump(code, err):
            continue
        lines = [line for line in err.splitlines() if line]     # (Click closes the ^C echo with a blank line)
        assert (code, lines) == (130, ["kdump: interrupted"]), (step * step_s, code, err)
        ours += 1
    assert ours >= 10, "too few runs reached kdump's code before the signal"


def test_the_run_itself_still_cleans_up_on_ctrl_c():
    """Past start-up, Ctrl-C is Python's KeyboardInterrupt again: main() catches it (130)."""
    import _signal

    from kdump import cli
    from support.run import run_kdump

    before = _signal.signal(_signal.SIGINT, cli._interrupted_starting)     # as at start-up
    try:
        r = run_kdump("verify", str(ROOT / "fixtures" / "generated" / "zstd-v2-0"))
        assert r.code == 0
        assert _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
    finally:
        _signal.signal(_signal.SIGINT, before)
