"""Pre-training objectives, combined and weighted by the config, one backward pass per step.

``PretrainModel`` holds the encoder (the only part saved as the checkpoint), the heads shared between objectives
(MLM head for MLM+TLM; generator + RTD head for MRTD+TRTD) and the objectives themselves (XLCO owns its momentum
encoder and queue). Its ``forward`` runs every objective on its inputs and returns the weighted sum.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from xeval.engine.model import XevalConfig, XevalModel
from xeval.engine.objectives.base import Objective, StepContext, TokenInfo
from xeval.engine.objectives.contrast import SequenceContrast, TokenContrast
from xeval.engine.objectives.electra import MRTD, TRTD
from xeval.engine.objectives.mlm import MLM, TLM
from xeval.engine.objectives.xlco import XLCO
from xeval.errors import ConfigError

OBJECTIVES: dict[str, type[Objective]] = {
    "mlm": MLM, "tlm": TLM, "mrtd": MRTD, "trtd": TRTD, "xlco": XLCO, "seqcl": SequenceContrast,
    "tokcl": TokenContrast,
}  # fmt: skip


class PretrainModel(nn.Module):
    def __init__(self, config: XevalConfig, objectives: dict[str, dict], tokens: TokenInfo,
                 pieces: list[str] | None = None, dictionaries: dict | None = None):  # fmt: skip
        super().__init__()
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
        total, stats, tokens = None, {}, 0
        for name, obj in self.objectives.items():
            loss, s = obj(inputs[name], self, ctx)
            tokens += int(s.pop("tokens", 0))
            stats.update(s)
            total = loss * obj.weight if total is None else total + loss * obj.weight
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
