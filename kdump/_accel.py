"""The one switch for kdump's optional C accelerator (kdump/_speedups/, built as
``kdump._speedups.native``).

The pure-Python code is the reference; the C functions are drop-in replacements for its
hot loops that hand every unusual case back to it (kdump/_speedups/speedups.h lists them,
each beside the Python module it twins). Callers ask ``native()`` when a call starts (a
walk, a segment, a batch), never at import and never per record, so ``use(False)`` sends
every later call down the Python path at once. ``KDUMP_NO_SPEEDUPS=1`` starts switched
off; the tests and CI run both ways (tests/speedups/ compares the two).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from kdump.model import Batch, Record

ENV_OFF = "KDUMP_NO_SPEEDUPS"


def _load() -> tuple[ModuleType | None, str | None]:
    try:
        from kdump._speedups import native

        native.init(Batch, Record)
    except Exception as e:  # noqa: BLE001 - not built, or built against another model: stay pure Python
        old = getattr(sys.modules.get("kdump._speedups"), "__file__", None)
        if old:     # the one-file build of before kdump/_speedups/ was a folder hides the folder
            return None, f"hidden by a stale {old}: delete it and reinstall (pip install -e .)"
        return None, f"not built ({type(e).__name__}: {e})"
    return native, None


_built, unavailable = _load()   # unavailable: why there is no native module, for diagnostics
_active = _built if os.environ.get(ENV_OFF, "") in ("", "0") else None


def native() -> ModuleType | None:
    """The native module while the accelerator is on, else None: take the Python path."""
    return _active


def built() -> ModuleType | None:
    """The native module whether switched on or not: only to undo what it did while on
    (a mapping it watches must be unwatched when closed)."""
    return _built


def use(on: bool = True) -> bool:
    """Switch the accelerator on (if built) or off for every call from now on.

    Returns whether it was on before, so that a caller can put it back.
    """
    global _active
    was = _active is not None
    _active = _built if on else None
    return was


@contextmanager
def using(on: bool) -> Iterator[None]:
    """``use(on)`` for the block, then back to what it was."""
    was = use(on)
    try:
        yield
    finally:
        use(was)


def status() -> str:
    """One line for ``--version``-like diagnostics and CI logs: on, or off and why."""
    if _active is not None:
        return f"on (CRC-32C: {_active.crc32c_impl})"
    if _built is not None:
        return f"off (switched off: {ENV_OFF}=1 or use(False))"
    return f"off ({unavailable})"


__all__ = ["ENV_OFF", "built", "native", "status", "unavailable", "use", "using"]
