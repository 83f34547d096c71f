"""The shape of the package, as ARCHITECTURE.md draws it: floors, command homes, rule homes.

Every import kdump makes, function-level ones included, is read with ``ast``. A package may
import its own modules and the floors below it, never one above: the folder list is the
architecture. ``LAYERS``, ``COMMANDS`` and ``HOMES`` are that page written as data.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import click

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

# Every command in one shape: cli/ parses, run/ runs, render/ prints.
COMMANDS = {
    "dump": ("kdump.cli.dump", "kdump.run.dump", "kdump.render.dump"),
    "verify": ("kdump.cli.verify", "kdump.run.verify", "kdump.render.verify"),
    "index": ("kdump.cli.index", "kdump.run.index", "kdump.render.index"),
    "recover": ("kdump.cli.recover", "kdump.run.recover", "kdump.render.verify"),
    "export": ("kdump.cli.export", "kdump.run.export", "kdump.render.export"),
    "info": ("kdump.cli.info", "kdump.run.info", "kdump.render.info"),
    "txn": ("kdump.cli.txn", "kdump.run.txn", "kdump.render.state"),
    "groups": ("kdump.cli.groups", "kdump.run.groups", "kdump.render.state"),
    "metadata": ("kdump.cli.metadata", "kdump.run.metadata", "kdump.render.state"),
    "records": ("kdump.cli.records", "kdump.run.records", "kdump.render.records"),
}

# One home for each fact: the module that defines the name, and no other kdump module does.
HOMES = {
    "the batch header layout": ("kdump.format.batch", "parse_v2"),
    "RecordBatch.NO_TIMESTAMP": ("kdump.format.batch", "NO_TIMESTAMP"),
    "RecordBatch.NO_PRODUCER_ID": ("kdump.format.batch", "NO_PRODUCER_ID"),
    "v2 records": ("kdump.format.records", "decode_v2"),
    "v0/v1 messages": ("kdump.format.legacy", "parse_legacy"),
    "decompression and its limits": ("kdump.format.codecs", "decompress"),
    "CRC-32C": ("kdump.format.crc", "crc32c"),
    "Java's long addition": ("kdump.format.javalong", "long_add"),
    "Java's UTF-8 decoding": ("kdump.format.javautf8", "java_utf8"),
    "a segment's sibling files": ("kdump.storage.names", "sibling"),
    "the maximum message size a broker allows": ("kdump.check.broker_rule", "DEFAULT_MAX_MESSAGE_SIZE"),
    "index.interval.bytes": ("kdump.check.broker_rule", "DEFAULT_INDEX_INTERVAL_BYTES"),
    "the leader epoch a batch assigns": ("kdump.check.broker_rule", "assign_epoch"),
    "LogSegment.recover's kept batches": ("kdump.check.broker_rule", "kept_batches"),
    "LogLoader.load": ("kdump.check.loader_rule", "plan_partition"),
    "LogSegment.readNextOffset": ("kdump.check.clean_load", "read_next_offset"),
    "the producer snapshots a load deletes": ("kdump.check.loader_snapshots", "snapshots_at_load"),
    "the segment scan": ("kdump.check.scan", "scan_segment"),
    "what a recovery removes": ("kdump.check.loss", "losses"),
    "a segment whose .log is lost": ("kdump.check.lost_records", "orphan_bases"),
    "the finding kinds": ("kdump.findings", "class_of"),
    "exit statuses": ("kdump.errors", "ExitStatus"),
    "the row schema": ("kdump.model", "Batch"),
    "producer state": ("kdump.state.producers", "ProducerState"),
    "the offset replay": ("kdump.state.offsets", "OffsetStore"),
    "escaping for a terminal": ("kdump.render.escape", "printable"),
    "the characters escaped for people": ("kdump.words", "CONTROL_ESCAPES"),
    "producer sequence wrap-around": ("kdump.model", "sequence_at"),
    "where a Batch field sits": ("kdump.model", "B_BASE_OFFSET"),
    "the index step of LogSegment.recover": ("kdump.check.broker_rule", "IndexStep"),
    "the walk's stop kinds": ("kdump.findings", "TORN_TAIL"),
    "gzip's inflate": ("kdump.format.gunzip", "gunzip"),
    "JSON text": ("kdump.export.ndjson", "dumps"),
    "atomic writes": ("kdump.storage.safewrite", "atomic_write"),
    "the broker's lock": ("kdump.storage.writelock", "broker_holds"),
    "AWS Signature Version 4": ("kdump.storage.aws_sign", "signed"),
    "an HTTP request bounded by a deadline and a byte limit": ("kdump.storage.bounded_http", "connection"),
    "the walk of a PATH a level at a time": ("kdump.storage.levels", "levels"),
    "C or Python": ("kdump._accel", "use"),
    "-j in -j 1's order": ("kdump.jobs.fanout", "ordered_map"),
}

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


def _doc() -> str:
    return (KDUMP.parent / "ARCHITECTURE.md").read_text()


def test_the_architecture_doc_shows_every_package():
    floors = _doc().split("## The floors", 1)[1].split("\n## ", 1)[0]
    units = sorted(u for u in FLOOR if u != "__main__")
    missing = [u for u in units if not re.search(rf"(?<![\w/]){re.escape(u)}(/|\.py)", floors)]
    assert not missing, f"ARCHITECTURE.md's floors lack: {missing}"


def test_every_command_parses_runs_and_prints_in_its_homes():
    mods = _modules()
    graph = _imports(mods)
    from kdump.cli import app

    for command, (parse, run, render) in COMMANDS.items():
        assert {parse, run, render} <= set(mods), command
        assert run in graph[parse], f"{parse} does not hand {command} to {run}"
        assert render in graph[run], f"{run} does not print through {render}"
        # the group registers the command, and resolves it to a Click command of its parse module
        assert app.COMMANDS[command].split(":")[0] == parse, command
        resolved = app.cli.get_command(click.Context(app.cli), command)
        assert isinstance(resolved, click.Command) and resolved.callback.__module__ == parse, command
    # every command the group offers is homed (timeindex and help share index's and the docs' modules)
    assert set(app.COMMANDS) - set(COMMANDS) == {"timeindex", "help"}
    doc = _doc().split("## Where each command lives", 1)[1].split("\n## ", 1)[0]
    for command, homes in COMMANDS.items():
        row = next((line for line in doc.splitlines() if f"`{command}`" in line), "")
        assert all(m.removeprefix("kdump.").replace(".", "/") + ".py" in row for m in homes), command


def test_click_is_imported_by_cli_only():
    users = []
    for name, path in _modules().items():
        if name.startswith("kdump.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "click" for n in names):
                users.append(name)
    assert not users, f"Click below cli/: {sorted(set(users))}"


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_each_fact_has_one_home():
    mods = _modules()
    defined = {name: _top_level_names(path) for name, path in mods.items()}
    doc = _doc().split("## Where each rule lives", 1)[1]
    for fact, (home, symbol) in HOMES.items():
        assert symbol in defined[home], f"{fact}: {home} does not define {symbol}"
        others = sorted(m for m, names in defined.items() if m != home and symbol in names)
        assert not others, f"{fact}: {symbol} is defined again in {others}"
        assert home.removeprefix("kdump.").replace(".", "/") in doc, f"ARCHITECTURE.md does not place {fact}"


# Module-level functions that are the same code in two modules (their bodies compared with the
# names, annotations and docstring taken out): a copy is a second home whatever it is called.
# An entry here must say why the copy cannot import the one home.
COPIES_BELOW_THEIR_HOME = {
    "kdump.decoders.views._dumps": "decoders/ is below export/, the home of JSON text (export.ndjson.dumps)",
    "kdump.jobs.ordered_output._isatty": "jobs/ is below render/, the home of isatty (render.output.isatty)",
}
MIN_COPY_NODES = 15     # smaller bodies (a one-line accessor) may well agree by chance


class _Renamed(ast.NodeTransformer):
    """A body with its parameters named by their place (``a0``, ``a1`` ...)."""

    def __init__(self, params: list[str]) -> None:
        self.names = {p: f"a{i}" for i, p in enumerate(params)}

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.names.get(node.id, node.id), node.ctx)


def _body_key(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, int]:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    size = sum(1 for stmt in body for _ in ast.walk(stmt))
    params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    renamed = _Renamed(params)
    return "".join(ast.dump(renamed.visit(ast.parse(ast.unparse(stmt)))) for stmt in body), size


def test_no_rule_is_written_twice_under_other_names():
    by_body: dict[str, list[str]] = defaultdict(list)
    for name, path in _modules().items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key, size = _body_key(node)
                if size >= MIN_COPY_NODES:
                    by_body[key].append(f"{name}.{node.name}")
    copies = sorted(sorted(homes) for homes in by_body.values()
                    if len([h for h in homes if h not in COPIES_BELOW_THEIR_HOME]) > 1)
    assert not copies, f"the same function in several modules: {copies}"


# -- the C twins: which C file twins which Python module (speedups.h's table) ----------------

SPEEDUPS = KDUMP / "_speedups"


def _c_homes() -> dict[str, list[tuple[str, list[str]]]]:
    """speedups.h's table: C file -> [(the Python module it twins, the functions listed)]."""
    head = (SPEEDUPS / "speedups.h").read_text().split("*/", 1)[0]
    homes: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    c_file = None
    for line in head.splitlines():
        m = re.match(r"\s\*\s{3}(\w+\.c)?\s+(kdump/\S+\.py|the module itself)?\s*(.*)", line)
        if not m or not (m.group(1) or m.group(2) or c_file):
            continue
        if m.group(1):
            c_file = m.group(1)
        if c_file is None:
            continue
        if m.group(2):
            homes[c_file].append((m.group(2), []))
        if homes[c_file]:
            homes[c_file][-1][1].extend(re.findall(r"(?:^|[,;(]\s*|^\s*)([a-z_][a-z0-9_]*)\(", m.group(3)))
    return homes


