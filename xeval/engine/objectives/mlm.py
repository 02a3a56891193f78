"""Masked language modelling (XLM-R) on packed monolingual rows; TLM (XLM) is the same loss on a concatenated
translation pair ``<s> A </s></s> B </s>``, so the model can look at the translation to fill a mask."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from xeval.engine.model import MLMHead
from xeval.engine.objectives.base import Objective, StepContext, concat_pairs, mask_tokens, mono_inputs


class MLM(Objective):
    data = "mono"
    name = "mlm"

    def build_heads(self, owner) -> None:
        if "mlm" not in owner.heads:
            owner.heads["mlm"] = MLMHead(owner.encoder.config, owner.encoder.embeddings.tokens)

    def inputs_of(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return mono_inputs(batch)

    def prepare(self, batch, gen: torch.Generator) -> dict:
        ids, attention = self.inputs_of(batch)
        inputs, labels = mask_tokens(ids, self.tokens, float(self.cfg.get("mask_prob", 0.15)), gen)
        return {"input_ids": inputs, "attention_mask": attention, "labels": labels,
                "n_total": (labels != -100).sum()}  # fmt: skip

    def forward(self, inputs: dict, owner, ctx: StepContext):
        h = owner.encoder(inputs["input_ids"], inputs["attention_mask"]).last_hidden_state  # (B, T, C)
        sel = inputs["labels"] != -100  # (B, T)
        logits = owner.heads["mlm"](h[sel])  # (N, V): only the masked positions are projected
        target = inputs["labels"][sel]
        loss = F.cross_entropy(logits.float(), target, reduction="sum") * ctx.world / inputs["n_total"].clamp(min=1)
        # accuracy over the global masked tokens (averaging the ranks' values gives it, as for the loss)
        acc = (logits.argmax(-1) == target).float().sum() * ctx.world / inputs["n_total"].clamp(min=1)
        tokens = int(inputs["attention_mask"].sum())
        return loss, {self.name: loss.detach(), f"{self.name}_acc": acc.detach(), "tokens": tokens,
                      "_n": inputs["n_total"]}  # fmt: skip


class TLM(MLM):
    data = "pairs"
    name = "tlm"

    def inputs_of(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return concat_pairs(batch, self.tokens)
