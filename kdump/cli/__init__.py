"""The ``kdump`` command: one Click group, commands imported only when used.

``main()`` is the single place where errors become exit statuses (errors.py): a
KdumpError prints ``kdump: error: <file>:<position>: <message>``; a broken pipe is quiet;
Ctrl-C exits 130; anything unexpected is reported as an internal error without a
traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from ..errors import ExitStatus, KdumpError

# name -> "module:attribute"; imported on first use so `kdump --version` stays fast.
COMMANDS = {
    "dump": "kdump.cli.dump:dump",
    "verify": "kdump.cli.verify:verify",
    "index": "kdump.cli.index:index",
    "timeindex": "kdump.cli.index:timeindex",
    "recover": "kdump.cli.recover:recover",
    "export": "kdump.cli.export:export",
    "info": "kdump.cli.info:info",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        import importlib.util

        module = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None or not self._available(name):
            return None
        import importlib

        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", "-V", prog_name="kdump")
@click.option("--debug", is_flag=True, envvar="KDUMP_DEBUG", help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Forensic toolkit for Apache Kafka log directories.

    Point it at a segment file, a partition directory or a whole broker log.dirs:
    dump what is on disk, verify it, check and rebuild indexes, plan or carry out a
    broker-style recovery, or export records to Parquet.

    \b
    Exit status: 0 clean, 1 damage found (or repaired), 2 usage error,
    3 could not complete (missing file, permission, codec library), 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def error_line(e: KdumpError) -> str:
    return f"kdump: error: {e}"


def _report(e: KdumpError) -> None:
    click.echo(error_line(e), err=True)
    if e.hint:
        click.echo(f"kdump: hint: {e.hint}", err=True)


def _quiet_broken_pipe() -> int:
    # Point stdout at devnull so the interpreter's final flush does not complain.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return ExitStatus.OK


def main(argv: list[str] | None = None) -> None:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:]) or bool(os.environ.get("KDUMP_DEBUG"))
    try:
        rv = cli.main(args=argv, prog_name="kdump", standalone_mode=False)
        code = rv if isinstance(rv, int) else ExitStatus.OK
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.ClickException as e:
        e.show()
        code = e.exit_code
    except click.exceptions.Abort:
        click.echo("kdump: aborted", err=True)
        code = ExitStatus.INTERRUPTED
    except KdumpError as e:
        if debug:
            import traceback

            traceback.print_exc()
        _report(e)
        code = e.exit_code
    except BrokenPipeError:
        code = _quiet_broken_pipe()
    except KeyboardInterrupt:
        click.echo("kdump: interrupted", err=True)
        code = ExitStatus.INTERRUPTED
    except Exception as e:  # noqa: BLE001 - the last line of defence: never a bare traceback
        if debug:
            raise
        click.echo(f"kdump: internal error: {type(e).__name__}: {e} (rerun with --debug for a traceback)", err=True)
        code = ExitStatus.INCOMPLETE
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _quiet_broken_pipe()
    sys.exit(int(code))
