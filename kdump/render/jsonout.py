"""NDJSON lines of ``dump --json``: the C writer where it can, else the Python reference.

The batch and record objects themselves are built by ``kdump.export.ndjson`` (shared with
``kdump export``); this module only picks the writer. ``tests/speedups/test_speedups_json.py``
proves the two write the same lines, ``tests/export/test_row_schema.py`` that both follow
the one row schema of ``kdump.model``.
"""

from __future__ import annotations

from kdump import _accel
from kdump.decoders.views import PayloadView
from kdump.export.ndjson import py_batch_line
from kdump.model import Batch, Record

# The C writer of whole lines for a plain view (json_batch_line, kdump/_speedups/jsonout.c)
# takes these encodings; it answers None for what it does not write (legacy or control
# records, ...), and the Python code in kdump.export.ndjson, the reference, writes those.
C_ENCODINGS = {"base64": 0, "hex": 1, "utf8": 2}


def batch_line(file_json: str, b: Batch, records: list[Record] | None, view: PayloadView,
               error: str | None = None) -> str:
    if error is None and view.plain and (c := _accel.native()) is not None:
        line = c.json_batch_line(file_json, b, records, C_ENCODINGS.get(view.encoding, -1))
        if line is not None:
            return line
    return py_batch_line(file_json, b, records, view, error)
