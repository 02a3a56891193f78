"""xeval: evaluation and analysis suite for cross-lingual encoders.

Python API (``xeval.api``; imported on first use, so ``import xeval`` stays light)::

    frame = xeval.evaluate("xlm-roberta-base", suite="xtreme", tasks=["tatoeba"], layers="all")  # -> DataFrame
    frame = xeval.load_results("runs/")

Verbs live in ``xeval/commands/`` (one module each), the data layer in ``xeval/data/``, task types in
``xeval/adapters/``, metrics in ``xeval/metrics/``, alignment probes in ``xeval/probes/``, reports in
``xeval/report/`` and the pre-training engine in ``xeval/engine/``.
"""

from xeval._version import __version__

__all__ = ["evaluate", "load_results", "__version__"]


def __getattr__(name: str):
    if name in ("evaluate", "load_results"):
        from xeval import api

        return getattr(api, name)
    raise AttributeError(f"module 'xeval' has no attribute {name!r}")


from xeval.models import autoregister as _autoregister  # noqa: E402 - after the module's names, as before

_autoregister.install()  # AutoModel knows engine checkpoints once transformers is imported (torch-free until then)
