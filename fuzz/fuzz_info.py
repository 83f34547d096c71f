"""Fuzz the summary's C pass (info.c: summarize_v2) through ``kdump info`` on a partition of one
segment: input ``variant byte | segment``; the summary must be Python's."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402
import _common  # noqa: E402

VARIANTS = [["info"], ["info", "--json"]]


def check(data: bytes) -> None:
    _cli.check_command(data, VARIANTS, _cli.PARTITION)


if __name__ == "__main__":
    _common.main(check)
