"""Pre-training objectives, combined and weighted by the config, one backward pass per step.

``PretrainModel`` holds the encoder (the only part saved as the checkpoint), the heads shared between objectives
(MLM head for MLM+TLM; generator + RTD head for MRTD+TRTD) and the objectives themselves (XLCO owns its momentum
encoder and queue). Its ``forward`` runs every objective on its inputs and returns the weighted sum.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from xeval.base.errors import ConfigError
from xeval.engine.model import XevalConfig, XevalModel
from xeval.engine.objectives.base import Objective, StepContext, TokenInfo
from xeval.engine.objectives.contrast import SequenceContrast, TokenContrast
from xeval.engine.objectives.electra import MRTD, TRTD
from xeval.engine.objectives.mlm import MLM, TLM
from xeval.engine.objectives.xlco import XLCO

OBJECTIVES: dict[str, type[Objective]] = {
    "mlm": MLM, "tlm": TLM, "mrtd": MRTD, "trtd": TRTD, "xlco": XLCO, "seqcl": SequenceContrast,
    "tokcl": TokenContrast,
}  # fmt: skip


# "objective": the weighted sum of each objective's own mean (xeval's default). "pooled": fairseq's normalisation in
# InfoXLM's reference -- the objectives' summed losses divided by their summed sample sizes (masked tokens of MLM and
# TLM, sentences of XLCO), so an objective's share of the gradient grows with its number of predictions.
LOSS_NORMS = ("objective", "pooled")
POOLED = {"mlm", "tlm", "xlco"}


class PretrainModel(nn.Module):
    def __init__(self, config: XevalConfig, objectives: dict[str, dict], tokens: TokenInfo,
                 pieces: list[str] | None = None, dictionaries: dict | None = None,
                 loss_norm: str = "objective"):  # fmt: skip
        super().__init__()
        if loss_norm not in LOSS_NORMS:
            raise ConfigError(f"train.loss_norm must be one of {list(LOSS_NORMS)}, got {loss_norm!r}")
        unpooled = sorted(set(objectives) - POOLED) if loss_norm == "pooled" else []
        if unpooled:
            raise ConfigError(f"train.loss_norm pooled is InfoXLM's normalisation of {sorted(POOLED)}; "
                              f"{unpooled} define none")  # fmt: skip
        self.loss_norm = loss_norm
        if config.languages and set(objectives) - {"mlm", "tlm"}:
            raise ConfigError(f"model.language_embeddings (XLM's) feed mlm and tlm only; not "
                              f"{sorted(set(objectives) - {'mlm', 'tlm'})}")  # fmt: skip
        self.encoder = XevalModel(config)
        self.heads = nn.ModuleDict()
        self.objectives = nn.ModuleDict()
        for name, cfg in objectives.items():
            if name not in OBJECTIVES:
                raise ConfigError(f"unknown objective {name!r}; expected one of {sorted(OBJECTIVES)}")
            cls = OBJECTIVES[name]
            if cls is XLCO or cls is SequenceContrast:
                obj = cls(cfg or {}, tokens, self.encoder)
            elif cls is TokenContrast:
                obj = cls(cfg or {}, tokens, self.encoder, pieces or [], dictionaries or {})
            else:
                obj = cls(cfg or {}, tokens)
            obj.build_heads(self)
            self.objectives[name] = obj
        self.summed_stats = {k for obj in self.objectives.values() for k in obj.summed_stats}

    def prepare(self, batches: dict, gen_for) -> dict:
        """CPU, global batch: inputs per objective. ``batches``: {"mono": ..., "pairs": ...};
        ``gen_for(name)``: the seeded generator of that objective for this step."""
        return {name: obj.prepare(batches[obj.data], gen_for(name)) for name, obj in self.objectives.items()}

    def forward(self, inputs: dict, ctx: StepContext):
        total, stats, tokens, count = None, {}, 0, 0
        for name, obj in self.objectives.items():
            loss, s = obj(inputs[name], self, ctx)
            tokens += int(s.pop("tokens", 0))
            n = s.pop("_n", None)  # the objective's global sample size (masked tokens, sentences)
            stats.update(s)
            if self.loss_norm == "pooled":  # each loss is a mean over n: back to a sum, divided by all n below
                loss = loss * n
                count = count + n
            total = loss * obj.weight if total is None else total + loss * obj.weight
        if self.loss_norm == "pooled":
            total = total / torch.as_tensor(count, device=total.device).clamp(min=1)
        stats["tokens"] = tokens
        return total, stats


def slice_inputs(inputs: dict, rank: int, world: int) -> dict:
    """This rank's contiguous share of every batch-first tensor (0-d tensors, global counts, stay whole)."""
    if world == 1:
        return inputs
    out = {}
    for name, d in inputs.items():
        out[name] = {}
        for k, v in d.items():
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                if v.shape[0] % world:
                    raise ConfigError(f"batch of {v.shape[0]} rows does not split over {world} processes")
                n = v.shape[0] // world
                v = v[rank * n : (rank + 1) * n]
            out[name][k] = v
    return out


__all__ = ["OBJECTIVES", "PretrainModel", "StepContext", "TokenInfo", "slice_inputs"]
