"""Builds the optional C accelerator; everything else is in pyproject.toml.

One extension, ``kdump._speedups.native``, from every C file in kdump/_speedups/ (one per
Python module it twins; speedups.h says which). ``optional=True``: without a compiler the
install still succeeds and kdump runs on its pure-Python code (kdump/_accel.py decides).
``KDUMP_NO_EXTENSION=1`` builds without it: a pure wheel, for other architectures
(packaging/zipapp.py). ``KDUMP_SANITIZE=1`` builds it under AddressSanitizer and
UndefinedBehaviorSanitizer instead of ``-O3`` (.ci/sanitize): a report aborts the process.
"""

import os
from pathlib import Path

from setuptools import Extension, setup

SOURCES = "kdump/_speedups"
SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
# The flags come after CFLAGS on the compiler's line, so setup.py's own optimisation level
# would override a sanitizer build's: that build takes SANITIZE alone.
sanitize = os.environ.get("KDUMP_SANITIZE") == "1"

setup(ext_modules=[] if os.environ.get("KDUMP_NO_EXTENSION") == "1" else [Extension(
    "kdump._speedups.native",
    sorted(str(p.as_posix()) for p in Path(SOURCES).glob("*.c")),
    depends=sorted(str(p.as_posix()) for p in Path(SOURCES).glob("*.h")),
    optional=True,
    extra_compile_args=(SANITIZE if sanitize else ["-O3"]) + ["-fvisibility=hidden"],
    extra_link_args=SANITIZE if sanitize else [],
)])
