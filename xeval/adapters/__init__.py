"""Task types: one module per family, chosen by a task card's ``type`` through its record in
``xeval.cards.types``.

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

from xeval.cards.types import task_type


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


def get_adapter(name: str):
    """The adapter module of task type ``name`` (its record in ``xeval.cards.types`` names it), imported now."""
    return importlib.import_module(task_type(name).adapter)
