"""What a person sees: tables, colour, progress, error lines, broken pipes, completion."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from kdump.errors import CorruptDataError, ExitStatus, InputError, UsageError
from support.run import GENERATED, ROOT, run_kdump

ANSI = "\x1b["


def test_table_view_exact_text(monkeypatch):
    """The Rich table on a fixed-width terminal, compared with a golden file."""
    monkeypatch.setenv("COLUMNS", "132")
    # A relative path: the title is centred, so its length must not depend on the checkout's.
    monkeypatch.chdir(GENERATED)
    r = run_kdump("dump", "headers-0", "--format", "table", "--data", "--color", "never")
    assert r.code == 0
    text = r.out
    golden = ROOT / "tests" / "golden" / "table-headers.txt"
    if os.environ.get("KDUMP_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert ANSI not in text


def test_colour_always_and_no_color(monkeypatch):
    args = ("dump", GENERATED / "torn-tail-0", "--format", "table")
    assert ANSI in run_kdump(*args, "--color", "always").out
    monkeypatch.setenv("NO_COLOR", "1")
    assert ANSI not in run_kdump(*args).out
    assert ANSI not in run_kdump(*args, "--color", "never").out


def test_progress_is_off_when_stderr_is_not_a_terminal():
    r = run_kdump("dump", GENERATED, "--records", "--json")
    assert r.err.strip().splitlines() == [line for line in r.err.strip().splitlines() if line.startswith("kdump:")]


def test_progress_appears_only_for_slow_work_on_a_terminal(monkeypatch):
    from kdump.render import progress as p
    from kdump.render.output import Output

    class Tty(io.StringIO):
        def isatty(self):
            return True

    fake_err = Tty()
    monkeypatch.setattr(sys, "stderr", fake_err)
    out = Output(False, "text", stream=io.StringIO())
    bar = p.Progress.for_output(out, 1000, "dump")
    assert bar.enabled
    bar.advance("a.log", 10)
    assert bar._bar is None                       # not shown before a second has passed
    monkeypatch.setattr(p, "SHOW_AFTER", 0.0)
    bar.advance("a.log", 500)
    assert bar._bar is not None
    bar.close()
    assert not p.Progress.for_output(Output(False, "text", quiet=True, stream=io.StringIO()), 1, "x").enabled
    assert not p.Progress.for_output(Output(True, None, stream=io.StringIO()), 1, "x").enabled   # --json | jq
    # Output to the same terminal no longer hides the bar: it scrolls above it.
    assert p.Progress.for_output(Output(False, "table", stream=Tty()), 1, "x").enabled
    assert p.Progress.for_output(Output(True, None, stream=Tty()), 1, "x").enabled


def test_error_line_per_class(tmp_path):
    # could not complete (3): a missing file
    r = run_kdump("dump", tmp_path / "missing.log")
    assert (r.code, r.err) == (3, f"kdump: error: {tmp_path / 'missing.log'}: cannot read: no such file or directory\n")
    # usage (2): a bad option, and a path with nothing to read
    r = run_kdump("dump", "--bogus")
    assert r.code == 2 and r.err.startswith("kdump: error: No such option") and "kdump: hint: try" in r.err
    # damage (1): located to the byte
    r = run_kdump("dump", GENERATED / "torn-tail-0")
    assert r.code == 1 and r.err.startswith(f"kdump: error: {GENERATED / 'torn-tail-0'}/00000000000000000000.log:667: ")
    # the classes themselves carry the exit status of the table
    assert (CorruptDataError.exit_code, UsageError.exit_code, InputError.exit_code) == (1, 2, 3)
    assert str(CorruptDataError("bad", file="f.log", position=7)) == "f.log:7: bad"


def test_internal_error_has_no_traceback(monkeypatch):
    import kdump.cli.dump as d

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(d, "run_dump", boom)
    r = run_kdump("dump", GENERATED / "zstd-v2-0")
    assert r.code == ExitStatus.INCOMPLETE
    assert r.err == "kdump: internal error: RuntimeError: kaboom (rerun with --debug for a traceback)\n"


def _big_partition(tmp_path):
    from kdump import encode as build

    d = tmp_path / "big-0"
    d.mkdir()
    batches = [build.build_v2_batch([(0, 1_700_000_000_000 + i, b"k", b"v" * 100)], base_offset=i)
               for i in range(20000)]
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    return d


def test_broken_pipe_is_quiet(tmp_path):
    d = _big_partition(tmp_path)
    p = subprocess.Popen([sys.executable, "-m", "kdump", "dump", str(d), "--records"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0
    assert err == ""


def test_bash_completion_script():
    env = {**os.environ, "_KDUMP_COMPLETE": "bash_source"}
    out = subprocess.run([sys.executable, "-m", "kdump"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "_kdump_completion" in out.stdout
    env = {**os.environ, "_KDUMP_COMPLETE": "bash_complete", "COMP_WORDS": "kdump du", "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-m", "kdump"], env=env, capture_output=True, text=True, timeout=60)
    assert "dump" in out.stdout


def test_version_does_not_import_click():
    code = "import sys; from kdump.cli import main\ntry: main(['--version'])\nexcept SystemExit: pass\n" \
           "print('click' in sys.modules, 'rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().endswith("False False"), out.stdout


def test_start_up_loads_no_import_hook():
    # pyproject's package-dir makes an editable install a plain .pth path entry; setuptools'
    # finder hook instead imports pathlib, re and importlib.util into every kdump command.
    code = ("import sys, kdump, kdump.cli; assert kdump.__file__\n"
            "print(sorted(m for m in sys.modules if 'editable' in m or m == 'pathlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout


def _entry_with(body: str) -> subprocess.CompletedProcess:
    """Run the console script's entry() with ``main`` replaced by a function of ``body``."""
    code = ("import atexit, sys, threading, time\nimport kdump.cli as cli\ndef fake_main():\n"
            + "".join(f"    {line}\n" for line in body.splitlines())
            + "cli.main = fake_main\ncli.entry()\nprint('entry() returned')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_the_console_script_ends_at_once_with_output_flushed_and_atexit_run():
    """entry() ends the process without the interpreter's teardown (15-20 ms), after doing
    what the teardown would have done that matters: atexit callbacks, flushed streams."""
    r = _entry_with("atexit.register(lambda: print('atexit ran'))\n"
                    "sys.stdout.write('not flushed yet, ')\nsys.stderr.write('err too')\nsys.exit(3)")
    assert (r.returncode, r.stdout, r.stderr) == (3, "not flushed yet, atexit ran\n", "err too")


def test_the_console_script_takes_the_usual_way_out_when_it_must():
    # A thread still running is waited for, before the atexit callbacks, as the interpreter does.
    r = _entry_with("atexit.register(lambda: print('atexit ran'))\n"
                    "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\nsys.exit(0)")
    assert (r.returncode, r.stdout) == (0, "thread done\natexit ran\n")
    # An exit that is not a status prints its message, as Python does.
    r = _entry_with("sys.exit('a message')")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "a message\n")
