"""How a fine-tuned model draws its dropout masks (the recipe's ``dropout_rng``): ``use_masks(model, rng)`` swaps
every ``nn.Dropout`` for ``xeval.engine.dropout.Dropout`` and routes the attention probabilities' dropout through
the same masks, and says what it swapped (recorded in the result's training report).

Attention: a Hugging Face model whose attention goes through transformers' attention interface (BERT, XLM-R and
most encoders of transformers 5) gets ``xeval_sfc64``, registered here: in training on a CPU it is the eager
attention (products, additive mask, softmax, dropout with SFC64 masks, product) -- the same maths as the SDPA math
path torch takes under dropout, without its fully-masked-row check, which no padded encoder row needs; everywhere
else (evaluation, a GPU, causal or grouped-query attention) it is transformers' own SDPA attention, so predictions
are unchanged. An engine model's attention takes the masks through its ``dropout_rng``. A model with neither keeps
torch's masks in attention (said in the description)."""

from __future__ import annotations

import torch
from torch import nn

from xeval.engine import dropout as sfc64

ATTENTION = "xeval_sfc64"
_registered = False


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Transformers' attention-interface signature. query/key/value: (B, H, T, Dh); mask: (B, 1, T, T) bool
    (True = attend) or additive float, or None."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    eager = (module.training and dropout > 0 and query.device.type == "cpu" and key.shape[1] == query.shape[1]
             and not getattr(module, "is_causal", False) and not kwargs.get("is_causal"))
    if not eager:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, T, T)
    if attention_mask is not None:
        mask = attention_mask[:, :, :, : key.shape[-2]]
        if mask.dtype == torch.bool:
            weights = weights.masked_fill(~mask, torch.finfo(weights.dtype).min)
        else:
            weights = weights + mask
    weights = sfc64.dropout(torch.softmax(weights, dim=-1), dropout)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), None  # (B, T, H, Dh)


def _register() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

        AttentionInterface.register(ATTENTION, _attention)
        AttentionMaskInterface.register(ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])  # the masks SDPA takes
        _registered = True


def use_masks(model: nn.Module, rng: str) -> str:
    """Make ``model`` (a fine-tuning model: backbone + head, already a private copy) draw its dropout masks with
    ``rng`` ("sfc64" or "torch"); returns a one-line description of what draws them."""
    if rng == "torch":
        return "torch"
    swapped, engine_layers = sfc64.use_sfc64(model)
    attention = "torch's masks (attention not switchable)"
    # only SDPA models: outside CPU training xeval_sfc64 *is* transformers' SDPA attention, so their predictions stay
    # bit for bit; a model loaded with another attention keeps it (and torch's attention masks)
    # (layers share their model's config: the first module of a config, in pre-order, is the model that owns it)
    configs: dict[int, nn.Module] = {}
    for m in model.modules():
        if getattr(getattr(m, "config", None), "_attn_implementation", None) == "sdpa":
            configs.setdefault(id(m.config), m)
    if engine_layers:
        attention = f"sfc64 in {engine_layers} engine attention layers"
    elif configs:
        _register()
        for owner in configs.values():
            if hasattr(owner, "set_attn_implementation"):
                owner.set_attn_implementation(ATTENTION)
            else:
                owner.config._attn_implementation = ATTENTION
        attention = f"sfc64 ({ATTENTION})"
    return f"sfc64: {swapped} dropout modules, attention {attention}"
