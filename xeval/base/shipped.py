"""Where the YAML that ships with xeval lives: the top-level ``tasks/`` folder of a checkout (task cards, suites,
pre-training presets), installed into a wheel as the package ``xeval._tasks``."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def tasks_root() -> Path:
    """``xeval._tasks`` when installed (a wheel, or an editable install that maps it), else the ``tasks/`` folder
    beside the package (a checkout used without installing, e.g. with ``PYTHONPATH``)."""
    spec = importlib.util.find_spec("xeval._tasks")  # a namespace package (the folder has no __init__.py)
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(__file__).resolve().parents[2] / "tasks"
