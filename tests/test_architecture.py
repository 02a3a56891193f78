"""The house rules of docs/architecture.md, measured from the code's own imports (at module level and inside
functions alike): every import goes down the floors or stays in its wing, never up; no import circle between files;
``base/`` imports nothing of xeval; the engine reads only ``base/`` and the data readers; ``report/`` and
``adapters/`` never import each other; at most five modules loose at the top of the package; no file over 500 lines;
no two modules of one name, apart from ``base.py`` (the shared base of a folder of variants) and the verbs of
``cli/`` (each the command-line face of the library module it calls)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "xeval"

# Floors, lowest first. A module may import from its own floor's wing and from lower floors. Wings that share a
# floor (adapters and report) may not import each other.
FLOORS = [
    ["_version"],
    ["base"],
    ["data"],
    ["metrics"],
    ["cards"],
    ["engine"],
    ["results"],
    ["models"],
    ["submission"],
    ["adapters", "report"],
    ["run"],
    ["cli"],
    ["face"],  # xeval/__init__.py, __main__.py, api.py: import xeval, python -m xeval, xeval.evaluate
]
FACE = {"__init__", "__main__", "api"}
FLOOR_OF = {wing: level for level, wings in enumerate(FLOORS) for wing in wings}
ENGINE_MAY_READ = {"base", "data", "_version"}  # the engine sees evaluation code only through its checkpoints
MAX_LOOSE, MAX_LINES = 5, 500


def _modules() -> dict[Path, tuple[str, ...]]:
    return {p: p.relative_to(PACKAGE.parent).with_suffix("").parts for p in PACKAGE.rglob("*.py")}


def _dotted(parts: tuple[str, ...]) -> str:
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, parts: tuple[str, ...], known: set[str]) -> set[str]:
    """The xeval modules a file reads: ``from pkg import mod`` reads pkg/mod.py, ``from pkg import name`` reads
    pkg/__init__.py (as house_check does)."""
    here = list(parts[:-1]) if parts[-1] == "__init__" else list(parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "xeval"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "xeval":
                continue
            for alias in node.names:
                out.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return out


def _wing(dotted: str) -> str:
    parts = dotted.split(".")
    wing = parts[1] if len(parts) > 1 else "__init__"
    return "face" if wing in FACE else wing


def _graph():
    modules = _modules()
    known = {_dotted(parts) for parts in modules.values()}
    graph = {}
    for path, parts in modules.items():
        deps = set()
        for name in _imports(path, parts, known):
            while name not in known and "." in name:  # `import xeval.a.b.c` reads the longest module prefix
                name = name.rsplit(".", 1)[0]
            if name in known and name != _dotted(parts):
                deps.add(name)
        graph[_dotted(parts)] = deps
    return graph


def test_every_wing_has_a_floor():
    wings = {_wing(m) for m in _graph()}
    assert wings <= set(FLOOR_OF), f"wings without a floor in FLOORS: {sorted(wings - set(FLOOR_OF))}"


def test_imports_go_down_the_floors_only():
    wrong = []
    for module, deps in _graph().items():
        wing = _wing(module)
        for dep in deps:
            other = _wing(dep)
            if other == wing or other not in FLOOR_OF or wing not in FLOOR_OF:
                continue
            if FLOOR_OF[other] >= FLOOR_OF[wing]:
                wrong.append(f"{module} -> {dep}")
    assert not wrong, "imports that climb up (or across adapters/report):\n" + "\n".join(sorted(wrong))


def test_the_engine_reads_only_base_and_the_data_readers():
    wrong = [f"{m} -> {d}" for m, deps in _graph().items() if _wing(m) == "engine"
             for d in deps if _wing(d) not in ENGINE_MAY_READ | {"engine"}]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_circle():
    graph = _graph()
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_few_loose_modules_and_no_long_file():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_LOOSE, loose
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_no_two_modules_of_one_name():
    names = Counter(p.stem for p in PACKAGE.rglob("*.py") if p.stem not in ("__init__", "base") and p.parent.name != "cli")
    cli = {p.stem for p in (PACKAGE / "cli").glob("*.py")}
    twice = sorted(n for n, k in names.items() if k > 1)
    assert not twice, f"module names used twice: {twice}"
    # a verb's module may share its name only with the library module it is the face of
    faces = {"quickstart": "run/quickstart.py", "export": "engine/export.py", "tokenizer": "engine/tokenizer.py"}
    for verb in cli & names.keys():
        others = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob(f"{verb}.py") if p.parent.name != "cli"]
        assert others == [faces.get(verb)], f"cli/{verb}.py shares its name with {others}"


@pytest.mark.parametrize("wing", ["base"])
def test_base_imports_nothing_of_xeval(wing):
    wrong = [f"{m} -> {d}" for m, deps in _graph().items() if _wing(m) == wing for d in deps if _wing(d) != wing]
    assert not wrong, "\n".join(wrong)
