"""xeval: evaluation and analysis suite for cross-lingual encoders.

Verbs live in ``xeval/commands/`` (one module each), the data layer in ``xeval/data/``, task types in
``xeval/adapters/``, metrics in ``xeval/metrics/``, alignment probes in ``xeval/probes/``, reports in
``xeval/report/`` and the pre-training engine in ``xeval/engine/``.
"""

__version__ = "0.1.0"

from xeval import _autoregister

_autoregister.install()  # AutoModel knows engine checkpoints once transformers is imported (torch-free until then)
