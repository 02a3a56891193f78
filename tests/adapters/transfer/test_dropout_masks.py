"""use_masks: a fine-tuning model draws its dropout masks with SFC64 and computes the same maths otherwise."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import BertConfig, BertModel

import xeval.engine  # noqa: F401
from xeval.adapters.transfer import dropout_masks
from xeval.adapters.transfer.recipe import Recipe
from xeval.base.errors import ConfigError
from xeval.engine import dropout as sfc64
from xeval.engine.model import XevalConfig, XevalModel


def _bert():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=32, attn_implementation="sdpa")
    return BertModel(config)


def _inputs():
    ids = torch.randint(5, 60, (3, 12))
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, 7:] = 0  # padding: the attention mask matters
    return {"input_ids": ids, "attention_mask": mask}


def test_evaluation_is_unchanged_bit_for_bit():
    model = _bert().eval()
    swapped = copy.deepcopy(model)
    text = dropout_masks.use_masks(swapped, "sfc64")
    # the embeddings' + 2 layers x (attention probabilities, attention output, feed-forward output)
    assert text == "sfc64: 7 dropout modules, attention sfc64 (xeval_sfc64)"
    assert model.config._attn_implementation == "sdpa"  # the original is untouched
    batch = _inputs()
    with torch.no_grad():
        assert torch.equal(model(**batch).last_hidden_state, swapped.eval()(**batch).last_hidden_state)


def test_training_attention_is_sdpas_maths_when_nothing_is_dropped(monkeypatch):
    """With every mask 'keep' (patched) the written-out attention equals SDPA's at p = 0: only the masks differ."""
    model = _bert().train()
    swapped = copy.deepcopy(model)
    dropout_masks.use_masks(swapped, "sfc64")
    calls = []

    def keep_all(shape, p, dtype):
        calls.append(tuple(shape))
        return torch.ones(shape, dtype=dtype)

    monkeypatch.setattr(sfc64, "keep_scale", keep_all)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    batch = _inputs()
    want = model(**batch).last_hidden_state
    got = swapped(**batch).last_hidden_state
    assert (3, 4, 12, 12) in calls  # the attention probabilities went through SFC64 masks
    assert torch.allclose(got, want, atol=1e-6)


def test_torch_leaves_the_model_alone():
    model = _bert()
    assert dropout_masks.use_masks(model, "torch") == "torch"
    assert model.config._attn_implementation == "sdpa"
    assert all(type(m) is not sfc64.Dropout for m in model.modules())


def test_engine_attention_takes_the_masks(monkeypatch):
    torch.manual_seed(0)
    config = XevalConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=32, attention_probs_dropout_prob=0.1, hidden_dropout_prob=0.0)
    model = XevalModel(config).train()
    swapped = copy.deepcopy(model)
    assert "sfc64 in 2 engine attention layers" in dropout_masks.use_masks(swapped, "sfc64")
    monkeypatch.setattr(sfc64, "keep_scale", lambda shape, p, dtype: torch.ones(shape, dtype=dtype))
    for layer in model.modules():
        if hasattr(layer, "dropout_rng"):
            layer.dropout = 0.0  # the reference: no dropout (the patched masks keep everything)
    batch = _inputs()
    assert torch.allclose(swapped(**batch).last_hidden_state, model(**batch).last_hidden_state, atol=1e-6)


def test_recipe_names_the_generator():
    assert Recipe.build().dropout_rng == "sfc64"
    assert Recipe.build({"dropout_rng": "torch"}).dropout_rng == "torch"
    with pytest.raises(ConfigError, match="dropout_rng: expected 'sfc64' or 'torch'"):
        Recipe.build({"dropout_rng": "philox"})


def test_a_model_loaded_with_eager_attention_keeps_it():
    """Only SDPA models are switched: xeval_sfc64 evaluates through SDPA, which would change an eager model's
    predictions by rounding."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=32, attn_implementation="eager")
    model = BertModel(config)
    text = dropout_masks.use_masks(model, "sfc64")
    assert text == "sfc64: 7 dropout modules, attention torch's masks (attention not switchable)"
    assert model.config._attn_implementation == "eager"
