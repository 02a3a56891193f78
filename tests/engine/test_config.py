"""Pre-training presets and config resolution; the pretrain verb's one-line errors."""

from __future__ import annotations

import pytest

from xeval.base.errors import ConfigError
from xeval.engine.config import PRESET_DIR, load_config
from xeval.engine.objectives import OBJECTIVES

PRESETS = ["mlm", "xlm", "xlm-e", "xlm-e-no-trtd", "infoxlm", "veco2", "quickstart", "general-cpu",
           "general-cpu-4l"]


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("size", ["micro", "tiny", "base"])
def test_every_preset_resolves_at_every_size(name, size):
    cfg = load_config(name, size)
    assert cfg.name == name and cfg.size == size
    assert set(cfg.objectives) <= set(OBJECTIVES)
    if size == "tiny":
        assert (cfg.model["num_hidden_layers"], cfg.model["hidden_size"], cfg.tokenizer.vocab_size) == (4, 256, 16000)
    if name.startswith("xlm-e"):
        assert cfg.model["relative_attention"] == "gated"
        assert cfg.objectives["mrtd"]["disc_weight"] == 50.0
    # language sampling per paper: XLM-R 0.3, XLM 0.5, XLM-E 0.7
    assert cfg.data.alpha == {"mlm": 0.3, "xlm": 0.5, "general-cpu": 0.3, "general-cpu-4l": 0.3}.get(name, 0.7)


def test_general_cpu_default_is_its_own_cpu_size():
    # the measured CPU recipe (docs/engine.md, "A CPU recipe"): 2 x 128, sequence contrast over 256 pairs a step + MLM, a
    # fixed number of steps (not a wall-clock budget), a BPE alphabet wide enough for Chinese and Japanese
    cfg = load_config("general-cpu")
    assert cfg.size == "cpu" and (cfg.model["num_hidden_layers"], cfg.model["hidden_size"]) == (2, 128)
    assert sorted(cfg.objectives) == ["mlm", "seqcl"] and cfg.data.pair_batch == 256
    assert cfg.train.steps == 600 and cfg.train.max_seconds is None and cfg.train.export_every == 100
    assert (cfg.tokenizer.model, cfg.tokenizer.alphabet) == ("bpe", 6000)


def test_general_cpu_4l_is_deep_enough_for_a_layer_curve():
    # the measured 4-layer CPU recipe (reports/general-cpu-4l.md): general-cpu's objectives and corpus at 4 x 256,
    # 1,200 fixed steps in bf16 autocast, dropout kept (the search found it helps the contrast)
    cfg = load_config("general-cpu-4l")
    assert cfg.size == "cpu" and (cfg.model["num_hidden_layers"], cfg.model["hidden_size"]) == (4, 256)
    assert sorted(cfg.objectives) == ["mlm", "seqcl"] and cfg.data.pair_batch == 256
    assert cfg.train.steps == 1200 and cfg.train.max_seconds is None and cfg.train.bf16
    assert cfg.model.get("hidden_dropout_prob", 0.1) == 0.1 and cfg.model.get("attention_probs_dropout_prob", 0.1) == 0.1
    # pair sides up to 62 subwords (FLORES sentences are 44-62 long; 30 lost FLORES to string overlap), encoded in 8
    # length groups so the longer cap costs 1.35x the step instead of 2.8x
    assert (cfg.data.pair_max_side, cfg.data.pair_buckets) == (62, 8)


def test_preset_files_are_all_listed():
    assert sorted(p.stem for p in PRESET_DIR.glob("*.yaml") if p.stem != "sizes") == sorted(PRESETS)


def test_size_specific_overrides_and_set():
    assert load_config("infoxlm", "micro").objectives["xlco"]["queue_size"] == 256
    assert load_config("infoxlm", "base").objectives["xlco"]["queue_size"] == 16384  # the from-scratch recipe
    cfg = load_config("mlm", "micro", ["train.lr=0.01", "data.languages=[de, fr]"])
    assert cfg.train.lr == 0.01 and cfg.data.languages == ["de", "fr"]