def _registered() -> set[str]:
    """The functions module.c puts in kdump._speedups.native."""
    return set(re.findall(r'\{\s*"(\w+)"', (SPEEDUPS / "module.c").read_text()))


def test_every_c_file_names_the_python_it_twins():
    homes = _c_homes()
    c_files = {p.name for p in SPEEDUPS.glob("*.c")}
    assert c_files <= set(homes), f"C files speedups.h does not place: {sorted(c_files - set(homes))}"
    doc = _doc().split("## The C twins", 1)[1].split("\n## ", 1)[0]
    for c_file, twins in homes.items():
        assert c_file in c_files, f"speedups.h names {c_file}, which is not there"
        assert f"`{c_file}`" in doc, f"ARCHITECTURE.md's C twins do not place {c_file}"
        for module, _ in twins:
            assert module == "the module itself" or (KDUMP.parent / module).is_file(), f"{c_file}: no {module}"


def test_each_c_function_is_called_on_the_floor_of_the_python_it_twins():
    """A C function listed under a Python module is registered in the module kdump loads and
    called by name from that module's package: the floor whose rule it implements (a C
    function called from another floor would move that rule out of its home)."""
    registered = _registered()
    mods = _modules()
    for c_file, twins in _c_homes().items():
        for module, functions in twins:
            if module == "the module itself":
                continue
            package = Path(module).parent.as_posix().replace("/", ".")
            sources = "".join(p.read_text() for name, p in mods.items() if name.rpartition(".")[0] == package)
            for fn in functions:
                assert fn in registered, f"{c_file}: {fn} is not registered in module.c"
                assert re.search(rf"\b{fn}\b", sources), f"{c_file}: nothing in {package} calls {fn}"


