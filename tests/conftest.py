"""Fixtures shared by the whole suite; helpers live in tests/kdumptest.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kdumptest import run_kdump  # noqa: E402


@pytest.fixture
def kdump():
    return run_kdump
