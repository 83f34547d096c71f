"""How to install an optional extra (parquet, spark), in the exact words for this install.

From a clone installed with ``pip install -e .`` the command is that clone's editable
install with the extra (``.venv/bin/pip install -e '.[parquet]'``); otherwise the
package's (``pip install 'kdump[parquet]'``).
"""

from __future__ import annotations

import os
import sys

import kdump


def _clone_root() -> str | None:
    """The source checkout kdump runs from, if it does (an editable install)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(kdump.__file__)))
    return root if os.path.isfile(os.path.join(root, "pyproject.toml")) else None


def _short(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def install_hint(extra: str) -> str:
    root = _clone_root()
    if root is None:
        return f"pip install 'kdump[{extra}]'"
    pip = os.path.join(sys.prefix, "bin", "pip")
    pip = _short(pip) if os.path.exists(pip) else "pip"
    if pip != "pip" and os.sep not in pip:
        pip = f".{os.sep}{pip}"
    target = "." if os.path.abspath(os.getcwd()) == root else _short(root)
    return f"{pip} install -e '{target}[{extra}]'"


def require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        from kdump.errors import KdumpError

        raise KdumpError("Parquet export needs pyarrow (or use --format ndjson)",
                         hint=install_hint("parquet")) from None