def test_every_c_function_has_a_place_in_speedups_h():
    """What kdump._speedups.native offers is in speedups.h's table (``_``: a test hook)."""
    listed = {fn for twins in _c_homes().values() for _, functions in twins for fn in functions}
    missing = sorted(fn for fn in _registered() - listed if not fn.startswith("_"))
    assert not missing, f"registered in module.c, not placed in speedups.h: {missing}"


# -- data flows one way: the lower floors call no code handed down from above ------------------

# A public function or class of these floors that calls a parameter it was given (or one it
# stored on ``self``) runs its caller's code: data flowing back up. format/ has none. storage/'s
# few take a clock or a call to run under a limit; none is a consumer of what storage reads.
CALLS_WHAT_IT_IS_GIVEN = {
    ("kdump.storage.gentle", "Throttle.__init__", "clock"): "an injected clock (tests); time.monotonic by default",
    ("kdump.storage.gentle", "Throttle.__init__", "sleep"): "an injected sleep (tests); time.sleep by default",
    ("kdump.storage.levels", "walk", "visit"): "storage's own listing (levels.walk), not a consumer",
    ("kdump.storage.remote", "Store.call", "fn"): "a store request run under the time limit: an executor, "
                                                  "what it returns flows down to the caller",
}


def _calls_what_it_is_given(path: Path) -> set[tuple[str, str]]:
    """(function, parameter) of the public functions and classes of ``path`` that call a
    parameter, directly, or stored on ``self`` and called (or bound to a local and called)
    in any method of the class."""
    found: set[tuple[str, str]] = set()

    def params(fn) -> set[str]:
        a = fn.args
        names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        return set(names) - {"self", "cls"}

    def self_attr(node) -> str | None:
        ok = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        return node.attr if ok else None

    def scan(fn, qual: str, stored: dict) -> None:
        ps = params(fn)
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Name) \
                    and n.value.id in ps and (attr := self_attr(n.targets[0])) is not None:
                stored.setdefault(attr, (qual, n.value.id))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ps:
                found.add((qual, n.func.id))

    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            scan(node, node.name, {})
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            stored: dict[str, tuple[str, str]] = {}
            methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for m in methods:
                if not m.name.startswith("_") or m.name == "__init__":
                    scan(m, f"{node.name}.{m.name}", stored)
            for m in methods:
                local: dict[str, str] = {}
                for n in ast.walk(m):
                    if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                        for a in ast.walk(n.value):
                            attr = self_attr(a)
                            if attr is not None and attr in stored:
                                local[n.targets[0].id] = attr
                    if isinstance(n, ast.Call):
                        attr = self_attr(n.func)
                        if attr is not None and attr in stored:
                            found.add(stored[attr])
                        elif isinstance(n.func, ast.Name) and n.func.id in local:
                            found.add(stored[local[n.func.id]])
    return found


