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
    languages: list[str] = []  # the model's language embeddings (XLM), if any: rows then carry language ids

    def build_heads(self, owner) -> None:
        self.languages = list(owner.encoder.config.languages or [])
        if "mlm" not in owner.heads:
            owner.heads["mlm"] = MLMHead(owner.encoder.config, owner.encoder.embeddings.tokens)

    def inputs_of(self, batch) -> dict:
        ids, attention = mono_inputs(batch)
        out = {"ids": ids, "attention_mask": attention}
        if self.languages:  # one language per packed row
            index = {lang: i for i, lang in enumerate(self.languages)}
            out["language_ids"] = torch.tensor([index[lang] for lang in batch[1]])[:, None].expand_as(ids).clone()
        return out

    def prepare(self, batch, gen: torch.Generator) -> dict:
        d = self.inputs_of(batch)
        inputs, labels = mask_tokens(d.pop("ids"), self.tokens, float(self.cfg.get("mask_prob", 0.15)), gen)
        return {"input_ids": inputs, "labels": labels, "n_total": (labels != -100).sum(), **d}

    def forward(self, inputs: dict, owner, ctx: StepContext):
        h = owner.encoder(inputs["input_ids"], inputs["attention_mask"], position_ids=inputs.get("position_ids"),
                          language_ids=inputs.get("language_ids")).last_hidden_state  # (B, T, C)  # fmt: skip
        sel = inputs["labels"] != -100  # (B, T)
        logits = owner.heads["mlm"](h[sel])  # (N, V): only the masked positions are projected
        target = inputs["labels"][sel]
        logits = logits.float()  # the loss in fp32; fp32 logits are the same tensor (nothing copied)
        loss = F.cross_entropy(logits, target, reduction="sum") * ctx.world / inputs["n_total"].clamp(min=1)
        # accuracy over the global masked tokens (averaging the ranks' values gives it, as for the loss);
        # max(-1).indices = argmax(-1) (both the first maximum), ~3x faster on the CPU (argmax was 5 % of a step)
        acc = (logits.max(-1).indices == target).float().sum() * ctx.world / inputs["n_total"].clamp(min=1)
        tokens = int(inputs["attention_mask"].sum())
        return loss, {self.name: loss.detach(), f"{self.name}_acc": acc.detach(), "tokens": tokens,
                      "_n": inputs["n_total"]}  # fmt: skip


class TLM(MLM):
    """XLM-R-style by default (one position sequence over the pair, no language embeddings). ``position_reset:
    true`` restarts positions at 0 for the second side, and a model with language embeddings gives each side its
    language's vector: XLM's TLM (Conneau & Lample 2019, section 3.3)."""

    data = "pairs"
    name = "tlm"

    def inputs_of(self, batch) -> dict:
        ids, attention = concat_pairs(batch, self.tokens)
        out = {"ids": ids, "attention_mask": attention}
        reset, langs = bool(self.cfg.get("position_reset", False)), self.languages
        if not (reset or langs):
            return out
        positions, language_ids = torch.zeros_like(ids), torch.zeros_like(ids)
        index = {lang: i for i, lang in enumerate(langs)}
        for r, (a, b, key, swapped) in enumerate(zip(batch.src, batch.tgt, batch.keys, batch.swapped)):
            n_a, n_b = len(a) + 2, len(b) + 2  # <s> A </s> | </s> B </s>
            positions[r, :n_a] = torch.arange(n_a)
            positions[r, n_a : n_a + n_b] = torch.arange(n_b) if reset else torch.arange(n_a, n_a + n_b)
            if langs:
                la, lb = key.split("-")[::-1] if swapped else key.split("-")
                language_ids[r, :n_a], language_ids[r, n_a : n_a + n_b] = index[la], index[lb]
        out["position_ids"] = positions
        if langs:
            out["language_ids"] = language_ids
        return out
