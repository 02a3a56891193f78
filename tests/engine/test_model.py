"""Engine encoder: gated relative position bias, HF registration and loading, hidden-state convention."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import xeval.engine  # noqa: F401  (registers the model with AutoModel)
from xeval.engine.model import MLMHead, SelfAttention, XevalConfig, XevalModel, relative_bucket


def tiny_config(**kw) -> XevalConfig:
    base = dict(vocab_size=100, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # fmt: skip
    return XevalConfig(**{**base, **kw})


def test_gated_bias_equals_formula_on_hand_built_case():
    attn = SelfAttention(tiny_config(relative_attention="gated"))
    with torch.no_grad():
        attn.gate_u.copy_(torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]]))
        attn.gate_v.copy_(torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, -1.0]]))
        attn.gate_w.copy_(torch.tensor([0.5, 3.0]))
    q = torch.tensor([[[[0.2, -1.0, 0.4, 1.0], [1.0, 0.5, -0.3, 0.0]],
                       [[0.0, 0.3, 0.0, 2.0], [-1.0, 1.0, 1.0, 1.0]]]])  # (B=1, H=2, T=2, Dh=4)  # fmt: skip
    d = torch.tensor([[[0.1, -0.2], [0.3, 0.4]], [[1.0, 2.0], [-1.0, 0.5]]])  # (H, T, T)
    r = attn.gated_bias(q, d)
    sig = torch.sigmoid
    for h, (u, v, w) in enumerate([([1, 0, 0, 0], [0, 0, 1, 0], 0.5), ([0, 2, 0, 0], [0, 0, 0, -1], 3.0)]):
        for i in range(2):
            gu = sig(torch.dot(q[0, h, i], torch.tensor(u, dtype=torch.float)))
            gr = sig(torch.dot(q[0, h, i], torch.tensor(v, dtype=torch.float)))
            for j in range(2):
                dij = d[h, i, j]
                expected = dij + gu * dij + (1 - gu) * w * gr * dij
                assert torch.allclose(r[0, h, i, j], expected, atol=1e-6)


def test_gated_bias_reduces_to_plain_bias_when_gates_saturate():
    torch.manual_seed(0)
    gated = XevalModel(tiny_config(relative_attention="gated")).eval()
    plain = XevalModel(tiny_config(relative_attention="plain")).eval()
    plain.load_state_dict(gated.state_dict(), strict=False)  # same weights; plain has no gates
    ids = torch.randint(4, 100, (2, 7))
    # q . u -> -inf and q . v -> -inf: g_update = g_reset = 0, so r = d exactly (the plain bucketed bias)
    attn = gated.layers[0].attn
    q = torch.randn(2, 2, 7, 4)
    d = torch.randn(2, 7, 7)
    with torch.no_grad():
        attn.gate_u.fill_(0.0)
        attn.gate_v.fill_(0.0)
        attn.gate_u[:, 0] = -1e4
        attn.gate_v[:, 0] = -1e4
        q[..., 0] = 1.0  # q . u = -1e4 for every query: both gates saturate at 0
        assert torch.allclose(attn.gated_bias(q, d), d[None].expand(2, -1, -1, -1))
        attn.gate_u[:, 0] = 1e4  # g_update -> 1: r = 2d, still a plain (scaled) relative bias
        assert torch.allclose(attn.gated_bias(q, d), 2 * d[None].expand(2, -1, -1, -1))
    # whole model: with u = v = 0 the gates are constant (1/2) and w = 0 leaves r = d + d/2, i.e. the plain-bias
    # model whose bucket table is 1.5 times larger gives exactly the same outputs
    with torch.no_grad():
        for layer in gated.layers:
            layer.attn.gate_u.zero_()
            layer.attn.gate_v.zero_()
            layer.attn.gate_w.zero_()
        plain.relative.table.weight.mul_(1.5)
        assert torch.allclose(gated(ids).last_hidden_state, plain(ids).last_hidden_state, atol=1e-5)


def test_relative_buckets_are_signed_monotone_and_clamped():
    rel = torch.arange(-300, 301)
    b = relative_bucket(rel, 32, 128)
    assert b.min() >= 0 and b.max() <= 31
    neg, pos = b[rel < 0], b[rel > 0]
    assert set(neg.tolist()).isdisjoint(pos.tolist())  # direction matters
    assert torch.all(pos[1:] >= pos[:-1])  # farther never maps to a nearer bucket
    assert b[rel == 200].item() == b[rel == 300].item()  # beyond max_distance: one bucket


@pytest.mark.parametrize("variant", [dict(), dict(relative_attention="gated"), dict(pre_norm=True, bias=False,
                                     position_embedding="none", relative_attention="plain")])  # fmt: skip
def test_automodel_loads_checkpoint_with_identical_hidden_states(tmp_path, variant):
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(1)
    model = XevalModel(tiny_config(**variant)).eval()
    model.save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).model_type == "xeval"
    loaded = AutoModel.from_pretrained(tmp_path, output_hidden_states=True).eval()
    assert type(loaded) is XevalModel
    ids = torch.randint(4, 100, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    ours = model(ids, mask, output_hidden_states=True)
    theirs = loaded(input_ids=ids, attention_mask=mask)
    assert len(theirs.hidden_states) == 3  # embeddings + one per layer
    for a, b in zip(ours.hidden_states, theirs.hidden_states):
        assert torch.equal(a, b)
    assert torch.equal(theirs.hidden_states[-1], theirs.last_hidden_state)
    # padding does not change the outputs of real tokens
    alone = model(ids[1:, :6], output_hidden_states=True).last_hidden_state
    assert torch.allclose(alone, ours.last_hidden_state[1:, :6], atol=1e-5)


def test_exit_layer_stops_early_and_matches_hidden_state():
    torch.manual_seed(0)
    model = XevalModel(tiny_config(num_hidden_layers=3)).eval()
    ids = torch.randint(4, 100, (2, 5))
    full = model(ids, output_hidden_states=True).hidden_states
    assert torch.equal(model(ids, exit_layer=2).last_hidden_state, full[2])


def _attention_kernels(model: XevalModel, ids: torch.Tensor) -> set[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(ids).last_hidden_state.sum().backward()
    return {e.key for e in prof.key_averages() if "attention" in e.key or e.key == "aten::bernoulli_"}


def test_no_attention_dropout_trains_through_the_math_path_and_infers_fused():
    """``attention_probs_dropout_prob: 0`` is the speed opt-in docs/engine.md names: no random mask is drawn, and on a
    CPU training takes SDPA's math path (its backward is faster than the fused kernel's, docs/measurements.md) while
    inference keeps the fused kernel; both compute the same attention. With attention dropout, SDPA's math path
    draws a random mask."""
    torch.manual_seed(0)
    ids = torch.randint(4, 100, (2, 16))
    model = XevalModel(tiny_config(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0))
    train = _attention_kernels(model.train(), ids)
    assert "aten::_scaled_dot_product_attention_math" in train and "aten::bernoulli_" not in train
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" not in train
    fused = _attention_kernels(model.eval(), ids)
    with torch.no_grad():
        trained_path = model.train()(ids).last_hidden_state
        inferred = model.eval()(ids).last_hidden_state
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in fused
    torch.testing.assert_close(trained_path, inferred, rtol=1e-5, atol=1e-5)  # same maths, up to rounding
    dropped = _attention_kernels(XevalModel(tiny_config(attention_probs_dropout_prob=0.1)).train(), ids)
    assert "aten::_scaled_dot_product_attention_math" in dropped and "aten::bernoulli_" in dropped


def test_mlm_head_projects_only_masked_positions():
    cfg = tiny_config()
    model = XevalModel(cfg)
    head = MLMHead(cfg, model.embeddings.tokens)
    seen = []
    head.register_forward_hook(lambda m, inp, out: seen.append((inp[0].shape, out.shape)))
    h = model(torch.randint(4, 100, (3, 10))).last_hidden_state
    sel = torch.zeros(3, 10, dtype=torch.bool)
    sel[0, 2] = sel[2, 5] = True
    head(h[sel])
    assert seen == [(torch.Size([2, 8]), torch.Size([2, 100]))]
    assert not any(p is model.embeddings.tokens.weight for p in head.parameters())  # tied, not duplicated


def test_exact_export_to_stock_bert(tmp_path):
    from transformers import AutoModel

    from xeval.base.errors import UserError
    from xeval.engine.export import export_bert, to_bert

    torch.manual_seed(0)
    model = XevalModel(tiny_config()).eval()
    model.save_pretrained(tmp_path / "xeval")
    export_bert(tmp_path / "xeval", tmp_path / "bert")
    bert = AutoModel.from_pretrained(tmp_path / "bert", output_hidden_states=True).eval()
    assert bert.config.model_type == "bert"
    ids = torch.randint(4, 100, (2, 9))
    mask = torch.ones_like(ids)
    mask[0, 7:] = 0
    ours = model(ids, mask, output_hidden_states=True).hidden_states
    theirs = bert(input_ids=ids, attention_mask=mask).hidden_states
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a[mask.bool()], b[mask.bool()], atol=1e-5)
    with pytest.raises(UserError):
        to_bert(XevalModel(tiny_config(relative_attention="gated")))


def test_import_xeval_alone_registers_the_model_with_automodel_lazily(tmp_path):
    import subprocess
    import sys

    torch.manual_seed(0)
    XevalModel(tiny_config()).save_pretrained(tmp_path / "ckpt")
    code = ("import sys, xeval; assert 'torch' not in sys.modules, 'import xeval pulled torch in'\n"
            "from transformers import AutoModel\n"
            f"m = AutoModel.from_pretrained({str(tmp_path / 'ckpt')!r}); print(type(m).__name__)")  # fmt: skip
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "XevalModel", proc.stderr[-2000:]


def test_export_verb_writes_a_stock_bert_with_the_same_hidden_states(tmp_path, capsys):
    from transformers import AutoModel, BertModel

    from xeval.cli import main

    torch.manual_seed(0)
    model = XevalModel(tiny_config(hidden_act="gelu_new")).eval()
    model.save_pretrained(tmp_path / "ckpt")
    assert main(["export", "--to", "bert", str(tmp_path / "ckpt"), "--out", str(tmp_path / "bert")]) == 0
    bert = AutoModel.from_pretrained(tmp_path / "bert", output_hidden_states=True).eval()
    assert type(bert) is BertModel
    ids = torch.randint(4, 100, (3, 11))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        ours = model(ids, mask, output_hidden_states=True).hidden_states
        theirs = bert(input_ids=ids, attention_mask=mask).hidden_states
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert torch.allclose(a[mask.bool()], b[mask.bool()], atol=1e-5)
    # an architecture BERT cannot reproduce: one line naming the option, nothing written
    XevalModel(tiny_config(pre_norm=True)).save_pretrained(tmp_path / "preln")
    capsys.readouterr()
    assert main(["export", "--to", "bert", str(tmp_path / "preln"), "--out", str(tmp_path / "bert2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pre_norm: true (BERT is post-LN)" in err[0], err
    assert not (tmp_path / "bert2").exists() and not (tmp_path / "bert2.partial").exists()


@pytest.mark.parametrize("kind", ["gated", "plain"])
def test_the_bias_leaves_every_other_initial_weight_as_without_it(kind):
    """XLM-E's ablation compares a model with the relative position bias to one without, from the same seed: they
    must start equal in everything they share (encoder and the heads built after it), or the comparison measures
    other random draws too. The bias draws from a stream of its own (``bias_generator``)."""
    from xeval.engine.objectives import PretrainModel
    from xeval.engine.objectives.base import TokenInfo

    tokens = TokenInfo(vocab_size=100, pad=1, bos=0, eos=2, unk=3, mask=99, first_normal=4)
    objectives = {"mrtd": {}, "trtd": {}}
    built = {}
    for relative in (kind, "none"):
        torch.manual_seed(3)
        model = PretrainModel(tiny_config(relative_attention=relative), objectives, tokens)
        built[relative] = (model.state_dict(), torch.rand(4))  # the global stream after the model: equal too
    (with_bias, after_bias), (without, after) = built[kind], built["none"]
    shared = set(with_bias) & set(without)
    assert set(with_bias) - shared and shared == set(without)  # the bias's parameters are the only extra ones
    assert any(k.startswith("heads.") for k in shared)
    assert all(torch.equal(with_bias[k], without[k]) for k in shared)
    assert torch.equal(after_bias, after)
    # the bias itself is random (not zero) and reproducible from the seed
    torch.manual_seed(3)
    again = PretrainModel(tiny_config(relative_attention=kind), objectives, tokens).state_dict()
    table = "encoder.relative.table.weight"
    assert with_bias[table].abs().sum() > 0 and torch.equal(again[table], with_bias[table])
    # ELECTRA's generator is a model of its own: its bias is drawn apart from the encoder's, not a copy of it
    assert not torch.equal(with_bias["heads.generator.relative.table.weight"], with_bias[table])
    # a re-initialisation after the same seed draws the bias again as the first initialisation did
    torch.manual_seed(3)
    model = XevalModel(tiny_config(relative_attention=kind))
    first = model.relative.table.weight.clone()
    torch.manual_seed(3)
    model.init_weights()
    assert torch.equal(model.relative.table.weight, first)
