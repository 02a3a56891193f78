"""Continued pre-training (``model.init`` / ``xeval pretrain --init DIR``): a 0-step run is the init model, hidden
state for hidden state (tiny BERT, tiny XLM-R, a sentence-transformers layout, the real multilingual-e5-small); a
few steps train and export a checkpoint xeval's Encoder loads; a bad folder is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.engine import micro_config

REPO = Path(__file__).resolve().parents[2]
SENTENCES = ["the cat sleeps", "die Katze schläft im Haus", "the small red bird reads a book in the city"]


def _copy_tokenizer(src: Path, dst: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(src / name, dst / name)


def make_bert(folder: Path, tokenizer: Path, layout: str = "plain", seed: int = 1) -> Path:
    """A random 2 x 48 BertForMaskedLM (weights prefixed ``bert.``, an MLM head, a 2-row token-type table) with
    ``tokenizer``'s files; ``layout`` sentence-transformers puts it into 0_Transformer/ under a modules.json."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=510, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                     max_position_embeddings=96, type_vocab_size=2, pad_token_id=1, layer_norm_eps=1e-12)
    model = BertForMaskedLM(cfg)
    with torch.no_grad():  # random LayerNorms and biases too, so a swapped tensor cannot go unnoticed
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    inner = folder / "0_Transformer" if layout == "sentence-transformers" else folder
    inner.mkdir(parents=True)
    model.save_pretrained(inner, safe_serialization=True)
    _copy_tokenizer(tokenizer, inner)
    if layout == "sentence-transformers":
        (folder / "modules.json").write_text(json.dumps([
            {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    return folder


def make_xlmr(folder: Path, tokenizer: Path, seed: int = 2, shard: str | None = None) -> Path:
    """A random 3 x 32 XLMRobertaModel (positions from padding_idx + 1 = 2, no MLM head) with ``tokenizer``;
    ``shard`` (e.g. "20KB"): weights in several files under model.safetensors.index.json."""
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(seed)
    cfg = XLMRobertaConfig(vocab_size=500, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=130, type_vocab_size=1, pad_token_id=1,
                           bos_token_id=0, eos_token_id=2, hidden_act="gelu_new", layer_norm_eps=1e-5)
    model = XLMRobertaModel(cfg, add_pooling_layer=True)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    folder.mkdir(parents=True)
    model.save_pretrained(folder, safe_serialization=True, **({"max_shard_size": shard} if shard else {}))
    _copy_tokenizer(tokenizer, folder)
    return folder


def hf_hidden(folder: Path, batch: dict) -> tuple[torch.Tensor, ...]:
    from transformers import AutoModel

    sub = folder / "0_Transformer" if (folder / "0_Transformer").is_dir() else folder
    model = AutoModel.from_pretrained(sub, output_hidden_states=True).eval()
    with torch.no_grad():
        return model(**batch).hidden_states


def ours_hidden(folder: Path, batch: dict) -> tuple[torch.Tensor, ...]:
    from xeval.models.encoder import Encoder

    enc = Encoder(str(folder))
    assert type(enc.model).__name__ == "XevalModel"
    with torch.no_grad():
        return enc.model(batch["input_ids"], batch["attention_mask"], output_hidden_states=True).hidden_states


def assert_same_hidden(init: Path, run: Path, atol: float = 1e-5) -> None:
    """All layers' hidden states of the run's checkpoint equal the init model's on the real (non-padding) tokens
    of a padded batch: padding positions differ by design (RoBERTa gives padding its own position row)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(run)
    batch = dict(tok(SENTENCES, padding=True, return_tensors="pt"))
    assert batch["attention_mask"].float().mean() < 1  # the batch is padded
    ours, theirs = ours_hidden(run, batch), hf_hidden(init, batch)
    assert len(ours) == len(theirs)
    keep = batch["attention_mask"].bool()
    for layer, (a, b) in enumerate(zip(ours, theirs)):
        assert torch.allclose(a[keep], b[keep], atol=atol), (layer, (a[keep] - b[keep]).abs().max().item())


def zero_step(tmp_path: Path, fake_root: Path, init: Path, objectives: dict | None = None):
    from xeval.engine.train import pretrain

    cfg = micro_config(fake_root, objectives or {"mlm": {}}, steps=0, seed=5)
    cfg = cfg.updated({"model": {"init": str(init)}})
    out = tmp_path / "run"
    pretrain(cfg, out, echo=lambda *a: None)
    return out


def test_zero_step_from_tiny_bert_is_the_init_model(tmp_path, fake_root, tokenizer_dir):
    init = make_bert(tmp_path / "bert", tokenizer_dir)
    out = zero_step(tmp_path, fake_root, init)
    assert_same_hidden(init, out)
    log = (out / "train.log").read_text()
    assert "model.hidden_size 32 -> 48 (the init model's)" in log  # the micro config's shape gave way
    assert "token type 0 folded" in log and "MLM head from the init folder" in log
    assert "exported the init model's weights" in log
    card = json.loads((out / "xeval_pretrain.json").read_text())
    digest = __import__("hashlib").sha256((init / "model.safetensors").read_bytes()).hexdigest()
    assert card["init"]["path"] == str(init.resolve()) and card["init"]["weights_sha256"] == digest
    assert card["config"]["model"]["init"] == str(init.resolve()) and "continued pre-training" in card["note"]
    for name in ("tokenizer.json", "tokenizer_config.json"):  # the init model's tokenizer files, byte for byte
        assert (out / name).read_bytes() == (init / name).read_bytes()
    config = json.loads((out / "config.json").read_text())
    assert (config["vocab_size"], config["max_position_embeddings"], config["layer_norm_eps"]) == (510, 96, 1e-12)


def test_zero_step_from_tiny_xlmr_and_a_sentence_transformers_folder(tmp_path, fake_root, tokenizer_dir):
    xlmr = make_xlmr(tmp_path / "xlmr", tokenizer_dir)
    out = zero_step(tmp_path / "a", fake_root, xlmr, {"mlm": {}, "xlco": {"layer": 2}})
    assert_same_hidden(xlmr, out)
    config = json.loads((out / "config.json").read_text())
    assert (config["max_position_embeddings"], config["hidden_act"]) == (128, "gelu_new")  # 130 rows - (pad + 1)
    log = (out / "train.log").read_text()
    assert "positions from row 2" in log and "no MLM head: the head starts from train.seed" in log
    st = make_bert(tmp_path / "st", tokenizer_dir, layout="sentence-transformers", seed=3)
    assert_same_hidden(st, zero_step(tmp_path / "b", fake_root, st))
    sharded = make_xlmr(tmp_path / "sharded", tokenizer_dir, seed=4, shard="20KB")
    assert len(list(sharded.glob("model-*.safetensors"))) > 1
    out = zero_step(tmp_path / "c", fake_root, sharded)
    assert_same_hidden(sharded, out)
    assert len(json.loads((out / "xeval_pretrain.json").read_text())["init"]["weights"]) > 1


@pytest.mark.parametrize("bias", ["gated", "plain"])
def test_a_relative_bias_from_an_init_starts_at_zero_and_is_learnt(tmp_path, fake_root, tokenizer_dir, bias):
    """XLM-E's gated relative position bias (or the plain one) on top of a BERT init: step 0 is the init model (the
    bias table starts at zero, and the gates only multiply it), and training moves the table away from zero."""
    from safetensors.torch import load_file

    from xeval.engine.train import pretrain

    init = make_bert(tmp_path / "bert", tokenizer_dir)
    cfg = micro_config(fake_root, {"mrtd": {"mask_prob": 0.15}}, steps=3, lr=1e-3, seed=5, export_every=3)
    cfg = cfg.updated({"model": {"init": str(init), "relative_attention": bias}})
    out = tmp_path / "run"
    pretrain(cfg, out, echo=lambda *a: None)
    step0 = out / "steps" / "step-0000000"
    assert_same_hidden(init, step0)
    assert f"{bias} relative position bias added, its table at zero" in (out / "train.log").read_text()
    before, after = (load_file(str(folder / "model.safetensors")) for folder in (step0, out))
    assert not before["relative.table.weight"].any() and after["relative.table.weight"].abs().max() > 0
    assert json.loads((out / "config.json").read_text())["relative_attention"] == bias


def test_a_sentence_objective_pooling_otherwise_than_the_init_model_is_named_in_the_log(tmp_path, fake_root,
                                                                                         tokenizer_dir):
    from xeval.engine.hf_init import apply_init, read_init, sentence_pooling

    st = make_bert(tmp_path / "st", tokenizer_dir, layout="sentence-transformers")
    assert sentence_pooling(st) is None  # no 1_Pooling/config.json: nothing to compare with
    (st / "1_Pooling").mkdir()
    (st / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 48, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}))
    assert sentence_pooling(st) == "mean" and sentence_pooling(make_xlmr(tmp_path / "x", tokenizer_dir)) is None
    init = read_init(str(st))
    objectives = {"mlm": {}, "xlco": {"layer": 2, "pooling": "cls"}, "seqcl": {"pooling": "mean"}}
    _, lines = apply_init(micro_config(fake_root, objectives), init)
    notes = [line for line in lines if line.startswith("note:")]
    assert len(notes) == 1 and "objectives.xlco.pooling is 'cls'" in notes[0]
    assert "--set objectives.xlco.pooling=mean" in notes[0]
    _, lines = apply_init(micro_config(fake_root, {"mlm": {}, "xlco": {"layer": 2, "pooling": "mean"}}), init)
    assert not [line for line in lines if line.startswith("note:")]


def test_xlco_momentum_encoder_starts_as_the_init_model(tmp_path, fake_root, tokenizer_dir):
    from xeval.engine.hf_init import apply_init, load_init_weights, read_init
    from xeval.engine.model import XevalConfig
    from xeval.engine.objectives import PretrainModel, TokenInfo
    from xeval.engine.tokenizer import load_tokenizer

    init = read_init(str(make_xlmr(tmp_path / "xlmr", tokenizer_dir)))
    cfg, _ = apply_init(micro_config(fake_root, {"xlco": {"layer": 2}}), init)
    tokens = TokenInfo.from_tokenizer(load_tokenizer(init.tokenizer_dir))
    opts = {k: v for k, v in cfg.model.items() if k != "init"}
    model = PretrainModel(XevalConfig(**{**opts, "pad_token_id": 1}), cfg.objectives, tokens)
    load_init_weights(model, init)
    key = model.objectives["xlco"].key_encoder.state_dict()
    assert all(torch.equal(v, key[k]) for k, v in model.encoder.state_dict().items())


def test_few_steps_from_tiny_init_train_and_load(tmp_path, fake_root, tokenizer_dir):
    from safetensors.torch import load_file

    from xeval.base.errors import UserError
    from xeval.engine.train import pretrain

    init = make_bert(tmp_path / "bert", tokenizer_dir)
    cfg = micro_config(fake_root, {"mlm": {}}, steps=4, lr=1e-3, seed=5, export_every=2)
    cfg = cfg.updated({"model": {"init": str(init)}})
    runs = []
    for name in ("a", "b"):
        summary = pretrain(cfg, tmp_path / name, echo=lambda *a: None)
        assert summary["step"] == 4
        runs.append(load_file(str(tmp_path / name / "model.safetensors")))
    assert all(torch.equal(v, runs[1][k]) for k, v in runs[0].items())  # same config, same weights (CPU)
    part = tmp_path / "part"  # an interrupted continued run resumes to the same weights (the state wins over init)
    pretrain(cfg.updated({"train": {"stop_after": 2}}), part, echo=lambda *a: None)
    pretrain(cfg, part, resume=True, echo=lambda *a: None)
    resumed = load_file(str(part / "model.safetensors"))
    assert all(torch.equal(v, resumed[k]) for k, v in runs[0].items())
    records = [json.loads(x) for x in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert records and all(torch.isfinite(torch.tensor(r["loss"])) for r in records)
    step0 = load_file(str(tmp_path / "a" / "steps" / "step-0000000" / "model.safetensors"))
    changed = [k for k, v in runs[0].items() if not torch.equal(v, step0[k])]
    assert "layers.0.attn.qkv.weight" in changed and "embeddings.positions.weight" in changed
    assert json.loads((tmp_path / "a" / "steps" / "step-0000000" / "xeval_pretrain.json").read_text())["init"]
    assert_same_hidden(init, tmp_path / "a" / "steps" / "step-0000000")  # the series' step 0 is the init model
    from transformers import AutoTokenizer

    from xeval.models.encoder import Encoder

    enc = Encoder(str(tmp_path / "a"))
    tok = AutoTokenizer.from_pretrained(tmp_path / "a")
    batch = dict(tok(SENTENCES, padding=True, return_tensors="pt"))
    with torch.no_grad():
        moved = enc.model(batch["input_ids"], batch["attention_mask"]).last_hidden_state
    assert torch.isfinite(moved).all()
    assert not torch.allclose(moved, hf_hidden(init, batch)[-1], atol=1e-4)  # trained away from the init
    with torch.no_grad():  # the init folder's weights changed under a run: --resume refuses in one line
        from transformers import BertForMaskedLM

        other = BertForMaskedLM.from_pretrained(init)
        other.bert.embeddings.LayerNorm.bias.add_(1.0)
        other.save_pretrained(init, safe_serialization=True)
    with pytest.raises(UserError, match="whose weights changed since the run started"):
        pretrain(cfg.updated({"train": {"steps": 6}}), part, resume=True, echo=lambda *a: None)


def _cli(args: list[str], capsys) -> tuple[int, str]:
    """``xeval pretrain --config mlm --size micro ARGS`` in this process: (exit status, stderr)."""
    from xeval.cli import main

    capsys.readouterr()
    status = main(["pretrain", "--config", "mlm", "--size", "micro", *args])
    return status, capsys.readouterr().err


def test_bad_init_folders_are_one_line_exit_2_nothing_written(tmp_path, tokenizer_dir, capsys):
    from tests.helpers.tiny import make_tiny_bert

    gpt = tmp_path / "gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 2}))
    noweights = make_bert(tmp_path / "noweights", tokenizer_dir)
    (noweights / "model.safetensors").unlink()
    (noweights / "pytorch_model.bin").write_bytes(b"not read")
    short = make_bert(tmp_path / "short", tokenizer_dir)
    cfg = json.loads((short / "config.json").read_text())
    (short / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 3}))
    wordpiece = make_tiny_bert(tmp_path / "wordpiece")  # [CLS] [SEP] [MASK]: not the objectives' specials
    good = make_bert(tmp_path / "good", tokenizer_dir)
    cases = {  # --init, extra arguments -> what the one line says
        (gpt, ()): "model_type 'gpt2'; expected a BERT or XLM-R encoder", (noweights, ()): "expected model.safetensors",
        (short, ()): "missing weights ['encoder.layer.2.", (wordpiece, ()): "lacks the special tokens",
        (tmp_path / "nowhere", ()): "no such folder",
        (good, ("--set", "model.pre_norm=true")): "model.pre_norm True contradicts model.init",
        (good, ("--set", "data.seq_len=200")): "data.seq_len gives rows of 200 tokens but model.init",
    }  # fmt: skip
    for i, ((folder, extra), expected) in enumerate(cases.items()):
        out = tmp_path / f"out-{i}"
        status, err = _cli(["--init", str(folder), "--out", str(out), "--steps", "0", *extra], capsys)
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1 and expected in lines[0], (folder, extra, err)
        assert "model.init" in lines[0] and not out.exists()
    # the real command line: exit status 2 from a process of its own
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "xeval", "pretrain", "--config", "mlm", "--init", str(gpt), "--out",
                           str(tmp_path / "out-cli")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "gpt2" in proc.stderr
    assert not (tmp_path / "out-cli").exists()


@pytest.mark.slow
def test_zero_step_from_multilingual_e5_small_is_e5(tmp_path, fake_root, e5_dir):
    out = zero_step(tmp_path, fake_root, e5_dir)
    assert_same_hidden(e5_dir, out, atol=1e-5)
    config = json.loads((out / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (12, 384, 250037)
    assert "no MLM head" in (out / "train.log").read_text()


def test_e5_pools_by_mean(e5_dir):
    """The real folder's Pooling module, which the note on an objective's pooling reads (InfoXLM's XLCO pools cls)."""
    from xeval.engine.hf_init import sentence_pooling

    assert sentence_pooling(e5_dir) == "mean"


def test_an_init_model_pooling_as_the_engine_cannot_is_named_without_a_setting_that_would_be_refused(
        tmp_path, fake_root, tokenizer_dir):
    from xeval.engine.hf_init import apply_init, read_init, sentence_pooling

    st = make_bert(tmp_path / "st", tokenizer_dir, layout="sentence-transformers")
    (st / "1_Pooling").mkdir(exist_ok=True)
    (st / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "max"}))
    assert sentence_pooling(st) == "max"
    _, lines = apply_init(micro_config(fake_root, {"mlm": {}, "xlco": {"layer": 2, "pooling": "cls"}}),
                          read_init(str(st)))
    notes = [line for line in lines if line.startswith("note:")]
    assert len(notes) == 1 and "trained to pool 'max'" in notes[0]
    assert "--set" not in notes[0] and "pool cls or mean only" in notes[0]


def test_a_head_warmup_trains_only_the_heads_then_the_encoder_and_resumes_exactly(tmp_path, fake_root, tokenizer_dir):
    from safetensors.torch import load_file

    from xeval.engine.train import pretrain

    init = make_bert(tmp_path / "st", tokenizer_dir, layout="sentence-transformers")  # no MLM head: it starts random

    def config(**train):
        cfg = micro_config(fake_root, {"mlm": {}, "tlm": {}}, steps=4, seed=5, head_warmup=2, export_every=1, **train)
        return cfg.updated({"model": {"init": str(init)}})

    full = tmp_path / "full"
    pretrain(config(save_every=2), full, echo=lambda *a: None)
    assert_same_hidden(init, full / "steps" / "step-0000002")  # two steps: the encoder is still the init model
    with pytest.raises(AssertionError):
        assert_same_hidden(init, full / "steps" / "step-0000003")  # then it trains
    # the optimiser never saw the frozen weights (no update, no weight decay), while the MLM head learned
    state = load_file(str(full / "state" / "step-0000002" / "optimizer.safetensors"))
    assert state and not any(k.startswith("encoder.") for k in state)
    assert any(k.startswith("heads.") for k in state)
    log = (full / "train.log").read_text()
    assert "head warm-up: steps 1-2 train the objectives' heads only" in log
    assert "head warm-up done: the encoder trains from step 3" in log
    part = tmp_path / "part"  # stopped inside the warm-up, resumed: the same run
    pretrain(config(stop_after=1), part, echo=lambda *a: None)
    pretrain(config(), part, resume=True, echo=lambda *a: None)
    rows = [[json.loads(line)["loss"] for line in (run / "log.jsonl").read_text().splitlines()] for run in (full, part)]
    assert rows[0] == rows[1] and len(rows[0]) == 4



def test_a_head_warmup_under_several_processes_is_refused_before_anything_is_written(tmp_path, fake_root):
    from xeval.base.errors import ConfigError
    from xeval.engine.setup import setup

    cfg = micro_config(fake_root, {"mlm": {}}, steps=4, head_warmup=2)
    with pytest.raises(ConfigError, match="train.head_warmup is single-process only; found 2 under 2 processes"):
        setup(cfg, tmp_path / "out", False, 0, 2, torch.device("cpu"))
    assert not (tmp_path / "out").exists()
