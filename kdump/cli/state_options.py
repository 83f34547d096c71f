"""Options shared by ``txn``, ``groups`` and ``metadata``: points in time and durations."""

from __future__ import annotations

import re
import time

import click

_DURATION = re.compile(r"^(\d+)(ms|s|m|min|h|d)?$")
_UNIT_MS = {"ms": 1, "s": 1000, None: 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


class Duration(click.ParamType):
    """``900``/``900s``, ``15m``, ``2h``, ``7d`` or ``500ms``; a bare number is seconds."""

    name = "duration"

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        m = _DURATION.match(str(value).strip().lower())
        if not m:
            self.fail(f"{value!r} is not a duration (e.g. 0, 90s, 15m, 2h, 7d)", param, ctx)
        return int(m.group(1)) * _UNIT_MS[m.group(2)]


def now_option(f):
    return click.option("--now", metavar="TIME",
                        help="The reference time for ages and expiry: epoch ms, ISO-8601 or 'clock' [default: the "
                             "newest record of the coordinator's topic here, so that a copy is judged as it stood "
                             "when it was taken; the clock when there is none].")(f)


def now_ms(value: str | None) -> int | None:
    """--now as epoch ms; None: judge at the newest record read (state/groups.reference_time)."""
    from kdump.cli.dump import parse_time

    if value is None:
        return None
    return int(time.time() * 1000) if value.strip().lower() == "clock" else parse_time(value)
