"""Exact export of an engine encoder to a stock ``transformers.BertModel``, where the architecture allows it:
post-LN, biases, learned absolute positions, no relative position bias, GELU. Then tools that know nothing of
xeval load the checkpoint (``model_type: bert``) and compute the same hidden states."""

from __future__ import annotations

from pathlib import Path

import torch

from xeval.engine.model import XevalModel
from xeval.errors import UserError


def to_bert(model: XevalModel):
    from transformers import BertConfig, BertModel

    c = model.config
    if c.pre_norm or not c.bias or c.position_embedding != "absolute" or c.relative_attention != "none":
        raise UserError("only post-LN encoders with biases, absolute positions and no relative bias map to BertModel")
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
    """Write ``out`` = a BertModel checkpoint (safetensors) + the engine checkpoint's tokenizer files."""
    import shutil

    src, out = Path(checkpoint), Path(out)
    bert = to_bert(XevalModel.from_pretrained(src)).eval()
    bert.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy(src / name, out / name)
    return out
