"""The fine-tuning recipe: ``Recipe`` (XTREME's hyper-parameters, overridden by a task card and the command line,
recorded in every result) and ``learning_rate_for`` (the rate for a model's hidden size)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from xeval.base.errors import ConfigError


@dataclass
class Recipe:
    """Fine-tuning hyper-parameters. Defaults follow XTREME's scripts for a base-size model; a task card's
    ``recipe`` and the command line override them, and every field is recorded in each result's ``config``."""

    learning_rate: float = 2e-5
    # the learning rate by the model's hidden size where XTREME's script changes it for large models (XNLI:
    # train_xnli.sh gives xlm-roberta-large and xlm-mlm-100-1280 3e-5); a --learning-rate override wins
    learning_rate_for_hidden: dict | None = None
    epochs: float = 3.0
    batch_size: int = 32  # examples per optimiser step (XTREME: 8 per device step x 4 accumulation)
    gradient_accumulation: int | None = None  # split each step into this many micro-batches (same maths)
    per_device_batch_size: int | None = None  # or give the micro-batch size (batch_size / gradient_accumulation)
    # padded tokens one forward/backward pass may hold on a CPU (xeval.adapters.transfer.passes): consecutive
    # micro-batches of a step share a pass up to it, each keeping its own loss mean (the same maths, other dropout
    # draws, like a seed); 0: one micro-batch a pass (xeval before this field; accelerators and data-parallel always)
    pass_tokens: int = 8192
    eval_batch_size: int = 128  # prediction batches are sorted by length, so a large one pads little
    group_by_length: bool = True  # training batches of similar lengths (seeded), padded each to its longest
    max_length: int = 128  # tokens per input (XTREME: 128; QA 384), capped by the encoder's own limit
    warmup_steps: int = 0
    warmup_ratio: float = 0.0  # used when warmup_steps is 0
    weight_decay: float = 0.0
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0
    # "bf16": training forward/backward under bf16 autocast (fp32 weights), eval stays fp32; in probe mode the frozen
    # encoder's forward pass under bf16 autocast
    precision: str = "fp32"
    # who draws the dropout masks (xeval.engine.dropout): "sfc64" (numpy's SFC64, 32 bits against p; ~2x cheaper on a
    # CPU) or "torch" (torch's Bernoulli masks, all xeval results before this field). The same dropout, other masks: like another seed
    dropout_rng: str = "sfc64"
    max_steps: int | None = None  # stop after this many optimiser steps (overrides epochs)
    eval_every: int | None = None  # dev evaluation every N steps (besides each epoch end); None = epoch ends only
    # also select among the weights at each epoch end (xeval's default); False: at every eval_every step only, as
    # XTREME's --save_steps (--compat xtreme), keeping the last weights when no step was evaluated
    epoch_end_selection: bool = True
    select: str = "dev"  # "dev": keep the best English-dev weights; "last": keep the final weights
    model_selection: str | None = None  # the cards' wording: "best checkpoint on English dev" -> dev, "last" -> last
    label_first_subword: bool = True  # tagging: the only scheme xeval implements (XTREME's)
    seed: int | None = None  # the seed XTREME's script used; informational, xeval's seeds come from --seeds
    max_train: int | None = None  # train on the first N examples of a fixed (seed 0) shuffle
    max_dev: int | None = None  # select on the first N English dev examples
    max_eval: int | None = None  # evaluate the first N examples of each language
    # QA (XTREME run_squad.py): window stride, query/answer limits, candidates per window
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    # --mode probe (frozen encoder, xeval.adapters.transfer.probe_mode): the pair representation, "mean" or "cls"
    probe_pooling: str = "mean"

    @classmethod
    def build(cls, *layers: dict | None) -> Recipe:
        """Defaults, then each mapping in turn (the card's recipe, then command-line overrides). Unknown keys are
        a ConfigError, so a typo never silently leaves a default in place."""
        known = {f.name: f for f in fields(cls)}
        values: dict = {}
        for layer in layers:
            for key, value in (layer or {}).items():
                if value is None:
                    continue
                key = key.replace("-", "_")
                if key not in known:
                    raise ConfigError(f"unknown recipe field {key!r}; expected one of {', '.join(known)}")
                values[key] = value
                # the two spellings of model selection: the later layer wins
                values.pop({"select": "model_selection", "model_selection": "select"}.get(key, ""), None)
        recipe = cls(**values)
        recipe._coerce()
        return recipe

    def _coerce(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            try:
                if value is not None and kind.startswith(("float", "int")) and isinstance(value, bool):
                    raise TypeError  # True is no number (the Python API would read it as 1)
                if value is not None and kind.startswith("float"):
                    setattr(self, f.name, float(value))
                elif value is not None and kind.startswith("int"):
                    if isinstance(value, float) and not value.is_integer():
                        raise ConfigError(f"recipe field {f.name}: expected an integer, found {value!r}")
                    setattr(self, f.name, int(value))
            except (TypeError, ValueError):
                raise ConfigError(f"recipe field {f.name}: expected a number, found {value!r}") from None
        self._check_ranges()
        if self.model_selection is not None:
            text = str(self.model_selection).lower()
            if "best" in text or "dev" in text:
                self.select = "dev"
            elif "last" in text or "final" in text:
                self.select = "last"
            else:
                raise ConfigError(f"recipe field model_selection: expected 'best checkpoint on English dev' or "
                                  f"'last', found {self.model_selection!r}")
        if self.select not in {"dev", "last"}:
            raise ConfigError(f"recipe field select: expected 'dev' or 'last', found {self.select!r}")
        if self.precision not in {"fp32", "bf16"}:
            raise ConfigError(f"recipe field precision: expected 'fp32' or 'bf16', found {self.precision!r}")
        if self.dropout_rng not in {"sfc64", "torch"}:
            raise ConfigError(f"recipe field dropout_rng: expected 'sfc64' or 'torch', found {self.dropout_rng!r}")
        if self.probe_pooling not in {"mean", "cls"}:
            raise ConfigError(f"recipe field probe_pooling: expected 'mean' or 'cls', found {self.probe_pooling!r}")
        if isinstance(self.epoch_end_selection, str):
            self.epoch_end_selection = self.epoch_end_selection.lower() in {"1", "true", "yes"}
        if isinstance(self.group_by_length, str):
            self.group_by_length = self.group_by_length.lower() in {"1", "true", "yes"}
        if isinstance(self.label_first_subword, str):
            self.label_first_subword = self.label_first_subword.lower() in {"1", "true", "yes"}
        if not self.label_first_subword:
            raise ConfigError("recipe field label_first_subword: only true (XTREME's scheme) is implemented")

    # Fields that must be >= 1 when set: a 0 or a negative value would train on nothing, or (max_eval) slice the
    # evaluation set from its end (examples[:-5]) or keep all of it (examples[:0] reads as "no limit").
    _POSITIVE = ("batch_size", "gradient_accumulation", "per_device_batch_size", "eval_batch_size", "max_length",
                 "max_steps", "eval_every", "max_train", "max_dev", "max_eval", "doc_stride", "max_query_length",
                 "max_answer_length", "n_best_size")

    def _check_ranges(self) -> None:
        for name in self._POSITIVE:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"recipe field {name}: expected an integer >= 1, found {value!r}")
        for name, low, strict in (("learning_rate", 0.0, True), ("epochs", 0.0, True), ("adam_epsilon", 0.0, True),
                                  ("max_grad_norm", 0.0, True), ("weight_decay", 0.0, False),
                                  ("warmup_ratio", 0.0, False)):
            value = getattr(self, name)
            if not math.isfinite(value) or value < low or (strict and value == low):
                raise ConfigError(f"recipe field {name}: expected a finite number {'>' if strict else '>='} {low:g}, "
                                  f"found {value!r}")
        if self.pass_tokens < 0:
            raise ConfigError(f"recipe field pass_tokens: expected an integer >= 0 (0: one micro-batch a pass), "
                              f"found {self.pass_tokens!r}")
        if self.warmup_steps < 0 or self.warmup_ratio >= 1:
            raise ConfigError(f"recipe: expected warmup_steps >= 0 and warmup_ratio < 1, found {self.warmup_steps} "
                              f"and {self.warmup_ratio:g}")

    @property
    def micro_batch_size(self) -> int:
        """Examples per micro-batch: each keeps its own loss mean (XTREME's per-device batch; several share a
        forward/backward pass up to ``pass_tokens`` on a CPU). Capped by the step size, so a small ``--batch-size``
        override still works with a card that names XTREME's per-device size."""
        if self.per_device_batch_size:
            size = self.per_device_batch_size
        else:
            size = self.batch_size // (self.gradient_accumulation or 1)
        return max(1, min(size, self.batch_size))

    def to_json(self) -> dict:
        return asdict(self)



RECIPE_FIELDS = frozenset(f.name for f in fields(Recipe))


def learning_rate_for(recipe: Recipe, hidden_size: int, overrides: dict) -> float:
    """The recipe's learning rate for a model of this hidden size: ``learning_rate_for_hidden`` where the card names
    the size (XTREME's large-model rates), unless the command line gives ``learning_rate``.

    >>> r = Recipe.build({"learning_rate": 2e-5, "learning_rate_for_hidden": {1024: 3e-5}})
    >>> learning_rate_for(r, 768, {}), learning_rate_for(r, 1024, {}), learning_rate_for(r, 1024, {"learning_rate": 1e-5})
    (2e-05, 3e-05, 2e-05)
    """
    by_hidden = {int(k): float(v) for k, v in (recipe.learning_rate_for_hidden or {}).items()}
    if hidden_size in by_hidden and "learning_rate" not in overrides:
        return by_hidden[hidden_size]
    return recipe.learning_rate
