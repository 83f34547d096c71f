"""The shape of the package: layers, no import cycles, small modules.

Every import kdump makes, function-level ones included, is read with ``ast``. A package may
import its own modules and the floors below it, never one above: the folder list is the
architecture. ``LAYERS`` is that rule written once; docs/architecture.md says
the same in words.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

KDUMP = Path(__file__).resolve().parents[1] / "kdump"

# Floor by floor, lowest first. A unit is a top-level module or subpackage of kdump.
LAYERS = [
    ("words", "tables"),
    ("errors",),
    ("findings", "jobs"),
    ("model",),
    ("_accel", "_speedups"),
    ("format",),
    ("decoders", "storage"),
    ("schemas",),
    ("encode", "check"),
    ("repair", "state", "export", "survey"),
    ("render",),
    ("run",),
    ("spark",),
    ("cli",),
    ("__main__",),
]
FLOOR = {unit: n for n, units in enumerate(LAYERS) for unit in units}

MAX_MODULE_LINES = 400
MAX_COMMAND_LINES = 150
# Known exceptions to the rules above (none today; an entry here must say why).
OVERSIZED: dict[str, int] = {}
UPWARD: set[tuple[str, str]] = set()
CYCLES: list[list[str]] = []


def _modules() -> dict[str, Path]:
    mods = {}
    for p in KDUMP.rglob("*.py"):
        parts = list(p.relative_to(KDUMP.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the kdump modules it imports (anywhere in it), resolved to real modules."""
    def known(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                if t.split(".")[0] == "kdump" and (m := known(t)) and m != name:
                    graph[name].add(m)
    return graph


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_unit_has_a_floor():
    units = {_unit(m) for m in _modules()} - {""}
    assert units <= set(FLOOR), f"put these in LAYERS: {sorted(units - set(FLOOR))}"


def test_no_upward_imports():
    graph = _imports(_modules())
    upward = set()
    for src, targets in graph.items():
        for dst in targets:
            a, b = _unit(src), _unit(dst)
            if a != b and b and (a == "" or FLOOR[b] >= FLOOR[a]):
                upward.add((src, dst))
    assert upward <= UPWARD, f"imports that go up or sideways: {sorted(upward - UPWARD)}"
    assert UPWARD <= upward, f"fixed, take them off UPWARD: {sorted(UPWARD - upward)}"


def test_no_import_cycles():
    graph = _imports(_modules())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:       # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(_modules()):
        if v not in index:
            visit(v)
    assert sorted(cycles) == CYCLES, f"import cycles: {cycles}"


def test_modules_and_commands_are_small():
    sizes = {}
    for name, path in _modules().items():
        limit = MAX_COMMAND_LINES if name.startswith("kdump.cli.") and _is_command(path) else MAX_MODULE_LINES
        n = len(path.read_text().splitlines())
        if n > limit:
            sizes[name] = n
    grown = {m: n for m, n in sizes.items() if n > OVERSIZED.get(m, 0)}
    assert not grown, f"over {MAX_MODULE_LINES} lines (commands {MAX_COMMAND_LINES}): {grown}"
    assert set(OVERSIZED) <= set(sizes), f"now small, take off OVERSIZED: {sorted(set(OVERSIZED) - set(sizes))}"


def _is_command(path: Path) -> bool:
    return "@click.command" in path.read_text() or ".command(" in path.read_text()


def test_kdump_never_imports_its_test_builders():
    graph = _imports(_modules())
    users = sorted(m for m, ts in graph.items() if "kdump.encode" in ts)
    assert not users, f"kdump.encode is for tests, fuzzers and benchmarks only: {users}"


def test_the_architecture_doc_shows_every_package():
    doc = (KDUMP.parent / "docs" / "architecture.md").read_text()
    section = doc.split("# Architecture", 1)[1].split("\n## ", 1)[0]
    packages = sorted(p.name for p in KDUMP.iterdir() if (p / "__init__.py").exists() or p.name == "_speedups")
    missing = [p for p in packages if f"kdump/{p}/" not in section]
    assert not missing, f"docs/architecture.md lacks: {missing}"
