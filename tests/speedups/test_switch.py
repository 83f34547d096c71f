"""``kdump._accel.use()`` is the one switch of the C accelerator, read at call time.

With the switch off, a native module that fails on any use changes nothing: every
accelerated entry point took its Python path. With it on, a native module that records
its calls sees every one of its functions called by the same run, so no entry point was
left out of the first test (and a C function added without a caller fails here too).
Both runs must give the same results. A static check keeps the switch the only way in.
"""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

from kdump import _accel
from kdump.check.scan import scan_segment
from kdump.decoders.views import PayloadView
from kdump.encode import build_legacy_wrapper, build_v2_batch
from kdump.format import crc
from kdump.format import legacy as legacy_format
from kdump.format.records import decode_v2_payload
from kdump.format.walk import Walker, decode_records, entry_at_or_after, record_slices
from kdump.render import jsonout
from kdump.storage import mapped
from support.run import run_kdump, write_segment

KDUMP = Path(_accel.__file__).resolve().parent
NOW = 1_700_000_000_000
# Module functions that are no entry point: set-up, and the table-driven CRC kept for tests.
NOT_ENTRY_POINTS = {"init", "_crc32c_sw", "_crc32_sw"}


def _segments(tmp_path: Path) -> tuple[Path, Path, bytes]:
    batches = [build_v2_batch([(3 * n + i, NOW + i, b"k%d" % i, b"v" * (n + i)) for i in range(3)], base_offset=3 * n)
               for n in range(40)]
    v2 = write_segment(tmp_path / "v2-0", batches)
    for suffix, content in ((".index", b""), (".timeindex", bytes(12))):     # for verify's index checks
        v2.with_suffix(suffix).write_bytes(content)
    inner = [(i, NOW + i, b"k", b"value %d" % i) for i in range(5)]
    legacy = write_segment(tmp_path / "legacy-0", [build_legacy_wrapper(inner, magic=1, codec=1)])
    damaged = bytearray(v2.read_bytes())
    damaged[len(damaged) // 2:len(damaged) // 2 + 300] = b"\xff" * 300
    return v2, legacy, bytes(damaged)


def _avro_text() -> str:
    """An Avro datum as JSON text (kdump.schemas.avro_text), through avro_json when on."""
    pytest.importorskip("fastavro")
    from kdump.schemas import avro, avro_text
    from kdump.schemas.store import Schema, SchemaStore

    schema = '{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"s","type":"string"}]}'
    parsed = avro.parse(Schema(1, "AVRO", schema), SchemaStore())
    return avro_text.decode_text(parsed, b"\x00\x00\x00\x00\x01\x04\x02x", 5)


def _exercise(v2: Path, legacy: Path, damaged: bytes) -> list:
    """Every entry point the accelerator speeds up, once or more; what each gave."""
    out: list = [crc.crc32c(b"123456789"), crc.crc32c(b"x" * 100_000, 7)]
    for seg in (v2, legacy):
        data = seg.read_bytes()
        batches = list(Walker(data))                                        # scan_v2
        out.append(entry_at_or_after(data, 0, len(data) // 2, len(data)))  # v2_hop
        out.append([(b, decode_records(data, b)) for b in batches])         # decode_v2_records, decode_legacy_set
    first = next(iter(Walker(v2.read_bytes())))
    payload = v2.read_bytes()[first.position + 61:first.position + first.size]
    out.append(decode_v2_payload(payload, first))
    records = decode_records(v2.read_bytes(), first)
    out.append(jsonout.batch_line('"f"', first, records, PayloadView(encoding="base64")))  # json_batch_line
    out.append(scan_segment(damaged, base_offset=0, resync=True).to_dict())  # scan_plain_run, find_candidate
    out.append(_avro_text())                                                  # avro_json
    # the command line: the seeking reader, the dump writer, the SIGBUS watch of each mapping
    out.append(run_kdump("dump", "--records", "--data", "--json", v2))
    out.append(run_kdump("dump", "--files", f"{v2},{legacy}", "--print-data-log", "-j", "1"))   # text_item
    out.append(run_kdump("verify", "--json", v2))
    out.append(run_kdump("verify", "--json", v2.parent))                 # index_clean
    out.append(run_kdump("info", "--json", "-j", "1", v2, legacy))         # summarize_v2
    # a batch of more records than one slice: decoded and written a slice at a time
    big = write_segment(v2.parent.parent / "big-0", [build_v2_batch([(i, NOW, None, b"v%d" % i) for i in range(5000)])])
    out.append([len(s) for s in record_slices(big.read_bytes(), next(iter(Walker(big.read_bytes()))))])  # decode_v2_span  # noqa: E501
    out.append(run_kdump("dump", "--records", "--data", "--json", big))      # json_records
    out.append(run_kdump("dump", "--records", "--data", "--json", "-q", v2))   # json_v2_run (no gap report)
    # batches the runs decline: compressed v2 (one line a batch), and a legacy wrapper drawn
    # from its inner set
    lz4 = write_segment(v2.parent.parent / "lz4-0", [build_v2_batch([(i, NOW, None, b"z%d" % i) for i in range(3)],
                                                                    codec=3)])
    out.append(run_kdump("dump", "--records", "--data", "--json", "-q", lz4))   # json_v2_line
    out.append(run_kdump("dump", "--files", str(lz4), "--print-data-log"))     # text_item
    out.append(run_kdump("dump", "--records", "--data", "--json", "-q", legacy))   # json_legacy_line
    # kdump records' flat objects: a run of plain v2 batches, a wrapper's inner set
    out.append(run_kdump("records", "--json", v2, legacy))                  # flat_v2_run, flat_records
    # a wrapper of more messages than one slice, held whole, then read from a window of its stream
    many = build_legacy_wrapper([(i, NOW, None, b"w%d" % i) for i in range(5000)], magic=1, codec=1)
    out.append([len(s) for s in record_slices(many, next(iter(Walker(many))))])    # legacy_decode_span
    saved, legacy_format.STREAM_THRESHOLD = legacy_format.STREAM_THRESHOLD, 1 << 10
    try:
        out.append([len(s) for s in record_slices(many, next(iter(Walker(many))))])    # legacy_scan
    finally:
        legacy_format.STREAM_THRESHOLD = saved
    return out


class _Recording(types.ModuleType):
    """The native module, noting the name of every function called."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__("native_recording")
        self.called: set[str] = set()
        for name in dir(real):
            fn = getattr(real, name)
            if callable(fn) and not name.startswith("__"):
                setattr(self, name, self._noting(name, fn))
            elif not name.startswith("__"):
                setattr(self, name, fn)

    def _noting(self, name, fn):
        def call(*args):
            self.called.add(name)
            return fn(*args)
        return call


class _Untouchable(types.ModuleType):
    """A native module that fails on any use."""

    def __getattribute__(self, name):
        raise AssertionError(f"native.{name} used while the accelerator is off")


@pytest.fixture
def restore_switch(monkeypatch):
    monkeypatch.setattr(_accel, "_built", _accel._built)
    monkeypatch.setattr(_accel, "_active", _accel._active)
    # a fresh SIGBUS state, so that the command line installs the handler (catch_sigbus) again
    monkeypatch.setattr(mapped, "_sigbus", {"wanted": False, "installed": False})
    monkeypatch.setattr(mapped, "READ_BELOW", 0)      # map even these small files


def test_off_takes_the_python_path_everywhere_and_on_the_c_one(tmp_path, monkeypatch, restore_switch):
    real = _accel.built()
    if real is None:
        pytest.skip(f"C accelerator {_accel.unavailable}")
    files = _segments(tmp_path)

    recording = _Recording(real)
    monkeypatch.setattr(_accel, "_built", recording)
    _accel.use(True)
    fast = _exercise(*files)
    entry_points = {n for n in dir(real) if callable(getattr(real, n)) and not n.startswith("__")}
    assert recording.called == entry_points - NOT_ENTRY_POINTS

    monkeypatch.setattr(_accel, "_built", _Untouchable("native"))
    _accel.use(False)
    assert _accel.native() is None
    pure = _exercise(*files)
    assert pure == fast


def test_use_answers_the_previous_state_and_using_puts_it_back(restore_switch):
    was = _accel.use(False)
    assert _accel.native() is None and "off" in _accel.status()
    with _accel.using(True):
        assert _accel.native() is _accel.built()
    assert _accel.native() is None
    assert _accel.use(was) is False


def _module_level_calls(tree: ast.Module):
    """Calls made when the module is imported: top-level statements and class bodies."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def test_no_module_takes_the_native_functions_at_import():
    """Only kdump/_accel.py loads the native module; everyone else asks ``_accel.native()``
    when a call starts, never at import (a copy kept in a global would ignore the switch)."""
    bad = []
    for path in sorted(KDUMP.rglob("*.py")):
        if path.name == "_accel.py":
            continue
        where = path.relative_to(KDUMP.parent)
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            else:
                continue
            if any(n.startswith("kdump._speedups") or n in ("kdump._accel.native", "kdump._accel.built")
                   for n in names):
                bad.append(f"{where}:{node.lineno}: imports {sorted(names)}")
        for call in _module_level_calls(tree):
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("native", "built") \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "_accel":
                bad.append(f"{where}:{call.lineno}: _accel.{call.func.attr}() at import")
    assert not bad, bad
