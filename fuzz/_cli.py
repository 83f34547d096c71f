"""Shared by the harnesses of the C writers and scanners (text, ndjson, scan, info): a command
run in this process on a segment made of the input, with the C accelerator and without it.

The input is the bytes of a ``.log`` segment, its first byte choosing the command's options;
the oracle is the pure-Python reference: the same exit status, the same output to the byte,
the same error lines.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile

import _common
from _common import expect, pure_python

from kdump.cli import main

PARTITION = os.path.join(tempfile.mkdtemp(prefix="kdump-fuzz-"), "topic-0")
SEGMENT = os.path.join(PARTITION, "00000000000000000000.log")
os.makedirs(PARTITION, exist_ok=True)


def run(args: list[str]) -> tuple[object, bytes, bytes]:
    """(exit status, stdout, stderr) of ``kdump ARGS`` run in this process."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    code: object = 0
    try:
        main(args)
    except SystemExit as e:
        code = e.code
    finally:
        sys.stdout, sys.stderr = saved
    out.flush()
    err.flush()
    return code, out.buffer.getvalue(), err.buffer.getvalue()


def check_command(data: bytes, variants: list[list[str]], target: str = SEGMENT) -> None:
    """``kdump`` with the variant data[0] picks, on the segment data[1:]: C against Python."""
    if not data:
        return
    args = variants[data[0] % len(variants)] + [target]
    with open(SEGMENT, "wb") as f:
        f.write(data[1:])
    got = run(args)
    expect(got[0] in (0, 1, 2, 3), f"kdump {' '.join(args)} exited with {got[0]!r}: {got[2][-600:]!r}")
    if _common.has_accel():
        with pure_python():
            reference = run(args)
        expect(got == reference, f"kdump {' '.join(args[:-1])}: C gives {str(got)[:400]}, "
                                 f"pure Python {str(reference)[:400]}")
