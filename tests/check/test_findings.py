"""The one registry of finding kinds: every kind emitted is declared, and the docs list them all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kdump import findings
from kdump.findings import CLASSES, KINDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh():
    findings.undeclared.clear()
    yield


def test_every_kind_has_a_class_and_a_doc():
    assert KINDS
    for k in KINDS.values():
        assert k.cls in CLASSES and k.doc and k.name == k.name.lower()


def _emitting_calls(tree):
    """Calls that create a finding: Finding(kind, ...), and the emit helpers that take a kind first."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in ("Finding", "add", "_fault", "_halt"):
                yield name, node.args[0]


def test_no_emitter_spells_a_kind_of_its_own():
    """Kinds come from kdump.findings (or format.walk's stops, declared there): no string
    literal, no f-string as the kind of a new finding."""
    bad = []
    for path in sorted((ROOT / "kdump").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for name, arg in _emitting_calls(tree):
            if isinstance(arg, (ast.JoinedStr, ast.Constant)) and not (
                    isinstance(arg, ast.Constant) and not isinstance(arg.value, str)):
                if name == "add" and path.name != "scan.py":
                    continue          # set.add etc.
                bad.append(f"{path.relative_to(ROOT)}:{arg.lineno}")
    assert not bad, bad


def test_walk_stops_are_declared():
    from kdump import findings
    from kdump.format import walk

    for name in ("TORN_TAIL", "TRAILING_BYTES", "INVALID_SIZE", "INVALID_MAGIC", "INVALID_BATCH"):
        assert getattr(walk, name) in KINDS
        assert getattr(walk, name) is getattr(findings, name)     # one home: the walk takes them from findings


def test_an_undeclared_kind_is_caught():
    from kdump.model import Finding

    assert Finding("no_such_kind", None, None, "x").to_dict()["class"] == "damage"
    assert findings.undeclared == {"no_such_kind"}
    findings.undeclared.clear()


def test_docs_and_man_page_list_the_registry():
    readme = (ROOT / "docs" / "findings.md").read_text()
    man = (ROOT / "man" / "kdump-verify.1").read_text()
    for k in KINDS.values():
        assert f"| `{k.name}` | {k.cls} | {k.doc.replace('|', '/')} |" in readme, k.name
        assert f"\\fB{k.name.replace('-', chr(92) + '-')}\\fR ({k.cls})" in man, k.name
