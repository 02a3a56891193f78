"""Task types: one module per family, chosen by a task card's ``type``.

Every adapter module exposes

    run(card, langs, ctx) -> list[Record]

which evaluates ``card`` on ``langs`` for every seed in ``ctx.seeds`` (and every layer in ``ctx.layers`` for
probes), skips units that ``ctx.store.has(unit)`` already holds (resume), puts each record into ``ctx.store`` as
soon as it is computed, and returns the records it produced or found.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xeval.base.errors import ConfigError

TASK_TYPES = {
    "tagging": "xeval.adapters.transfer.tagging",  # UD-POS, PAN-X
    "pair_classification": "xeval.adapters.transfer.classification",  # XNLI, PAWS-X
    "qa": "xeval.adapters.transfer.qa",  # XQuAD, MLQA, TyDiQA-GoldP
    "retrieval": "xeval.adapters.probes.retrieval",  # Tatoeba
    "heldout_retrieval": "xeval.adapters.probes.heldout",  # the engine's own held-out pairs (models xeval trained)
    "bitext_mining": "xeval.adapters.probes.mining",  # BUCC 2018
    "alignment": "xeval.adapters.probes.alignment",  # word alignment by OT, scored by AER
    "lexicon": "xeval.adapters.probes.lexicon",  # bilingual lexicon induction (MUSE)
    "tokenizer_stats": "xeval.adapters.probes.tokenization",  # tokenizer diagnostics per language (FLORES-200)
    "neutrality": "xeval.adapters.probes.neutrality",  # language ID probe and CKA per layer (FLORES-200)
}


# Task types that fine-tune (a model per task and seed, shared by the test languages); the others are probes.
FINE_TUNING = frozenset({"tagging", "pair_classification", "qa"})
JOINT_PROBES = frozenset({"neutrality"})  # probes that read all their languages in one call (not one per language)


@dataclass
class RunContext:
    """Everything an adapter needs besides the card and languages."""

    encoder: Any  # xeval.models.encoder.Encoder (loaded once per run)
    data: Any  # xeval.data.sources.DataRoot
    store: Any  # xeval.results.store.Store
    seeds: list[int] = field(default_factory=lambda: [1])
    layers: list[int] | None = None  # probes: hidden_states indices; None = the card's default layer
    export_dir: Path | None = None  # write predictions in XTREME's submission layout here
    options: dict = field(default_factory=dict)  # task-specific overrides from the CLI (recorded in config)
    ddp_finetune: bool = False  # fine-tunes are trained by all torchrun ranks together (xeval.run.distributed)
    cache: Any = None  # xeval.models.encoding_cache.EncodingCache of the run (None: no cache)


def get_adapter(task_type: str):
    try:
        module_name = TASK_TYPES[task_type]
    except KeyError:
        raise ConfigError(f"unknown task type {task_type!r}; expected one of {', '.join(TASK_TYPES)}") from None
    return importlib.import_module(module_name)
