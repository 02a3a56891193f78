"""InfoXLM's cross-lingual contrast (XLCO): a translation pair is a positive, keys of earlier batches are negatives.

- query  q = normalised sentence vector of the source side at the contrast layer (default round(2/3 * depth));
- key    k = the same for the target side, from a momentum (EMA) copy of the encoder that receives no gradients
            (parameters frozen; updated as k_params = m * k_params + (1 - m) * params before each step's keys);
- queue  a ring buffer of the last ``queue_size`` keys (gathered from every rank under DDP); the contrast starts
            only once the buffer is full ("filled before use"), so no zero rows ever act as negatives.
- loss   InfoNCE  -log exp(q.k / t) / (exp(q.k / t) + sum_queue exp(q.n / t)), temperature t.

Only layers up to the contrast layer are run for queries and keys (``exit_layer``); while the queue fills, only
keys are computed (as in InfoXLM's own criterion). Defaults follow it: [CLS] pooling, layer 8 of 12.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from xeval.engine.objectives.base import Objective, StepContext, gather, pool, resolve_layer, single_side


class KeyQueue(torch.nn.Module):
    """Ring buffer of keys (size Q, dim C); ``filled`` counts how many slots hold real keys."""

    def __init__(self, size: int, dim: int):
        super().__init__()
        self.register_buffer("keys", torch.zeros(size, dim))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))

    @property
    def full(self) -> bool:
        return int(self.filled) >= self.keys.shape[0]

    @torch.no_grad()
    def push(self, k: torch.Tensor) -> None:  # (N, C)
        size, n = self.keys.shape[0], k.shape[0]
        idx = (int(self.ptr) + torch.arange(n, device=k.device)) % size
        self.keys[idx[-size:]] = k[-size:].to(self.keys.dtype)
        self.ptr.fill_((int(self.ptr) + n) % size)
        self.filled.fill_(min(size, int(self.filled) + n))


class XLCO(Objective):
    data = "pairs"
    name = "xlco"

    def __init__(self, cfg: dict, tokens, encoder):
        super().__init__(cfg, tokens)
        depth = encoder.config.num_hidden_layers
        self.layer = resolve_layer(cfg.get("layer", "2/3"), depth, "objectives.xlco.layer")
        self.temperature = float(cfg.get("temperature", 0.05))
        self.momentum = float(cfg.get("momentum", 0.999))
        self.pooling = cfg.get("pooling", "cls")
        self.key_encoder = copy.deepcopy(encoder)
        for p in self.key_encoder.parameters():
            p.requires_grad_(False)
        self.queue = KeyQueue(int(cfg.get("queue_size", 4096)), encoder.config.hidden_size)

    def prepare(self, batch, gen: torch.Generator) -> dict:
        q_ids, q_mask = single_side(batch.src, self.tokens)
        k_ids, k_mask = single_side(batch.tgt, self.tokens)
        return {"q_ids": q_ids, "q_mask": q_mask, "k_ids": k_ids, "k_mask": k_mask}

    @torch.no_grad()
    def momentum_update(self, encoder) -> None:
        for pk, pq in zip(self.key_encoder.parameters(), encoder.parameters()):
            pk.mul_(self.momentum).add_(pq.detach(), alpha=1 - self.momentum)

    def sentence(self, encoder, ids, mask) -> torch.Tensor:
        h = encoder(ids, mask, exit_layer=self.layer).last_hidden_state  # (B, T, C) at the contrast layer
        return F.normalize(pool(h, mask, self.pooling).float(), dim=-1)  # (B, C)

    def forward(self, inputs: dict, owner, ctx: StepContext):
        with torch.no_grad():
            self.momentum_update(owner.encoder)
            self.key_encoder.eval()
            k = self.sentence(self.key_encoder, inputs["k_ids"], inputs["k_mask"])  # (B, C)
        if self.queue.full:
            q = self.sentence(owner.encoder, inputs["q_ids"], inputs["q_mask"])  # (B, C)
            pos = (q * k).sum(-1, keepdim=True)  # (B, 1)
            neg = q @ self.queue.keys.clone().T.to(q.dtype)  # (B, Q); a copy: push() below rewrites the buffer
            logits = torch.cat([pos, neg], dim=1) / self.temperature
            target = torch.zeros(len(q), dtype=torch.long, device=q.device)
            loss = F.cross_entropy(logits, target)
            acc = (logits.argmax(-1) == 0).float().mean().detach()
            tokens = int(inputs["q_mask"].sum())
        else:  # still filling the queue (as InfoXLM does): keys only, no query pass, no loss
            loss = torch.zeros((), device=k.device)
            acc, tokens = torch.zeros(()), 0
        self.queue.push(gather(k))
        return loss, {"xlco": loss.detach(), "xlco_acc": acc, "xlco_queue": float(self.queue.filled), "tokens": tokens}

