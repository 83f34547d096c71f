"""The ``kdump`` command: the entry point and the one place errors become exit statuses.

``main()`` is the CLI's one error handler: it maps every outcome to an exit status
(errors.py). A KdumpError prints ``kdump: error: <file>:<position>: <message>``
(``kdump.render.diagnostics``); a broken pipe is quiet; Ctrl-C exits
130; anything unexpected is reported as an internal error without a traceback unless
``--debug`` is given. ``kdump --version`` answers before Click is even imported.
"""

# No ``from __future__`` import: it would import a module before the handler is installed.
import _signal  # the C module: ``signal`` would import enum first, a window with no handler
import os
import sys


def _interrupted_starting(signum, frame) -> None:
    """Ctrl-C before the command runs (or after it is done): one line and 130, at once;
    a KeyboardInterrupt raised in an import would end in a traceback."""
    os.write(2, b"kdump: interrupted\n")
    os._exit(130)


# Installed first, before anything slow is imported, unless SIGINT was ignored (``nohup``,
# a background job); ``_run`` puts Python's handler back around the command itself.
_STARTING = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
if _STARTING:
    _signal.signal(_signal.SIGINT, _interrupted_starting)

from kdump import __version__  # noqa: E402
from kdump.errors import ExitStatus, Fatal, KdumpError  # noqa: E402


def __getattr__(name: str):
    # `kdump.cli.cli` (the Click group) is built on first use, keeping start-up light.
    if name in ("cli", "COMMANDS", "LazyGroup"):
        from kdump.cli import app

        return getattr(app, name)
    raise AttributeError(name)


def _printable(text: str) -> str:
    from kdump.render.escape import printable

    return printable(text)


def _debug_first(args: list[str]) -> list[str]:
    """``--debug`` is the group's option; accept it after the subcommand too (before ``--``)."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:end]:
        return args
    return ["--debug"] + [a for a in args[:end] if a != "--debug"] + args[end:]


def main(argv: list[str] | None = None) -> None:
    args = list(argv if argv is not None else sys.argv[1:])
    if args in (["--version"], ["-V"]):
        print(f"kdump, version {__version__}")
        sys.exit(0)
    args = _debug_first(args)
    debug = "--debug" in args or bool(os.environ.get("KDUMP_DEBUG"))
    _names_as_escapes()
    from kdump.render.diagnostics import quiet_broken_pipe
    from kdump.storage.mapped import exit_on_sigbus

    exit_on_sigbus()
    code = _run(args, debug)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # Everything was checked; only the last of the output was not read: keep the verdict.
        quiet_broken_pipe()
    sys.exit(int(code))


def entry() -> None:
    """The console script (and ``python -m kdump``): ``main()``, then the process ends at once.

    Tearing the interpreter down frees every module and object one at a time after the
    command is done, a serial cost no ``-j`` shortens; the kernel frees the memory in one go.
    Measured A/B, interleaved (2026-11-27, load 11): ``verify -q`` of bench_decode's 256 MiB
    segment takes 0.174 s of CPU ending here, 0.185 s through the teardown (+6.7%); of a 1 MB
    segment 0.130 s against 0.143 s. What the teardown would still do that matters is done
    first: the streams are flushed and the ``atexit`` callbacks run (Spark's gateway,
    multiprocessing's helpers). A thread still running, or an exit that is
    not a plain status, takes the usual way out."""
    try:
        main()
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        print("kdump: interrupted", file=sys.stderr)
        code = ExitStatus.INTERRUPTED
    else:
        code = 0
    if _STARTING:           # the run is over: an interrupt now only ends the teardown
        _signal.signal(_signal.SIGINT, _interrupted_starting)
    _exit_now(code)


def _exit_now(code) -> None:
    import atexit
    import threading

    if code is None:
        code = 0
    main_thread = threading.main_thread()
    if type(code) is not int or any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        raise SystemExit(code)      # (a thread is waited for before the atexit callbacks, as Python does)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            raise SystemExit(code) from None    # the teardown reports it as it always has
    os._exit(code)


def _names_as_escapes() -> None:
    """A file name that is not valid UTF-8 (kept by Python as surrogates) is printed as a
    \\udcXX escape rather than failing the run: in --json output it stays valid JSON, and
    os.fsencode() of the decoded string gives back the name's bytes."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass


def _run(args: list[str], debug: bool) -> int:
    """The command's exit status; every error it ends with becomes one line on stderr (the
    one error handler)."""
    import click

    from kdump.cli.app import cli
    from kdump.render.diagnostics import quiet_broken_pipe, report_error

    try:
        if _signal.getsignal(_signal.SIGINT) is _interrupted_starting:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)   # the command cleans up on Ctrl-C
        rv = cli.main(args=args, prog_name="kdump", standalone_mode=False)
        code = rv if isinstance(rv, int) else ExitStatus.OK
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.UsageError as e:
        if type(e).__name__ == "NoArgsIsHelpError" and e.ctx is not None:
            # Click >= 8.2 raises this for a bare `kdump`: the help is the answer, not an error.
            click.echo(e.ctx.get_help())
            return ExitStatus.OK
        # The same one-line style as every other error, with the way to more help.
        print(_printable(f"kdump: error: {e.format_message()}"), file=sys.stderr)
        if e.ctx is not None:
            print(f"kdump: hint: try '{e.ctx.command_path} --help'", file=sys.stderr)
        code = ExitStatus.USAGE
    except click.ClickException as e:
        print(_printable(f"kdump: error: {e.format_message()}"), file=sys.stderr)
        code = e.exit_code
    except click.exceptions.Abort as e:
        print("kdump: interrupted" if isinstance(e.__context__, KeyboardInterrupt) else "kdump: aborted",
              file=sys.stderr)
        code = ExitStatus.INTERRUPTED
    except KdumpError as e:
        if debug:
            import traceback

            traceback.print_exc()
        report_error(e)
        code = e.exit_code
    except Fatal as e:
        report_error(e.error)
        code = e.exit_code
    except BrokenPipeError:
        code = quiet_broken_pipe()
    except SystemExit as e:
        # Click turns EPIPE into exit(1) after wrapping stdout; for kdump the reader going
        # away (`kdump dump x | head`) is not damage: stay quiet and exit 0.
        if e.code == 1 and type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
            code = quiet_broken_pipe()
        else:
            raise
    except KeyboardInterrupt:
        print("kdump: interrupted", file=sys.stderr)
        code = ExitStatus.INTERRUPTED
    except Exception as e:  # noqa: BLE001 - the last line of defence: never a bare traceback
        if debug:
            raise
        print(_printable(f"kdump: internal error: {type(e).__name__}: {e} (rerun with --debug for a traceback)"),
              file=sys.stderr)
        code = ExitStatus.INCOMPLETE
    return code
