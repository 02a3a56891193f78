"""``RunContext``: everything an adapter's ``run(card, langs, ctx)`` needs besides the card and languages (the loaded
encoder, the data root, the result store, seeds, layers and the run's options), built once per run by
``xeval.run.runner``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