def test_format_and_storage_call_no_code_from_above():
    found = {(name, fn, param) for name, path in _modules().items() if _unit(name) in ("format", "storage")
             for fn, param in _calls_what_it_is_given(path)}
    assert not {f for f in found if _unit(f[0]) == "format"}, "format/ is pure: bytes in, objects or spans out"
    known = set(CALLS_WHAT_IT_IS_GIVEN)
    assert found <= known, f"calls what it is given: {sorted(found - known)}"
    assert known <= found, f"gone, take off CALLS_WHAT_IT_IS_GIVEN: {sorted(known - found)}"


def test_the_check_of_calls_sees_a_walk_that_calls_its_consumer(tmp_path):
    """The check above would have caught the Walker's old ``runner`` and the reader's ``raw`` hook."""
    src = tmp_path / "walk.py"
    src.write_text("class Walker:\n    def __init__(self, buf, runner=None):\n        self.runner = runner\n"
                   "    def __iter__(self):\n        runner = self.runner if self.buf else None\n"
                   "        yield runner(self.buf, 0, 1)\n\n"
                   "def hop(buf, then):\n    return then(buf)\n\n"
                   "def _inner(make):\n    return make()\n")
    assert _calls_what_it_is_given(src) == {("Walker.__init__", "runner"), ("hop", "then")}
