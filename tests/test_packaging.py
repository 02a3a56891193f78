"""The package list of pyproject.toml is explicit (tasks/ is mapped into xeval._tasks, which setuptools' discovery
cannot do): every package folder of xeval/ must be in it, or a wheel would silently lack its modules. The optional
packages stay optional, and the licence pyproject.toml names ships beside it."""

from __future__ import annotations

from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "xeval").rglob("__init__.py")}
    assert found - listed == set(), f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert listed - found - {"xeval._tasks"} == set(), f"listed but absent: {sorted(listed - found)}"
    assert config["package-dir"]["xeval._tasks"] == "tasks" and (REPO / "tasks" / "suites").is_dir()


def test_the_version_has_one_place():
    from xeval import __version__
    from xeval._version import __version__ as version

    assert __version__ == version
    assert 'attr = "xeval._version.__version__"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def _imports(module: str) -> list[str]:
    """xeval's modules that import ``module`` (at any depth of the file, function-local imports included)."""
    import ast

    hits = []
    for path in sorted((REPO / "xeval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(name == module or name.startswith(module + ".") for name in names):
                hits.append(path.relative_to(REPO).as_posix())
    return sorted(set(hits))


def test_optional_packages_stay_optional():
    """seqeval is a test dependency only (xeval's chunk F1 is its own, xeval/metrics/chunk_f1.py), and datasets is
    the ``hub`` extra, imported only by the hub reader, which names the extra when it is missing."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = " ".join(project["dependencies"])
    assert "seqeval" not in runtime and "datasets" not in runtime
    assert any(d.startswith("datasets") for d in project["optional-dependencies"]["hub"])
    assert _imports("seqeval") == []
    assert _imports("datasets") == ["xeval/data/hub.py"]


def test_the_licence_pyproject_names_is_there():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert project["license"] == {"text": "Apache-2.0"} and "Apache License" in text and "Version 2.0" in text
