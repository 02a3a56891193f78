"""The package list of pyproject.toml is explicit (tasks/ is mapped into xeval._tasks, which setuptools' discovery
cannot do): every package folder of xeval/ must be in it, or a wheel would silently lack its modules."""

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
