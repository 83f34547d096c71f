"""Fuzz the text view's C renderer (text.c: text_item, text_v2_run, text_legacy_set) through
``kdump dump``: input ``variant byte | segment``; the output must be Python's to the byte."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402
import _common  # noqa: E402

VARIANTS = [["dump", "--deep-iteration", "--print-data-log"], ["dump", "--records"],
            ["dump", "--records", "--data", "--encoding", "hex"],
            ["dump", "--deep-iteration", "--skip-record-metadata"],
            ["dump", "--records", "--data", "--key-decoder", "long", "--value-decoder", "int"],
            ["dump", "--records", "--data", "--encoding", "base64"], ["dump"]]


def check(data: bytes) -> None:
    _cli.check_command(data, VARIANTS)


if __name__ == "__main__":
    _common.main(check)
