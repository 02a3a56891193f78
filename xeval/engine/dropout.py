"""Dropout with masks drawn by numpy's SFC64 generator: the same dropout (keep each element with probability 1 - p,
scale the kept ones by 1 / (1 - p)) as ``torch.nn.functional.dropout``, with other random masks and cheaper ones.

Why: on a CPU torch draws its Bernoulli masks at ~6-8 ns an element on one thread whatever the thread count; a
fine-tuning step of a 12-layer encoder draws ~10^8 of them (attention probabilities are B x H x T x T), 22 % of a
QA step on e5-small (``bench/finetune_step_profile.py``). SFC64 (a small fast chaotic generator, numpy's, PractRand
clean) gives 64 random bits in ~1 ns; each element's 32 bits against ``p * 2^32`` keep it with probability 1 - p to
within 2^-32. Each call seeds a fresh SFC64 with one 63-bit draw from torch's default generator, so
``torch.manual_seed`` decides the masks as it does torch's own.

A fine-tuning recipe (``dropout_rng``) or an engine config (``train.dropout_rng``) picks these masks or torch's; the
masks, not the maths, differ, so switching is like changing the seed. Off the CPU torch's own dropout runs (fused on
a GPU).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def _seed() -> int:
    return int(torch.randint(0, 2**63 - 1, (1,), dtype=torch.int64))


def keep_scale(shape: torch.Size | tuple, p: float, dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor of ``shape``: 1 / (1 - p) where an element is kept (probability 1 - p), else 0."""
    n = int(np.prod(shape, dtype=np.int64))
    bits = np.random.SFC64(_seed()).random_raw((n + 1) // 2).view(np.uint32)[:n]  # n uniform 32-bit integers
    keep = torch.from_numpy(bits >= np.uint32(min(int(p * 2**32), 2**32 - 1))).view(shape)
    return torch.where(keep, torch.tensor(1.0 / (1.0 - p), dtype=dtype), torch.tensor(0.0, dtype=dtype))


def dropout(x: torch.Tensor, p: float, training: bool = True, rng: str = "sfc64") -> torch.Tensor:
    """``torch.nn.functional.dropout(x, p, training)`` with ``rng``'s masks (torch's own off the CPU)."""
    if not training or p == 0.0:
        return x
    if rng == "torch" or x.device.type != "cpu" or p >= 1.0:
        return nn.functional.dropout(x, p, training=True)
    return x * keep_scale(x.shape, p, x.dtype)


class Dropout(nn.Dropout):
    """``nn.Dropout`` with SFC64 masks (a drop-in: same ``p``, same ``training`` switch)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def use_sfc64(model: nn.Module) -> tuple[int, int]:
    """Swap every ``nn.Dropout`` of ``model`` for ``Dropout`` and switch the engine's attention layers (those with a
    ``dropout_rng``) to SFC64 masks: (dropout modules swapped, engine attention layers switched)."""
    swapped = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Dropout:
                setattr(module, name, Dropout(child.p))
                swapped += 1
    layers = [m for m in model.modules() if hasattr(m, "dropout_rng")]
    for layer in layers:
        layer.dropout_rng = "sfc64"
    return swapped, len(layers)
