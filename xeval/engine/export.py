"""Exact export of an engine encoder to a stock ``transformers.BertModel``, where the architecture allows it:
post-LN, biases, learned absolute positions, no relative position bias, GELU. Then tools that know nothing of
xeval load the checkpoint (``model_type: bert``) and compute the same hidden states."""

from __future__ import annotations

from pathlib import Path

import torch

from xeval.base.errors import UserError
from xeval.engine.model import XevalConfig, XevalModel


def bert_blockers(c) -> list[str]:
    """The options of an engine config that a stock BertModel cannot reproduce (empty: the export is exact)."""
    out = []
    if c.relative_attention != "none":
        out.append(f"relative_attention: {c.relative_attention} (BERT has no relative position bias"
                   + (", let alone XLM-E's gated one)" if c.relative_attention == "gated" else ")"))
    if c.pre_norm:
        out.append("pre_norm: true (BERT is post-LN)")
    if not c.bias:
        out.append("bias: false (BERT's Linear and LayerNorm layers have biases)")
    if c.position_embedding != "absolute":
        out.append(f"position_embedding: {c.position_embedding} (BERT adds learned absolute positions)")
    if c.languages:
        out.append("languages (XLM's language embeddings: BERT has none)")
    if c.hidden_act not in ("gelu", "relu", "gelu_new"):
        out.append(f"hidden_act: {c.hidden_act}")
    return out


def to_bert(model: XevalModel):
    from transformers import BertConfig, BertModel

    c = model.config
    blockers = bert_blockers(c)
    if blockers:
        raise UserError(f"cannot export to a stock BertModel exactly: {'; '.join(blockers)}")
    cfg = BertConfig(vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_hidden_layers=c.num_hidden_layers,
                     num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
                     hidden_act=c.hidden_act, hidden_dropout_prob=c.hidden_dropout_prob,
                     attention_probs_dropout_prob=c.attention_probs_dropout_prob,
                     max_position_embeddings=c.max_position_embeddings, type_vocab_size=1,
                     layer_norm_eps=c.layer_norm_eps, pad_token_id=c.pad_token_id, bos_token_id=c.bos_token_id,
                     eos_token_id=c.eos_token_id)  # fmt: skip
    bert = BertModel(cfg, add_pooling_layer=False)
    d = c.hidden_size
    state = {
        "embeddings.word_embeddings.weight": model.embeddings.tokens.weight,
        "embeddings.position_embeddings.weight": model.embeddings.positions.weight,
        "embeddings.token_type_embeddings.weight": torch.zeros(1, d),  # BERT adds type 0's row: make it zero
        "embeddings.LayerNorm.weight": model.embeddings.norm.weight,
        "embeddings.LayerNorm.bias": model.embeddings.norm.bias,
    }
    for i, block in enumerate(model.layers):
        p = f"encoder.layer.{i}."
        w, b = block.attn.qkv.weight, block.attn.qkv.bias  # rows: [q; k; v]
        for j, name in enumerate(("query", "key", "value")):
            state[p + f"attention.self.{name}.weight"] = w[j * d : (j + 1) * d]
            state[p + f"attention.self.{name}.bias"] = b[j * d : (j + 1) * d]
        state[p + "attention.output.dense.weight"] = block.attn.out.weight
        state[p + "attention.output.dense.bias"] = block.attn.out.bias
        state[p + "attention.output.LayerNorm.weight"] = block.ln_attn.weight
        state[p + "attention.output.LayerNorm.bias"] = block.ln_attn.bias
        state[p + "intermediate.dense.weight"] = block.ffn.fc.weight
        state[p + "intermediate.dense.bias"] = block.ffn.fc.bias
        state[p + "output.dense.weight"] = block.ffn.proj.weight
        state[p + "output.dense.bias"] = block.ffn.proj.bias
        state[p + "output.LayerNorm.weight"] = block.ln_ffn.weight
        state[p + "output.LayerNorm.bias"] = block.ln_ffn.bias
    missing, unexpected = bert.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=False)
    missing = [k for k in missing if "position_ids" not in k and "token_type_ids" not in k]
    if missing or unexpected:
        raise RuntimeError(f"BertModel mapping incomplete: missing {missing}, unexpected {unexpected}")
    return bert


def export_bert(checkpoint: str | Path, out: str | Path) -> Path:
    """Write ``out`` = a BertModel checkpoint (safetensors) + the engine checkpoint's tokenizer files. Written into a
    temporary sibling folder and renamed, so a failed export leaves nothing behind."""
    import json
    import os
    import shutil

    src, out = Path(checkpoint), Path(out)
    try:
        model_type = json.loads((src / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        raise UserError(f"{src}: expected an engine checkpoint (config.json + model.safetensors)") from None
    if model_type != "xeval":
        raise UserError(f"{src}/config.json: model_type {model_type!r}; expected an engine checkpoint ('xeval')")
    if out.exists():
        raise UserError(f"{out}: exists already; choose a new output folder")
    from transformers.utils import logging as hf_logging

    blockers = bert_blockers(XevalConfig.from_pretrained(src))  # before any weight is read
    if blockers:
        raise UserError(f"{src}: cannot export to a stock BertModel exactly: {'; '.join(blockers)}")
    hf_logging.disable_progress_bar()
    bert = to_bert(XevalModel.from_pretrained(src)).eval()
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    bert.save_pretrained(tmp, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy(src / name, tmp / name)
    os.replace(tmp, out)
    return out
