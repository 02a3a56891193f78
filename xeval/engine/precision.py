"""bf16 training weights with fp32 master weights (``train.bf16_weights``, with ``train.bf16``).

Under plain bf16 autocast the weights stay fp32 and every product casts its operands: each weight once per forward
(autocast's cache) and, because the residual stream between the products stays fp32, every activation that enters
a Linear, and the gradients of both on the way back.

Here the model's trainable parameters *are* bf16 (so are the activations: no casts inside the step), and the
optimiser steps fp32 master copies: after each micro-batch's ``backward`` the bf16 gradients are added into the
masters' ``.grad`` (the sum over micro-batches, clipping and AdamW run in fp32, so updates smaller than bf16's
resolution still accumulate in the masters); after the step the masters are rounded into the bf16 weights.
Under DDP the all-reduce carries the bf16 gradients (summed over the micro-batches in bf16). Checkpoints,
exports and resume see the fp32 masters (``masters_in_model``): a resumed run rebuilds the same bf16 weights
from them, bit for bit. LayerNorm, the residual stream and the embeddings run in bf16 too (LayerNorm's
statistics are accumulated in fp32 by torch's kernel); losses are computed in fp32 (autocast stays on).

Only the optimiser's parameters are converted: frozen copies (XLCO's momentum encoder) and buffers stay fp32.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn as nn


class BF16Weights:
    """Swap ``model``'s parameters that ``optimizer`` steps for bf16 copies; the fp32 originals stay in the
    optimiser as the master weights (its state, e.g. loaded from a checkpoint, is untouched)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer):
        stepped = {id(p) for group in optimizer.param_groups for p in group["params"]}
        low: dict[int, nn.Parameter] = {}  # master id -> its bf16 weight (tied parameters share one)
        self._slots: list[tuple[nn.Module, str, nn.Parameter, nn.Parameter]] = []
        for module in model.modules():
            for name, p in list(module._parameters.items()):
                if p is None or id(p) not in stepped:
                    continue
                if id(p) not in low:
                    low[id(p)] = nn.Parameter(p.detach().to(torch.bfloat16), requires_grad=True)
                module._parameters[name] = low[id(p)]
                self._slots.append((module, name, p, low[id(p)]))
        pairs = {id(m): (m, b) for _, _, m, b in self._slots}
        # masters in the optimiser's order (the gradient norm sums in that order)
        self.pairs = [pairs[id(p)] for group in optimizer.param_groups for p in group["params"] if id(p) in pairs]
        self.masters = [m for m, _ in self.pairs]

    def grads_to_masters(self) -> None:
        """Add the bf16 gradients to the fp32 ``master.grad`` and drop them: called after each micro-batch's
        backward, the sum over micro-batches runs in fp32 (``optimizer.zero_grad`` resets the masters' sums)."""
        for master, weight in self.pairs:
            if weight.grad is None:
                continue
            if master.grad is None:
                master.grad = weight.grad.float()
            else:
                master.grad.add_(weight.grad)
            weight.grad = None

    @torch.no_grad()
    def masters_to_weights(self) -> None:
        """Round the stepped masters into the bf16 weights."""
        for master, weight in self.pairs:
            weight.copy_(master)

    @contextlib.contextmanager
    def masters_in_model(self):
        """The fp32 masters in the model's place (to save, export or count them); the bf16 weights after."""
        for module, name, master, _ in self._slots:
            module._parameters[name] = master
        try:
            yield
        finally:
            for module, name, _, weight in self._slots:
                module._parameters[name] = weight
