"""Builds the optional C accelerator; everything else is in pyproject.toml.

``optional=True``: without a compiler the install still succeeds and kdump runs on its
pure-Python code (kdump/format/accel.py decides at import).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kdump._speedups", ["kdump/_speedups.c"], optional=True,
                             extra_compile_args=["-O3"])])
