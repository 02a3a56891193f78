"""xeval: evaluation and analysis suite for cross-lingual encoders.

Python API (``xeval.api``; imported on first use, so ``import xeval`` stays light)::

    frame = xeval.evaluate("xlm-roberta-base", suite="xtreme", tasks=["tatoeba"], layers="all")  # -> DataFrame
    frame = xeval.load_results("runs/")

The package is a house of wings, each importing only the floors below it (docs/architecture.md): ``base``
(errors, atomic files, console), ``data`` (readers, typology, synthetic languages), ``metrics`` (the official
metrics), ``cards`` (task cards and task types; the YAML is in the top-level ``tasks/``), ``engine`` (pre-training),
``results`` (records, identity, stores), ``models`` (the Encoder), ``submission`` (XTREME's submission folder),
``adapters`` (``transfer/`` fine-tuning families, ``probes/`` alignment probes), ``report`` (tables, figures,
the gate), ``run`` (options to units) and ``cli`` (one module per verb).
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
