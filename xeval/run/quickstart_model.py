"""The quickstart's pre-training: the engine's ``quickstart`` preset (``tasks/pretrain/quickstart.yaml``: MLM +
sequence-level contrast of translation pairs, 4 x 64, Unigram 800, no dropout, lr 5e-3) on the synthetic world's
corpora (``data.layout: synthetic``) for a fixed number of steps (``train.steps``; no wall-clock budget, so the
model is the same on every machine).

Everything is the engine's ``pretrain``: the same tokenizer training, language sampling, objectives, schedule and
checkpoint as ``python -m xeval pretrain --config quickstart --data <world>``. ``max_steps`` 0 exports the untrained
model instead (``export_random_init``: same tokenizer, shape and seed), the random-init control of
``bench/quickstart_transfer.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

from xeval.engine.config import PretrainConfig, load_config

PRESET = "quickstart"


def quickstart_config(world: str | Path, seed: int = 0, steps: int | None = None,
                      overrides: dict | None = None) -> PretrainConfig:  # fmt: skip
    """The preset for this world, seed and step count (None: the preset's); ``overrides`` ({section: {key:
    value}}) change the recipe (the tests shrink the model)."""
    cfg = load_config(PRESET).updated(overrides or {})
    train = {"seed": seed, "max_seconds": None, **({} if steps is None else {"steps": steps})}
    return cfg.updated({"data": {"root": str(world)}, "train": train})


def recipe_identity(cfg: PretrainConfig) -> dict:
    """What decides the model apart from the world's files: the config without its paths."""
    d = cfg.to_dict()
    d["data"]["root"] = None
    return d


def train_quickstart_model(cfg: PretrainConfig, out: str | Path, echo=None) -> dict:
    """Tokenizer + encoder into ``out`` (a fresh folder); returns the summary the quickstart records."""
    from safetensors import safe_open

    from xeval.engine.train import export_random_init, pretrain

    t0 = time.perf_counter()
    if cfg.train.steps == 0:
        result = export_random_init(cfg, out, echo=echo)
    else:
        result = pretrain(cfg, out, echo=echo)
    with safe_open(str(Path(out) / "model.safetensors"), framework="pt") as f:
        parameters = sum(_numel(f.get_slice(k).get_shape()) for k in f.keys())
    last = {k: v for k, v in result.items() if k == "loss"}  # the last logged window's losses and accuracies
    last.update((k, v) for k, v in result.items() if k.split("_")[0] in cfg.objectives)
    return {"steps": result["step"], "tokens": result.get("tokens", 0), "train_seconds": result.get("seconds", 0.0),
            "total_seconds": round(time.perf_counter() - t0, 1), "last": last, "parameters": parameters,
            "vocab_size": cfg.tokenizer.vocab_size, "objectives": sorted(cfg.objectives)}  # fmt: skip


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
