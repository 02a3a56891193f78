"""``RunContext``: everything an adapter's ``run(card, langs, ctx)`` needs besides the card and languages (the loaded
encoder, the data root, the result store, seeds, layers and the run's settings, typed), built once per run by
``xeval.run.runner``. The settings arrive here typed (``xeval.run.options`` turns the command line's text into
them once); adapters read fields, never option dictionaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TaskOptions:
    """What a run sets for its tasks beside their cards (the recipe flags, ``--set KEY=VALUE``, ``--max-eval``),
    typed by ``xeval.run.options.task_options``. A key may reach both kinds of task: ``--batch-size 8`` is a
    fine-tuning batch and a probe's encoding batch."""

    recipe: dict = field(default_factory=dict)  # fine-tuning tasks: ``Recipe`` fields over the card's recipe
    probe: dict = field(default_factory=dict)  # probes: options over ``probes.base.DEFAULTS`` and the card's
    max_eval: int | None = None  # every task: the first N examples of each language
    limit: float | None = None  # every task: the first ceil(F * n) of a language's n examples (--limit F, 0 < F < 1)
    auto_batch: bool = False  # fine-tuning: the largest micro-batch that fits (--batch-size auto; batch_search)


@dataclass
class RunContext:
    """Everything an adapter needs besides the card and languages."""

    encoder: Any  # xeval.models.encoder.Encoder (loaded once per run)
    data: Any  # xeval.data.sources.DataRoot
    store: Any  # xeval.results.store.Store (or results.memory.MemoryStore)
    seeds: list[int] = field(default_factory=lambda: [1])
    layers: list[int] | None = None  # probes: hidden_states indices; None = the card's default layer
    export_dir: Path | None = None  # write predictions in XTREME's submission layout here
    export_labels: Path | None = None  # write the gold of exactly the evaluated examples in the same layout
    setting: str = "zero-shot"  # zero-shot | translate-train | few-shot
    mode: str = "finetune"  # finetune | probe (the fine-tuning tasks with the encoder frozen)
    compat: str = "none"  # none | xtreme (the published pipeline's quirks, xeval.cards.compat)
    shots: tuple[int, ...] = ()  # --setting few-shot: target-language examples per language
    tasks: TaskOptions = field(default_factory=TaskOptions)
    ddp_finetune: bool = False  # fine-tunes are trained by all torchrun ranks together (xeval.run.distributed)
    cache: Any = None  # xeval.models.encoding_cache.EncodingCache of the run (None: no cache)

    def identity_options(self) -> dict:
        """The run-wide settings every unit's config hash holds (``xeval.results.identity``): the setting, the mode
        and compat mode where not the default, ``--max-eval``, ``--limit``, ``--batch-size auto``. Recipe overrides are hashed as the resolved recipe,
        the shots per unit, export folders and caches decide no number."""
        out: dict = {"setting": self.setting}
        if self.mode != "finetune":
            out["mode"] = self.mode
        if self.compat != "none":
            out["compat"] = self.compat
        if self.tasks.max_eval is not None:
            out["max_eval"] = self.tasks.max_eval
        if self.tasks.limit is not None:
            out["limit"] = self.tasks.limit
        if self.tasks.auto_batch:
            out["batch_size"] = "auto"
        return out
