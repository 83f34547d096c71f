"""Fuzz the segment scanner's C runs (scan.c: scan_plain_run, find_candidate) through
``kdump verify``: input ``variant byte | segment``; findings and verdict must be Python's."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402
import _common  # noqa: E402

VARIANTS = [["verify"], ["verify", "--json"]]


def check(data: bytes) -> None:
    _cli.check_command(data, VARIANTS)


if __name__ == "__main__":
    _common.main(check)
