"""``xeval run``'s smaller options (issue 26 item 9): ``--config run.yaml`` under the command line, ``--limit`` as a
fraction (recorded, part of the identity, marked in reports), ``--batch-size auto`` (searched on an accelerator, the
recipe's on CPU), probe mode's header naming seed 0, and ``--layer best``'s new name."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import transfer as helpers_transfer
from xeval.adapters.transfer.batch_search import candidates, largest_fitting, micro_batch
from xeval.adapters.transfer.fine_tuning import collate
from xeval.adapters.transfer.recipe import Recipe
from xeval.cli import main
from xeval.results.store import Store


@pytest.fixture
def captured(monkeypatch):
    """The RunOptions ``xeval run`` would run (nothing is loaded or run)."""
    seen = []

    def fake_run(opts, **kwargs):
        seen.append(opts)
        return []

    monkeypatch.setattr("xeval.run.runner.run", fake_run)
    return seen


def _config(tmp_path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_run_config_is_merged_under_the_command_line(tmp_path, captured):
    path = _config(tmp_path, "model: m\nsuite: xtreme-mini\ntasks: [udpos, xnli]\nseeds: 3\nepochs: 2\n"
                             "learning-rate: 1.0e-4\nlimit: 0.1\ncompat: xtreme\nno_cache: true\n"
                             "set: {warmup_ratio: 0.1, weight_decay: 0.01}\n")
    assert main(["run", "--config", path, "--seeds", "1", "--set", "warmup_ratio=0.2"]) == 0
    [opts] = captured
    assert opts.model == "m" and opts.suite == "xtreme-mini" and opts.tasks == ["udpos", "xnli"]
    assert opts.seeds == [1]  # the command line wins
    assert opts.limit == 0.1 and opts.compat == "xtreme" and opts.no_cache is True
    assert opts.recipe == {"epochs": 2.0, "learning_rate": 1e-4, "warmup_ratio": "0.2", "weight_decay": "0.01"}
    assert opts.out == "runs" and opts.setting == "zero-shot"  # the flags' own defaults where neither says


@pytest.mark.parametrize("text, expected", [
    ("model: m\nsuite: s\nlerning_rate: 1\n", "run.yaml:3: unknown key 'lerning_rate' (did you mean 'learning_rate'"),
    ("model: m\nseeds: {a: 1}\n", "run.yaml:2: expected one value for 'seeds', found a mapping"),
    ("model: m\nsuite: s\n\nepochs: fast\n", "run.yaml:4: epochs: expected float, found 'fast'"),
    ("model: m\nsuite: s\nmode: fast\n", "run.yaml:3: mode: expected one of finetune, probe, found 'fast'"),
    ("model: m\nsuite: s\nset: 3\n", "run.yaml:3: expected 'set:' to map recipe or probe keys to values"),
    ("model: [m\n", "run.yaml:2: expected valid YAML"),
    ("- model\n", "run.yaml:1: expected a mapping of xeval run settings"),
    ("suite: s\n", "--model: required (on the command line or in --config)"),
])
def test_a_bad_run_config_is_one_line_naming_file_and_line(tmp_path, capsys, captured, text, expected):
    assert main(["run", "--config", _config(tmp_path, text)]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1 and not captured


def test_limit_as_a_fraction_or_a_count(captured, capsys):
    assert main(["run", "--model", "m", "--suite", "s", "--limit", "0.25"]) == 0
    assert main(["run", "--model", "m", "--suite", "s", "--limit", "50"]) == 0
    assert (captured[0].limit, captured[0].max_eval) == (0.25, None) and (captured[1].limit, captured[1].max_eval) == (
        None, 50)
    for bad in ("0", "1.5", "-0.1", "a tenth"):
        assert main(["run", "--model", "m", "--suite", "s", "--limit", bad]) == 2
        assert "--limit: expected a fraction" in capsys.readouterr().err


def test_batch_size_auto_keeps_the_step_and_is_recorded_as_auto(captured):
    assert main(["run", "--model", "m", "--suite", "s", "--batch-size", "auto"]) == 0
    assert captured[0].auto_batch and "batch_size" not in captured[0].recipe


def test_the_batch_search_halves_from_the_step_on_out_of_memory():
    assert candidates(32) == [32, 16, 8, 4, 2, 1] and candidates(24) == [24, 12, 6, 3, 1]
    assert largest_fitting([32, 16, 8], lambda n: n <= 10) == 8
    assert largest_fitting([4, 2, 1], lambda n: False) == 1  # none fits: the smallest (training then says why)

    class Sized(torch.nn.Module):  # "runs out of memory" above 8 examples a pass
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))
            self.seen = []

        def forward(self, input_ids, **_):
            self.seen.append(input_ids.shape[0])
            if input_ids.shape[0] > 8:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return (self.w * 1.0,)

    model = Sized()
    features = [{"input_ids": [1] * (3 + i % 5), "attention_mask": [1] * (3 + i % 5), "label": 0} for i in range(20)]
    size, how = micro_batch(model, features, Recipe.build({"batch_size": 32}), 0, "meta", collate)
    assert size == 8 and model.seen == [32, 16, 8] and "largest of 32/16/8/4/2/1" in how
    assert model.w.grad is None  # the trial's gradients are dropped
    model.seen.clear()
    size, how = micro_batch(model, features, Recipe.build({"batch_size": 32, "per_device_batch_size": 4}), 0, "cpu",
                            collate)
    assert (size, how, model.seen) == (4, "cpu: the recipe's", [])  # no search on a CPU


@pytest.mark.slow
def test_limit_and_auto_batch_on_real_records(tmp_path, data_root):
    model = helpers_transfer.tiny_model(data_root)
    base = ["run", "--model", str(model), "--suite", "xtreme-mini", "--tasks", "xnli", "--langs", "en,de", "--data",
            str(data_root), "--out", str(tmp_path / "runs"), "--max-train", "32", "--max-dev", "8", "--epochs", "1",
            "--batch-size", "16", "--threads", "1"]
    assert main(base) == 0
    assert main([*base, "--limit", "0.25"]) == 0
    assert main([*base[:-4], "--batch-size", "auto", "--threads", "1"]) == 0
    records = list(Store(tmp_path / "runs").records(lang="de"))
    whole = next(r for r in records if "limit" not in r.config and not r.extra["training"].get("batch_search"))
    limited = next(r for r in records if r.config.get("limit") == 0.25)
    auto = next(r for r in records if r.extra["training"].get("batch_search"))
    assert whole.n_examples == 200 and limited.n_examples == 50  # a quarter of the mini suite's 200 pairs
    assert len({whole.unit.config_hash, limited.unit.config_hash, auto.unit.config_hash}) == 3  # three identities
    assert auto.extra["training"]["batch_search"] == "cpu: the recipe's"
    assert auto.extra["training"]["micro_batch"] == Recipe.build(auto.config["recipe"]).micro_batch_size
    from xeval.report.build import build
    from xeval.report.tables.base import Results

    [summary] = build(Results([limited]), "summary")
    assert "§" in summary.marks.iloc[0]["XNLI Acc"]  # a limited run is marked subsampled


@pytest.mark.slow
def test_probe_mode_names_seed_0_not_the_seeds_flag(tmp_path, data_root, capsys):
    model = helpers_transfer.tiny_model(data_root)
    assert main(["run", "--model", str(model), "--suite", "xtreme-mini", "--tasks", "xnli", "--langs", "en,de",
                 "--data", str(data_root), "--out", str(tmp_path / "runs"), "--mode", "probe", "--max-train", "32",
                 "--max-dev", "8", "--max-eval", "8", "--threads", "1", "--layers", "2"]) == 0
    err = capsys.readouterr().err
    assert "mode probe, seed 0: no seeded training" in err and "seeds [1]" not in err
    assert {r.unit.seed for r in Store(tmp_path / "runs").records()} == {0}


def test_layer_best_is_a_deprecated_alias_of_selection_split(tmp_path, capsys):
    from tests.helpers.report_records import A, probe_records, write_run

    run = write_run(tmp_path / "r", probe_records(A, dev_best=1))
    assert main(["report", str(run), "--table", "languages", "--layer", "selection-split"]) == 0
    chosen = capsys.readouterr()
    assert main(["report", str(run), "--table", "languages", "--layer", "best"]) == 0
    old = capsys.readouterr()
    assert old.out == chosen.out and "alpha · L1" in old.out
    assert "--layer best is deprecated; use --layer selection-split" in old.err and "deprecated" not in chosen.err
