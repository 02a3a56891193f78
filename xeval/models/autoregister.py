"""``import xeval`` makes ``transformers.AutoModel`` load engine checkpoints (``"model_type": "xeval"``), lazily.

Registration needs ``transformers`` and torch (``xeval.engine.model``), which most of xeval's verbs never import.
So it happens when ``transformers`` is imported: at once if it already is, otherwise through a one-shot import
hook that runs right after ``transformers``' own module code. ``import xeval`` alone imports neither.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


def register() -> None:
    """Register ``XevalConfig`` / ``XevalModel`` with ``AutoConfig`` / ``AutoModel`` (idempotent)."""
    try:
        import xeval.engine  # noqa: F401  (its import registers the classes)
    except ImportError:  # no torch here: transformers still works, just without the engine's model type
        pass


class _AfterTransformers(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "transformers":
            return None
        sys.meta_path.remove(self)  # one shot; the ordinary finders locate the package
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            register()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    if "transformers" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterTransformers) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTransformers())
