"""One fine-tuned model for the tasks that train alike.

XTREME fine-tunes once on SQuAD v1.1 and answers both XQuAD and MLQA with that model. xeval does the same: when a
task's training is exactly an earlier task's (the same encoder, seed, recipe, head options, training features and
selection set), the model that task trained is reused instead of training again, and each record says which task
trained it (``extra.training.trained_for``). On a CPU, where training is deterministic, this changes no number; on
a GPU it also makes XQuAD and MLQA come from one model, as in the paper.

The key is computed from the training features themselves (token ids, labels, answer positions), not from file
names or subsample settings, so two tasks share a model only when they would have trained on identical inputs. The
last models, one per seed of the run and encoder (the model and its control), are kept on the CPU (a kept XLM-R
large must not crowd the next task's training on a small GPU) until later tasks' models push them out or the run
ends (``release``).

``--mode probe`` does the same for its QA heads (``probe_key``): the heads XQuAD fitted on the same training windows
and their answers on the same selection questions serve MLQA, which scores those answers with its own metric.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict

import numpy as np
from torch import nn

from xeval.adapters.transfer.fine_tuning import TrainReport
from xeval.adapters.transfer.recipe import Recipe

_kept: OrderedDict[str, tuple[nn.Module, TrainReport, str]] = OrderedDict()  # key -> (model on CPU, report, task)
_kept_probes: OrderedDict[str, tuple[object, str]] = OrderedDict()  # key -> (probe heads + answers, task)


def training_key(family, features: list[dict], dev: list, seed: int, recipe: Recipe, joint: bool) -> str:
    """What decides the trained weights, hashed: encoder identity, seed, family and its training options, the whole
    recipe, every training feature and the selection set."""
    head = {"encoder": family.ctx.encoder.identity(), "seed": seed, "family": type(family).__name__,
            "options": family.training_config(selects_on_dev=bool(dev)), "recipe": recipe.to_json(), "joint": joint}
    return _digest(head, features, dev)


def probe_key(family, features: list[dict], selection: list, layers: list[int], settings: dict) -> str:
    """What decides a probe's fitted heads and their answers on the selection set, hashed: encoder identity, family
    and every option that predicts (all of ``config()`` but the answer normalisation, which only scores), the
    probe's own settings (``settings``), the layers, every training feature and the selection examples."""
    options = {k: v for k, v in family.config().items() if k != "normalisation"}
    head = {"encoder": family.ctx.encoder.identity(), "family": type(family).__name__, "options": options,
            "layers": list(layers), "probe": settings}
    return _digest(head, features, selection)


def _digest(head: dict, features: list[dict], dev: list) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(head, sort_keys=True, default=str).encode())
    for feat in features:
        for name in sorted(feat):
            value = np.asarray(feat[name])
            digest.update(f"{name}:{value.dtype}:{value.shape}".encode())
            digest.update(repr(feat[name]).encode() if value.dtype == object else value.tobytes())
    digest.update(repr(dev).encode())  # the dev examples are dataclasses: their repr is their content
    return digest.hexdigest()


def reuse(key: str, device) -> tuple[nn.Module, TrainReport, str] | None:
    """The kept (model on ``device``, its training report, the task that trained it) if ``key`` matches."""
    if key not in _kept:
        return None
    model, report, task = _kept[key]
    return model.to(device), report, task


def keep(key: str, model: nn.Module, report: TrainReport, task: str, limit: int) -> None:
    """Keep ``model`` for a later task; at most ``limit`` models, the oldest let go."""
    _kept[key] = (model.to("cpu"), report, task)
    _kept.move_to_end(key)
    while len(_kept) > limit:
        _kept.popitem(last=False)


def reuse_probe(key: str) -> tuple[object, str] | None:
    """The kept (fitted heads and selection answers, the task that fitted them) if ``key`` matches."""
    return _kept_probes.get(key)


def keep_probe(key: str, fitted: object, task: str, limit: int = 2) -> None:
    """Keep a probe's fitted heads for a later task; at most ``limit`` kept, the oldest let go."""
    _kept_probes[key] = (fitted, task)
    _kept_probes.move_to_end(key)
    while len(_kept_probes) > limit:
        _kept_probes.popitem(last=False)


def release() -> None:
    _kept.clear()
    _kept_probes.clear()
