"""Builds the optional C accelerator; everything else is in pyproject.toml.

One extension, ``kdump._speedups.native``, from every C file in kdump/_speedups/ (one per
Python module it twins; speedups.h says which). ``optional=True``: without a compiler the
install still succeeds and kdump runs on its pure-Python code (kdump/_accel.py decides).
``KDUMP_NO_EXTENSION=1`` builds without it: a pure wheel, for other architectures
(packaging/zipapp.py).
"""

import os
from pathlib import Path

from setuptools import Extension, setup

SOURCES = "kdump/_speedups"

setup(ext_modules=[] if os.environ.get("KDUMP_NO_EXTENSION") == "1" else [Extension(
    "kdump._speedups.native",
    sorted(str(p.as_posix()) for p in Path(SOURCES).glob("*.c")),
    depends=sorted(str(p.as_posix()) for p in Path(SOURCES).glob("*.h")),
    optional=True,
    extra_compile_args=["-O3", "-fvisibility=hidden"],
)])
