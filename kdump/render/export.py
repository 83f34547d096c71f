"""``kdump export``'s account of a run: the damage met, the rows written, where."""

from __future__ import annotations

import sys

from kdump.render.diagnostics import say
from kdump.render.escape import TerminalStream, printable
from kdump.render.output import isatty


def report_export(result, out: str, fmt: str, engine: str, json_flag: bool, quiet: bool) -> None:
    if json_flag:
        from kdump.export.ndjson import dumps

        stream = TerminalStream(sys.stdout, json=True) if isatty(sys.stdout) else sys.stdout
        obj = {"object": "export", "out": out, "format": fmt, "engine": engine, **result.to_dict()}
        stream.write(dumps(obj) + "\n")
    if result.unread:
        from kdump.export.outdir import SUCCESS
        from kdump.export.remote_out import UNREAD
        from kdump.render.diagnostics import error_line

        for e in result.unread:
            say(error_line(e))
        say(printable(f"kdump: {out} is incomplete: it holds the rest, with {UNREAD} (what was not read) "
                      f"instead of {SUCCESS}"))
    if quiet:
        return
    for message in result.errors:
        say(printable(f"kdump: damage: {message}"))
    if result.error_rows > len(result.errors):
        say(f"kdump: ... {result.error_rows - len(result.errors)} more error rows")
    from kdump.words import plural, rate

    say(printable(f"kdump: exported {plural(result.rows, 'row')} ({plural(result.error_rows, 'error row')}) from "
                  f"{plural(result.slices, 'slice')} to {out} as {fmt} with the {engine} engine "
                  f"{rate(result.rows, result.seconds + result.startup, 'rows')}"
                  + (f"; {result.startup:.1f} s of it starting and stopping Spark" if result.startup else "")))
