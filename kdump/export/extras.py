"""Parquet export's one optional library (pyarrow); the install hint is errors.install_hint."""

from __future__ import annotations

from kdump.errors import MissingExtraError


def require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise MissingExtraError("Parquet export needs pyarrow (or use --format ndjson)", "parquet") from None
