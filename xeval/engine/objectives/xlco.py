"""InfoXLM's cross-lingual contrast (XLCO): a translation pair is a positive, keys of earlier batches are negatives.

Reference: microsoft/unilm ``infoxlm/src-infoxlm/infoxlm`` (criterions/xlco.py, models/infoxlm.py,
data/xlco_dataset.py, tasks/infoxlm.py); the options below name where xeval follows it and where it does not.

- inputs ``<s> A </s>`` (query, source side) and ``<s> B </s>`` (key, target side), both 15 %-masked (80/10/10) as
            the reference's XLCO dataset does (``mask_prob``; 0 = clean inputs);
- query  q = the [CLS] vector of the source side at the contrast layer (default 2/3 of the depth: 8 of 12), through
            a learned projection (``projection: true``, a C x C matrix as the reference's ``--use_proj``);
- key    k = the same for the target side from a momentum (EMA) copy of the encoder *and* of the projection that
            receives no gradients (k_params = m * k_params + (1 - m) * params, once per optimizer step);
- score  cosine (``similarity: cosine``, vectors L2-normalised; xeval's default) or the reference's raw dot
            product (``similarity: dot``), divided by the temperature t;
- queue  a ring buffer of the last ``queue_size`` keys (gathered from every rank under DDP); the contrast starts
            only once it is full ("filled before use", as the reference's fill_queue), so no placeholder rows ever
            act as negatives;
- mixup  (``mixup: true``) the reference's mix-up contrast: two pairs make one instance, each side the two
            sentences concatenated in an order drawn per side, query and key sides swapped at random (B pairs
            -> B/2 instances);
- enable_step N: no contrast before step N; the key encoder is a plain copy of the query encoder until then
            (the reference's ``--xlco_enable_step``), and keys start filling the queue just in time to be full at N;
- loss   InfoNCE  -log exp(s(q,k)/t) / (exp(s(q,k)/t) + sum_queue exp(s(q,n)/t)), averaged over the instances
            (``train.loss_norm: pooled`` sums it with MLM/TLM over sentences + masked tokens, as fairseq does).

Only layers up to the contrast layer are run for queries and keys (``exit_layer``); while the queue fills, only
keys are computed (as in InfoXLM's own criterion).
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

from xeval.base.errors import ConfigError
from xeval.engine.objectives.base import (
    Objective,
    StepContext,
    gather,
    mask_tokens,
    pool,
    resolve_layer,
    single_side,
)


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
        depth, dim = encoder.config.num_hidden_layers, encoder.config.hidden_size
        self.layer = resolve_layer(cfg.get("layer", "2/3"), depth, "objectives.xlco.layer")
        self.temperature = float(cfg.get("temperature", 0.05))
        self.momentum = float(cfg.get("momentum", 0.999))
        self.pooling = cfg.get("pooling", "cls")
        self.mask_prob = float(cfg.get("mask_prob", 0.15))
        self.similarity = cfg.get("similarity", "cosine")
        self.mixup = bool(cfg.get("mixup", False))
        self.enable_step = int(cfg.get("enable_step", 0))
        if self.similarity not in ("cosine", "dot"):
            raise ConfigError(f"objectives.xlco.similarity must be cosine or dot, got {self.similarity!r}")
        self.key_encoder = copy.deepcopy(encoder)
        self.proj = self.key_proj = None
        if cfg.get("projection", False):
            self.proj = torch.nn.Linear(dim, dim, bias=False)
            torch.nn.init.normal_(self.proj.weight, std=0.02)
            self.key_proj = copy.deepcopy(self.proj)
        for p in [*self.key_encoder.parameters(), *(self.key_proj.parameters() if self.key_proj else [])]:
            p.requires_grad_(False)
        self.queue = KeyQueue(int(cfg.get("queue_size", 4096)), dim)

    def prepare(self, batch, gen: torch.Generator) -> dict:
        src, tgt = batch.src, batch.tgt
        if self.mixup:
            src, tgt = mixup_pairs(src, tgt, self.tokens.eos, gen)
        q_ids, q_mask = single_side(src, self.tokens)
        k_ids, k_mask = single_side(tgt, self.tokens)
        if self.mask_prob > 0:
            q_ids, _ = mask_tokens(q_ids, self.tokens, self.mask_prob, gen)
            k_ids, _ = mask_tokens(k_ids, self.tokens, self.mask_prob, gen)
        return {"q_ids": q_ids, "q_mask": q_mask, "k_ids": k_ids, "k_mask": k_mask,
                "n_total": torch.tensor(len(src))}  # fmt: skip

    @torch.no_grad()
    def momentum_update(self, encoder, momentum: float) -> None:
        pairs = list(zip(self.key_encoder.parameters(), encoder.parameters()))
        if self.proj is not None:
            pairs.append((self.key_proj.weight, self.proj.weight))
        for pk, pq in pairs:
            pk.mul_(momentum).add_(pq.detach(), alpha=1 - momentum)

    def sentence(self, encoder, proj, ids, mask) -> torch.Tensor:
        h = encoder(ids, mask, exit_layer=self.layer).last_hidden_state  # (B, T, C) at the contrast layer
        v = pool(h, mask, self.pooling)  # (B, C)
        if proj is not None:
            v = proj(v)
        v = v.float()
        return F.normalize(v, dim=-1) if self.similarity == "cosine" else v

    def forward(self, inputs: dict, owner, ctx: StepContext):
        n_global = int(inputs["n_total"])
        fill_steps = math.ceil(self.queue.keys.shape[0] / max(1, n_global))
        zero = torch.zeros((), device=inputs["q_ids"].device)
        idle = {"xlco": zero, "xlco_acc": zero, "xlco_queue": float(self.queue.filled), "tokens": 0, "_n": 0}
        if ctx.step < self.enable_step - fill_steps:  # long before the contrast starts: nothing to do
            return zero, idle
        with torch.no_grad():
            if ctx.micro == 0:  # once per optimizer step; a plain copy until the contrast is enabled
                self.momentum_update(owner.encoder, self.momentum if ctx.step >= self.enable_step else 0.0)
            self.key_encoder.eval()
            k = self.sentence(self.key_encoder, self.key_proj, inputs["k_ids"], inputs["k_mask"])  # (b, C)
        if self.queue.full and ctx.step >= self.enable_step:
            q = self.sentence(owner.encoder, self.proj, inputs["q_ids"], inputs["q_mask"])  # (b, C)
            pos = (q * k).sum(-1, keepdim=True)  # (b, 1)
            neg = q @ self.queue.keys.clone().T.to(q.dtype)  # (b, Q); a copy: push() below rewrites the buffer
            logits = torch.cat([pos, neg], dim=1) / self.temperature
            target = torch.zeros(len(q), dtype=torch.long, device=q.device)
            # mean over the global instances, times world: DDP's averaging gives the one-process gradient
            loss = F.cross_entropy(logits, target, reduction="sum") * ctx.world / n_global
            acc = ((logits.argmax(-1) == 0).float().sum() * ctx.world / n_global).detach()
            stats = {"xlco": loss.detach(), "xlco_acc": acc, "tokens": int(inputs["q_mask"].sum()), "_n": n_global}
        else:  # still filling the queue (as InfoXLM does): keys only, no query pass, no loss
            loss, stats = zero, dict(idle)
        self.queue.push(gather(k))
        stats["xlco_queue"] = float(self.queue.filled)
        return loss, stats


def mixup_pairs(src: list, tgt: list, eos: int, gen: torch.Generator) -> tuple[list, list]:
    """InfoXLM's mix-up contrast (data/xlco_dataset.py): pairs (2i, 2i+1) become one instance whose source side is
    ``a1 </s> a2`` or ``a2 </s> a1`` and whose target side is ``b1 </s> b2`` or ``b2 </s> b1`` (orders drawn
    independently), the two sides then swapped with probability 1/2. (single_side adds ``<s>``/``</s>`` around.)"""
    if len(src) % 2:
        raise ConfigError(f"objectives.xlco.mixup needs an even data.pair_batch, got {len(src)}")
    out_src, out_tgt = [], []
    for i in range(0, len(src), 2):
        mode = int(torch.randint(0, 8, (1,), generator=gen))
        a1, a2 = (src[i + 1], src[i]) if mode & 1 else (src[i], src[i + 1])
        b1, b2 = (tgt[i + 1], tgt[i]) if mode & 2 else (tgt[i], tgt[i + 1])
        a, b = [*a1, eos, *a2], [*b1, eos, *b2]
        if mode & 4:
            a, b = b, a
        out_src.append(a)
        out_tgt.append(b)
    return out_src, out_tgt
