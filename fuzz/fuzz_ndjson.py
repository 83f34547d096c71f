"""Fuzz the NDJSON view's C renderer (jsonout.c: json_batch_line, json_records, json_v2_line,
json_v2_run, json_legacy_line) through ``kdump dump --json``, and its flat record objects
(flat_records, flat_v2_run) through ``kdump records --json`` (every encoding, read_committed,
--limit): input ``variant byte | segment``; the output must be Python's to the byte."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cli  # noqa: E402
import _common  # noqa: E402

VARIANTS = [["dump", "--json", "--records", "--data", "--encoding", encoding] for encoding in ("base64", "hex", "utf8")]
VARIANTS += [["dump", "--json", "--records"], ["dump", "--json"]]
VARIANTS += [["records", "--json", "--encoding", encoding] for encoding in ("base64", "hex", "utf8")]
VARIANTS += [["records", "--json", "--isolation", "read_committed"], ["records", "--json", "--limit", "3"],
             ["records", "--json", "--isolation", "read_committed", "--limit", "2"]]


def check(data: bytes) -> None:
    _cli.check_command(data, VARIANTS)


if __name__ == "__main__":
    _common.main(check)
