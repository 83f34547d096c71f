"""The Click group of ``kdump``: commands are imported only when they are used."""

from __future__ import annotations

import click

from kdump import __version__

# name -> "module:attribute"; imported on first use so `kdump --version` stays fast.
COMMANDS = {
    "dump": "kdump.cli.dump:dump",
    "verify": "kdump.cli.verify:verify",
    "index": "kdump.cli.index:index",
    "timeindex": "kdump.cli.index:timeindex",
    "recover": "kdump.cli.recover:recover",
    "export": "kdump.cli.export:export",
    "info": "kdump.cli.info:info",
    "help": "kdump.cli.help:help",
    "txn": "kdump.cli.txn:txn",
    "groups": "kdump.cli.groups:groups",
    "metadata": "kdump.cli.metadata:metadata",
    "records": "kdump.cli.records:records",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        import importlib.util

        module = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            import difflib

            close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1) if args else []
            if close:
                e.message = f"{e.message} Did you mean '{close[0]}'?"
            raise

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
