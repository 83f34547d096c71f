"""``kdump help [COMMAND]``: the manual page, whatever way kdump was installed.

The page is generated from the commands themselves (kdump.cli.manpage), so it needs no
install path (an editable install puts nothing under share/man). It is shown with
``man -l``; without man(1) it is printed as plain text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import click

from kdump.cli.app import COMMANDS


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("command", required=False, type=click.Choice(sorted(COMMANDS)), metavar="[COMMAND]")
def help(command: str | None) -> int:  # noqa: A001 - the command's name
    """Show the manual page of kdump, or of COMMAND (through man, else as text)."""
    from kdump.cli.app import cli
    from kdump.cli.manpage import render

    ctx = click.Context(cli, info_name="kdump", **cli.context_settings)
    page = render(None, cli) if command is None else render(command, cli.get_command(ctx, command), ctx)
    man = shutil.which("man")
    if man is None:
        sys.stdout.write(plain(page))
        return 0
    with tempfile.TemporaryDirectory(prefix="kdump-man-") as tmp:
        path = os.path.join(tmp, "kdump.1" if command is None else f"kdump-{command}.1")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        sys.stdout.flush()
        return subprocess.call([man, "-l", path])


_FONT = re.compile(r"\\f[BIRP]")


def plain(roff: str) -> str:
    """The little roff the generated pages use, as plain text."""
    out: list[str] = []
    for line in roff.splitlines():
        if line.startswith(".SH "):
            out += ["", line[4:].strip('"')]
        elif line in (".PP", ".TP", ".IP"):
            out.append("")
        elif line.startswith((".TH", ".RS", ".RE", ".nf", ".fi", ".IP ")):
            continue
        else:
            text = _FONT.sub("", line).replace("\\(em", "—").replace("\\-", "-").replace("\\e", "\\")
            out.append(("       " + text) if text else "")
    return "\n".join(out).lstrip("\n") + "\n"
