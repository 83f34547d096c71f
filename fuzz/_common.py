"""Shared by the fuzz harnesses: the oracle helpers and the atheris entry point.

A harness module defines ``check(data: bytes) -> None``: it feeds ``data`` to one part
of kdump and raises only when kdump misbehaves (an exception that is not a KdumpError,
a broken invariant, or the C accelerator disagreeing with the pure-Python reference).
The same ``check`` replays committed regression inputs in the test suite, so it must
not need atheris; only ``main`` does.
"""

from __future__ import annotations

import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:          # run from a checkout without an installed kdump
    sys.path.insert(0, ROOT)

from kdump import _accel  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.format.codecs import Limits  # noqa: E402

# Small limits keep every input cheap; the limit logic is the same at any size.
LIMITS = Limits(ratio=64, floor=256 << 10, cap=4 << 20)


class Misbehaviour(AssertionError):
    """kdump returned something it should not have (as opposed to raising a KdumpError)."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Misbehaviour(message)


def pure_python() -> contextlib.AbstractContextManager[None]:
    """Run the block without the C accelerator (kdump reads the switch per call)."""
    return _accel.using(False)


def has_accel() -> bool:
    return _accel.native() is not None


def outcome(fn, *args, **kwargs):
    """``fn``'s result, or ("error", class name) if it raised a KdumpError; others propagate."""
    try:
        return fn(*args, **kwargs)
    except KdumpError as e:
        return ("error", type(e).__name__)


def main(check) -> None:
    """libFuzzer entry point: ``python fuzz/fuzz_x.py [corpus dirs] [-libfuzzer options]``."""
    import atheris

    # Coverage of kdump only: instrumenting the stdlib too adds noise, not useful paths.
    # Modules kdump imports lazily must be imported by the harness before this point.
    if os.environ.get("KDUMP_FUZZ_INSTRUMENT_ALL"):
        atheris.instrument_all()
    else:
        _instrument_kdump(atheris)
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


def _instrument_kdump(atheris) -> None:
    import gc
    import types

    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and (obj.__module__ or "").split(".")[0] == "kdump":
            try:
                atheris.instrument_func(obj)
            except Exception:  # noqa: BLE001 - an uninstrumentable function still runs
                pass
