"""XLM-E's ELECTRA-style objectives: MRTD (multilingual replaced token detection, on monolingual rows) and TRTD
(translation replaced token detection, on concatenated translation pairs).

A small generator (an ``XevalModel`` with fewer layers that shares the discriminator's embedding layer: token and
position embeddings and the embedding LayerNorm, as ELECTRA shares its embeddings) fills the masked positions by
sampling from its softmax; the discriminator (the encoder that is kept) labels every non-padding token "replaced"
or "original". A position is "replaced" only where the sampled token differs from the original (a generator that
guesses right produces an "original" label), never on padding. The generator's input follows ELECTRA
(``pretrain_helpers.mask``): of the chosen 15 %, 85 % become <mask> and 15 % stay unchanged, no random tokens
(``mask_frac`` / ``random_frac`` change it). Loss = generator MLM + ``disc_weight`` (50) x discriminator binary
cross-entropy; the sampling is not differentiated, so the discriminator loss does not reach the generator except
through the shared embeddings.

Sampling is inverse-CDF with one uniform number per position drawn in ``prepare`` from the step's seeded
generator over the *global* batch: the same tokens are sampled whatever the number of processes (an exact sample
of softmax(logits), like ELECTRA's Gumbel-max).
"""

from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from xeval.engine.model import MLMHead, XevalModel
from xeval.engine.objectives.base import Objective, StepContext, concat_pairs, mask_tokens, mono_inputs


class RTDHead(nn.Module):
    """dense -> GELU -> 1 logit per token (ELECTRA's discriminator head)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (N, C) -> (N,)
        return self.out(F.gelu(self.dense(h))).squeeze(-1)


def sample_softmax(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The token i with cdf[i-1] <= u * total < cdf[i] of softmax(logits): an exact sample when u ~ U[0, 1).
    (N, V), (N,) -> (N,)"""
    cdf = torch.softmax(logits.float(), dim=-1).cumsum(-1)  # (N, V)
    value = (u.to(cdf.dtype) * cdf[:, -1]).unsqueeze(-1).contiguous()  # (N, 1)
    return torch.searchsorted(cdf, value, right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)


def rtd_labels(original: torch.Tensor, corrupted: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    """1.0 where the corrupted token differs from the original, 0.0 elsewhere, -1 (ignored) on padding. (B, T)"""
    labels = (corrupted != original).float()
    return labels.masked_fill(attention == 0, -1.0)


class MRTD(Objective):
    data = "mono"
    name = "mrtd"

    def build_heads(self, owner) -> None:
        if "generator" not in owner.heads:
            enc_cfg = owner.encoder.config
            gen_cfg = copy.deepcopy(enc_cfg)
            gen_cfg.num_hidden_layers = int(self.cfg.get("generator_layers", max(1, enc_cfg.num_hidden_layers // 3)))
            gen_cfg.intermediate_size = int(self.cfg.get("generator_ffn", enc_cfg.intermediate_size))
            generator = XevalModel(gen_cfg, bias_stream=1)  # its bias drawn apart from the encoder's
            generator.embeddings = owner.encoder.embeddings  # shared: tokens, positions, embedding LayerNorm
            owner.heads["generator"] = generator
            owner.heads["generator_mlm"] = MLMHead(gen_cfg, owner.encoder.embeddings.tokens)
            owner.heads["rtd"] = RTDHead(enc_cfg.hidden_size)

    def inputs_of(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return mono_inputs(batch)

    def prepare(self, batch, gen: torch.Generator) -> dict:
        ids, attention = self.inputs_of(batch)
        masked, labels = mask_tokens(ids, self.tokens, float(self.cfg.get("mask_prob", 0.15)), gen,
                                     mask_frac=float(self.cfg.get("mask_frac", 0.85)),
                                     random_frac=float(self.cfg.get("random_frac", 0.0)))  # fmt: skip
        uniform = torch.rand(ids.shape, generator=gen)  # (B, T): the sampling's randomness, global like the masking
        return {"original": ids, "input_ids": masked, "attention_mask": attention, "labels": labels,
                "uniform": uniform, "n_total": (labels != -100).sum(), "n_tokens": attention.sum()}  # fmt: skip

    def forward(self, inputs: dict, owner, ctx: StepContext):
        ids, attention, labels = inputs["original"], inputs["attention_mask"], inputs["labels"]
        sel = labels != -100  # (B, T)
        g_h = owner.heads["generator"](inputs["input_ids"], attention).last_hidden_state  # (B, T, C)
        g_logits = owner.heads["generator_mlm"](g_h[sel])  # (N, V)
        gen_loss = F.cross_entropy(g_logits.float(), labels[sel], reduction="sum") * ctx.world
        gen_loss = gen_loss / inputs["n_total"].clamp(min=1)
        with torch.no_grad():
            sampled = sample_softmax(g_logits.detach(), inputs["uniform"][sel])
            corrupted = inputs["input_ids"].clone()
            corrupted[sel] = sampled
            # unmasked positions keep the original token (the 10 % "random"/"keep" cases of masking included)
            corrupted = torch.where(sel, corrupted, ids)
        target = rtd_labels(ids, corrupted, attention)  # (B, T)
        d_h = owner.encoder(corrupted, attention).last_hidden_state  # (B, T, C)
        valid = target >= 0
        d_logits = owner.heads["rtd"](d_h[valid])  # (M,)
        disc_loss = F.binary_cross_entropy_with_logits(d_logits.float(), target[valid], reduction="sum")
        disc_loss = disc_loss * ctx.world / inputs["n_tokens"].clamp(min=1)
        w = float(self.cfg.get("disc_weight", 50.0))
        loss = gen_loss + w * disc_loss
        with torch.no_grad():
            # shares of the global tokens (this rank's count * world / global count averages to them over ranks)
            n_tokens = inputs["n_tokens"].clamp(min=1)
            replaced = target[valid].sum() * ctx.world / n_tokens
            disc_acc = ((d_logits > 0).float() == target[valid]).float().sum() * ctx.world / n_tokens
        n = self.name
        return loss, {f"{n}_gen": gen_loss.detach(), f"{n}_disc": disc_loss.detach(), f"{n}_replaced": replaced,
                      f"{n}_acc": disc_acc, "tokens": int(attention.sum())}  # fmt: skip


class TRTD(MRTD):
    data = "pairs"
    name = "trtd"

    def inputs_of(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return concat_pairs(batch, self.tokens)