def test_bad_configs_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown pre-training preset 'nope'"):
        load_config("nope")
    with pytest.raises(ConfigError, match="unknown size"):
        load_config("mlm", "huge")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['lrate'\]"):
        load_config("mlm", "micro", ["train.lrate=1"])
    with pytest.raises(ConfigError, match="train.bf16_weights must be false unless train.bf16 is true"):
        load_config("mlm", "micro", ["train.bf16_weights=true"])
    assert load_config("mlm", "micro", ["train.bf16=true", "train.bf16_weights=true"]).train.bf16_weights
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nobjectives: {mlm: {}\n")
    with pytest.raises(ConfigError, match="bad.yaml:.*not valid YAML"):
        load_config(str(bad))


def test_pretrain_verb_errors_are_one_line(tmp_path, capsys):
    from xeval.cli import main

    assert main(["pretrain", "--config", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown pre-training preset" in err[0]
    assert main(["pretrain", "--config", "mlm", "--size", "micro", "--out", str(tmp_path / "o"), "--data",
                 str(tmp_path / "nodata")]) == 2  # fmt: skip
    assert "expected the shared data" in capsys.readouterr().err


def test_numbers_written_without_a_dot_are_numbers():
    cfg = load_config("mlm", "micro", ["train.lr=2e-3", "train.warmup=10"])
    assert cfg.train.lr == 0.002 and isinstance(cfg.train.lr, float)
    with pytest.raises(ConfigError, match="train.lr must be a number"):
        load_config("mlm", "micro", ["train.lr=fast"])


def test_null_or_zero_weight_removes_an_objective():
    assert set(load_config("xlm", "micro").objectives) == {"mlm", "tlm"}
    assert set(load_config("xlm", "micro", ["objectives.tlm=null"]).objectives) == {"mlm"}  # was: tlm, weight 1
    assert set(load_config("xlm", "micro", ["objectives.tlm.weight=0"]).objectives) == {"mlm"}
    assert set(load_config("veco2", "micro", ["objectives.tokcl=~", "objectives.seqcl.weight=0.0"]).objectives) == {
        "mlm", "tlm"}  # fmt: skip
    with pytest.raises(ConfigError, match="objectives.tlm must be a mapping"):
        load_config("xlm", "micro", ["objectives.tlm=yes"])


def test_contrast_layer_deeper_than_the_model_fails_before_any_data_is_read(tmp_path, capsys):
    from xeval.cli import main

    args = ["pretrain", "--config", "infoxlm", "--size", "micro", "--out", str(tmp_path / "o"), "--data",
            str(tmp_path / "nodata"), "--set", "objectives.xlco.layer=12"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "objectives.xlco.layer: layer 12 does not exist in a model of 2 layers" in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_pooling_no_objective_computes_is_refused_not_trained_as_mean():
    # the objectives pool "cls" or "mean" (objectives.base.pool); anything else used to fall through to mean
    for preset, name in (("infoxlm", "xlco"), ("veco2", "seqcl")):
        with pytest.raises(ConfigError, match=rf"objectives.{name}.pooling must be cls or mean, found 'max'"):
            load_config(preset, "tiny", [f"objectives.{name}.pooling=max"])
        assert load_config(preset, "tiny", [f"objectives.{name}.pooling=cls"]).objectives[name]["pooling"] == "cls"


def test_a_head_warmup_is_refused_where_it_cannot_hold():
    with pytest.raises(ConfigError, match=r"train.head_warmup must be an integer >= 0 and below train.steps \(300\)"):
        load_config("infoxlm", "tiny", ["train.steps=300", "train.head_warmup=300"])
    assert load_config("infoxlm", "tiny", ["train.steps=300", "train.head_warmup=100"]).train.head_warmup == 100
    with pytest.raises(ConfigError, match=r"train.head_warmup_lr must be a finite number > 0 or null, found 0"):
        load_config("infoxlm", "tiny", ["train.steps=300", "train.head_warmup=100", "train.head_warmup_lr=0"])
    assert load_config("infoxlm", "tiny", ["train.head_warmup=10", "train.head_warmup_lr=1e-3"]).train.head_warmup_lr \
        == 1e-3
