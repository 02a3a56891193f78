"""Checkpoint series (train.export_every): one loadable encoder per step under <out>/steps/step-NNNNNNN/, step 0 =
the initial weights (the random-init control), resume-aware; and the general-domain pool as an engine corpus."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.engine import make_data_root, micro_config

MLM = {"mlm": {"weight": 1.0, "mask_prob": 0.15}}


def _states(encoder) -> torch.Tensor:
    batch = encoder.tokenize_texts(["the cat sleeps on the red book"])
    with torch.no_grad():
        return encoder.forward(batch["input_ids"], batch["attention_mask"])[-1]


def test_export_every_writes_a_loadable_series_with_step_zero_random_init(tmp_path):
    from xeval.engine.train import export_random_init, pretrain
    from xeval.models.encoder import Encoder

    root = make_data_root(tmp_path / "data")
    out = tmp_path / "run"
    pretrain(micro_config(root, MLM, steps=5, export_every=2), out)
    steps = sorted(p.name for p in (out / "steps").iterdir())
    assert steps == ["step-0000000", "step-0000002", "step-0000004", "step-0000005"]  # every 2, and the last
    for name in steps:
        card = json.loads((out / "steps" / name / "xeval_pretrain.json").read_text())
        assert card["step"] == int(name.split("-")[1])
        assert (out / "steps" / name / "tokenizer.json").is_file()
    # the last step's weights are the run's exported model; step 0 the random-init control of the same seed
    last = Encoder(str(out / "steps" / "step-0000005"))
    final = Encoder(str(out))
    a, b = _states(last), _states(final)
    assert torch.equal(a, b)
    control = tmp_path / "control"
    export_random_init(micro_config(root, MLM, steps=5), control)
    step0 = Encoder(str(out / "steps" / "step-0000000"))
    c = Encoder(str(control))
    x, y = _states(step0), _states(c)
    assert torch.equal(x, y)
    assert not torch.equal(x, a)


def test_export_every_resumes_without_rewriting_step_zero(tmp_path):
    from xeval.engine.train import pretrain

    root = make_data_root(tmp_path / "data")
    out = tmp_path / "run"
    pretrain(micro_config(root, MLM, steps=4, export_every=2, stop_after=2, save_every=2), out)
    before = (out / "steps" / "step-0000000" / "model.safetensors").stat().st_mtime_ns
    pretrain(micro_config(root, MLM, steps=4, export_every=2, save_every=2), out, resume=True)
    assert sorted(p.name for p in (out / "steps").iterdir()) == ["step-0000000", "step-0000002", "step-0000004"]
    assert (out / "steps" / "step-0000000" / "model.safetensors").stat().st_mtime_ns == before


def test_export_every_must_be_positive(tmp_path):
    from xeval.base.errors import ConfigError

    with pytest.raises(ConfigError, match="train.export_every"):
        micro_config(tmp_path, MLM, export_every=0)


def test_general_pool_is_the_default_corpus_and_joins_traditional_chinese(data_root):
    from tests.conftest import require_file
    from xeval.engine.config import DataConfig
    from xeval.engine.corpus import discover

    require_file(data_root, "parallel/general/en-zh-Hant.tsv.gz")
    assert DataConfig().parallel == ["general"]
    pairs, _ = discover(data_root, DataConfig().parallel, ())
    assert len(pairs) == 36 and "en-jv" not in pairs  # the 36 Tatoeba languages minus jv, plus cs
    assert [s[1].name for s in pairs["en-zh"]] == ["en-zh-Hant.tsv.gz", "en-zh.tsv.gz"]


def test_general_pool_reads_four_columns_and_logs_the_mix(data_root):
    from tests.conftest import require_file
    from xeval.engine.corpus import load_corpora

    require_file(data_root, "parallel/general/en-af.tsv.gz")
    c = load_corpora(data_root, ["general"], ["fortunes"], languages=["af", "de"], max_lines=300,
                     pairs_as_mono=True)
    assert set(c.pairs) == {"en-af", "en-de"} and len(c.pairs["en-af"]) == 300
    en, de = c.report["mix"]["en"], c.report["mix"]["de"]
    assert en["pair_sides"] > 0  # the pairs' English sides (each distinct line once)
    assert de["monolingual"] == 300 and de["pair_sides"] > 0
    assert "af" in c.report["mix"] and c.report["mix"]["af"]["monolingual"] == 0  # no Afrikaans fortunes


@pytest.mark.slow
def test_run_over_a_series_then_plot_steps(tmp_path, data_root, capsys):
    from xeval.cli import main
    from xeval.engine.train import pretrain
    from xeval.results.store import Store

    root = make_data_root(tmp_path / "data")
    out = tmp_path / "ckpt"
    pretrain(micro_config(root, MLM, steps=4, export_every=2), out)
    runs = tmp_path / "runs"
    args = ["run", "--model", str(out / "steps" / "*"), "--suite", "probes", "--tasks", "tatoeba", "--langs", "de",
            "--data", str(data_root), "--out", str(runs), "--max-eval", "30", "--layers", "all", "--threads", "1"]
    assert main(args) == 0
    records = [r for r in Store(runs).records() if r.unit.task == "tatoeba"]
    steps = {r.unit.model: r.model["step"] for r in records}
    assert sorted(steps.values()) == [0, 2, 4]  # one model key per checkpoint, its step recorded
    assert all(key.startswith(f"step-{step:07d}@") for key, step in steps.items())
    assert len([r for r in records if r.unit.split == "test"]) == 3 * 3  # 3 checkpoints x hidden states 0..2
    capsys.readouterr()
    assert main(args[:2] + [str(out / "steps")] + args[3:]) == 0  # the folder form: everything stored, reused
    assert len([r for r in Store(runs).records() if r.unit.task == "tatoeba"]) == len(records)
    assert main(["report", str(runs), "--plot", "steps", "--figures", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "steps.png").stat().st_size > 0 and (tmp_path / "fig" / "steps.pdf").is_file()
    from xeval.report.plots import plot_steps
    from xeval.report.tables.base import Results

    fig = plot_steps(Results(list(Store(runs).records())))
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert labels == ["layer 0", "layer 1", "layer 2"]  # one legend for every panel, no panel's choice in it
    widths = {line.get_linewidth() for legend in fig.legends for line in legend.get_lines()}
    assert widths == {1.0}
    panel = fig.axes[0]
    chosen = [line for line in panel.get_lines() if line.get_linewidth() > 2]
    assert len(chosen) == 1 and "(thick: layer " in panel.get_title()  # each panel names its own thick layer


def test_series_glob_matching_nothing_is_one_line(tmp_path, capsys):
    from xeval.cli import main

    assert main(["run", "--model", str(tmp_path / "nothing" / "*"), "--suite", "probes"]) == 2
    err = capsys.readouterr().err
    assert "matches no checkpoint" in err and "Traceback" not in err


def test_series_steps_control_is_step_zero_only_without_a_step_zero_checkpoint():
    from types import SimpleNamespace

    import pandas as pd

    from xeval.report.plots import series_steps

    def results(models, controls):
        records = [SimpleNamespace(unit=SimpleNamespace(model=m), model={"step": s} if s is not None else {})
                   for m, s in models]
        frame = pd.DataFrame({"model": [m for m, _ in models], "setting": ["zero-shot"] * len(models)})
        return SimpleNamespace(records=records, sweep=frame, row=lambda m, s: m, control_rows=lambda: controls)

    with_control = results([("a", 10), ("b", 20), ("ctl", None)], {"ctl": "a"})
    assert series_steps(with_control) == {"a": 10, "b": 20, "ctl": 0}
    own_zero = results([("z", 0), ("a", 10), ("ctl", None)], {"ctl": "a"})
    assert series_steps(own_zero) == {"z": 0, "a": 10}


@pytest.mark.slow
def test_heldout_probe_reads_the_runs_own_heldout_pairs(tmp_path, data_root, minilm_dir, capsys):
    from xeval.adapters.probes.heldout import heldout_pairs
    from xeval.cli import main
    from xeval.engine.corpus import is_heldout
    from xeval.results.store import Store

    root = make_data_root(tmp_path / "data", n_pairs=3000)
    out = tmp_path / "ckpt"
    pretrain_cfg = micro_config(root, MLM, steps=2)
    from xeval.engine.train import pretrain

    pretrain(pretrain_cfg, out)
    pairs = heldout_pairs(pretrain_cfg.to_dict(), 500)
    assert set(pairs) == {"de"} and len(pairs["de"]) > 10
    assert all(is_heldout(en) for en, _ in pairs["de"])  # exactly the lines training set aside
    runs = tmp_path / "runs"
    base = ["run", "--model", str(out), "--suite", "engine", "--tasks", "heldout", "--data", str(data_root),
            "--out", str(runs), "--layers", "all", "--threads", "1"]
    assert main([*base, "--control", "random-init,charngram"]) == 0
    records = [r for r in Store(runs).records() if r.unit.task == "heldout"]
    # model + random-init control, 3 layers each; the char n-gram baseline once, without a layer
    assert {r.unit.split for r in records} == {"heldout"} and len(records) == 2 * 3 + 1
    assert all(r.n_examples == len(pairs["de"]) and "xsim" in r.metrics for r in records)
    [baseline] = [r for r in records if r.unit.layer is None]
    assert baseline.model["control"] == "charngram" and baseline.data["n"] == len(pairs["de"])
    assert 0.0 <= baseline.metrics["accuracy"] <= 100.0 and "per side" in baseline.config["fitted_on"]
    capsys.readouterr()
    assert main(["run", "--model", str(minilm_dir), "--suite", "engine", "--tasks", "heldout",
                 "--data", str(data_root), "--out", str(tmp_path / "r2")]) == 2
    assert "not trained by xeval's engine" in capsys.readouterr().err


def test_heldout_pairs_are_read_once_per_data_setting(monkeypatch):
    # a model and its random-init control (or every step of a series) share the run's data settings: the pool is
    # cleaned once for them, not once per model; another seed or data setting reads again
    from xeval.adapters.probes import heldout

    reads = []
    monkeypatch.setattr(heldout, "_PAIRS", {})
    monkeypatch.setattr(heldout, "_read_heldout_pairs", lambda config, n: reads.append(n) or {"de": [("a", "b")]})
    config = {"data": {"parallel": ["general"], "max_lines": 10}, "train": {"seed": 0}}
    assert heldout.heldout_pairs(config, 5) == heldout.heldout_pairs(json.loads(json.dumps(config)), 5)
    assert reads == [5]
    heldout.heldout_pairs({**config, "train": {"seed": 1}}, 5)
    heldout.heldout_pairs({**config, "data": {"parallel": ["general"], "max_lines": 20}}, 5)
    heldout.heldout_pairs(config, 6)
    assert reads == [5, 5, 5, 6]
