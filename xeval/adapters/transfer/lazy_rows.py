"""AdamW that steps only the rows of the input embedding a fine-tune has touched: the same numbers, bit for bit.

A 12-layer multilingual encoder keeps most of its parameters in the input embedding (multilingual-e5-small: XLM-R's
250k x 384 rows, 96 M of 118 M parameters), and a fine-tune on 2,000 English sentences touches a few percent of those
rows. Dense AdamW still reads and writes all of them (weights, gradient, two moments: ~1.5 GB) every step.

Why skipping the other rows changes nothing: a row whose token has not been in any input so far has had a gradient of
exactly zero at every step (an embedding's backward only adds into the rows of the ids it looked up), so its two
moments are exactly zero, and AdamW's update of it is ``lr * 0 / (sqrt(0) + eps) = 0``: the weights stay as they
are. Decoupled weight decay (``p -= lr * wd * p``) leaves them as they are too while ``lr * wd < 2**-25``: the
change is then below half a float32 ulp of any weight and rounds away (XTREME's QA recipes, 2e-4 x 1e-4 = 2e-8 at
the peak, against 2.98e-8); at a larger product the optimiser steps the whole matrix from then on. Once its token appears, the row is stepped every step from then on (its moments are no
longer zero), with the state it would have had under dense AdamW (zeros) and the tensor's own step count, by the same
fused kernel applied to the gathered rows (elementwise, so the same arithmetic for each element, given rows a
multiple of its vector width: ``ROW_MULTIPLE``). Gradient clipping still sees the dense gradient. ``test_lazy_rows``
checks the weights bit for bit against dense fused AdamW.

When it does not apply (``lazy_embedding``): weight decay of 2**-25 / lr or more on the embedding, an
embedding whose weight is used by another module too (tied to an output layer: its gradient comes from elsewhere),
``max_norm`` embeddings, rows not a multiple of 16 floats wide, sparse gradients, AMSGrad, and data-parallel
fine-tuning (another rank's ids are not seen here). A use the module scan cannot see (``F.linear(x, embedding.weight)`` in a custom head) is caught on the first
step: a gradient outside the looked-up rows makes the optimiser step the whole matrix from then on, as dense AdamW.
A step whose gradient is not finite (a diverged run) would make dense AdamW write NaN into every row; here only into
the looked-up ones.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn
from torch.optim.adam import adam  # the functional AdamW (decoupled_weight_decay=True) the optimiser calls

MIN_ROWS = 10_000  # below this an embedding is too small for the gather to pay
# the fused kernel runs a vector loop and a scalar tail, which may round differently: with rows a multiple of the
# widest vector (16 floats, AVX-512) every element takes the same path in the gathered rows as in the whole matrix.
# Measured: 100-wide rows at 2 threads differed in the last bit; 24-768 wide multiples of 8 and 16 did not.
ROW_MULTIPLE = 16


def decay_rounds_away(weight_decay: float, lr: float) -> bool:
    """Whether one step of decoupled weight decay, ``p - lr * wd * p``, gives back ``p`` for every float32 ``p``: the
    relative change must stay below half the smallest relative ulp (2**-24 at the top of a binade, so 2**-25)."""
    return weight_decay == 0.0 or lr * weight_decay < 2.0**-25


def lazy_embedding(model: nn.Module, groups: list[dict], lr: float = 0.0) -> nn.Embedding | None:
    """The input embedding whose untouched rows can be skipped exactly, or None (see the module doc)."""
    uses: dict[int, int] = {}
    for module in model.modules():
        for param in module.parameters(recurse=False):
            uses[id(param)] = uses.get(id(param), 0) + 1
    decays = {id(p): (g["weight_decay"], g.get("lr", lr)) for g in groups for p in g["params"]}
    amsgrad = any(g.get("amsgrad") for g in groups)
    candidates = [m for m in model.modules() if isinstance(m, nn.Embedding) and m.num_embeddings >= MIN_ROWS
                  and m.embedding_dim % ROW_MULTIPLE == 0
                  and m.weight.requires_grad and not m.sparse and m.max_norm is None and not amsgrad
                  and uses.get(id(m.weight)) == 1 and id(m.weight) in decays
                  and decay_rounds_away(*decays[id(m.weight)])]
    return max(candidates, key=lambda m: m.num_embeddings) if candidates else None


class LazyRowsAdamW(torch.optim.AdamW):
    """Fused AdamW over every parameter, but for ``embedding.weight`` only the rows of the ids it has looked up."""

    def __init__(self, groups: list[dict], embedding: nn.Embedding, **kwargs):
        super().__init__(groups, **kwargs)
        self.weight = embedding.weight
        self.touched = torch.zeros(embedding.num_embeddings, dtype=torch.bool)  # [V]: ids looked up so far
        touched = self.touched

        def look_up(module, args) -> None:  # holds the mask, not the optimiser: a hook left behind keeps no moments
            if torch.is_grad_enabled():  # evaluation passes compute no gradient: their ids need no step
                touched[args[0].reshape(-1).to(touched.device)] = True

        self._hook = embedding.register_forward_pre_hook(look_up)
        weakref.finalize(self, self._hook.remove)  # also when a fine-tune ends in an exception before ``close``
        self.group = next(g for g in self.param_groups if any(p is self.weight for p in g["params"]))
        self.dense = False  # set when a row that was not looked up has a gradient, or its decay would not round away
        self._checked = False

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("LazyRowsAdamW.step takes no closure")
        grad, self.weight.grad = self.weight.grad, None  # the dense fused step below skips a parameter without one
        try:
            super().step()
        finally:
            self.weight.grad = grad
        if grad is None:
            return None
        state = self.state[self.weight]
        if not state:  # as AdamW initialises a fused parameter's state
            state["step"] = torch.zeros((), dtype=torch.float32, device=self.weight.device)
            state["exp_avg"] = torch.zeros_like(self.weight, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(self.weight, memory_format=torch.preserve_format)
        if not self._checked:  # one read of the whole gradient: is every gradient row a looked-up one?
            self._checked = True
            self.dense = bool(grad[~self.touched.to(grad.device)].any())
        if not decay_rounds_away(self.group["weight_decay"], float(self.group["lr"])):
            self.dense = True  # the untouched rows' decay would no longer round away (the skipped steps' did)
        if self.dense:
            self._adam(self.weight, grad, state["exp_avg"], state["exp_avg_sq"])
            return None
        rows = self.touched.nonzero().squeeze(1).to(self.weight.device)  # [k]
        weight, exp_avg, exp_avg_sq = self.weight[rows], state["exp_avg"][rows], state["exp_avg_sq"][rows]  # [k, H]
        self._adam(weight, grad[rows], exp_avg, exp_avg_sq)
        self.weight[rows] = weight
        state["exp_avg"][rows] = exp_avg
        state["exp_avg_sq"][rows] = exp_avg_sq
        return None

    def _adam(self, weight, grad, exp_avg, exp_avg_sq) -> None:
        """One fused AdamW step of ``weight`` (in place), with the group's settings and the tensor's step count."""
        group = self.group
        beta1, beta2 = group["betas"]
        adam([weight], [grad], [exp_avg], [exp_avg_sq], [], [self.state[self.weight]["step"]], fused=True,
             decoupled_weight_decay=True, amsgrad=False, beta1=beta1, beta2=beta2, lr=group["lr"],
             weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"])

    def close(self) -> None:
        """Stop watching the embedding's lookups (the model outlives the fine-tune)."""
        self._hook.remove()
