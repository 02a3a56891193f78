"""The random-init control: ``Encoder.random_init`` (deterministic, distinct from the model, the caller's RNG left
alone) and ``xeval run --control random-init`` (a model key of its own, resume, unchanged model numbers)."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.tiny import make_tiny_bert
from xeval.base.errors import ConfigError
from xeval.models.encoder import Encoder, state_hash
from xeval.results.controls import check_control, check_controls, control_parents
from xeval.results.store import Record, Store, Unit


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    # seed 7: make_tiny_bert's own weights are a random init too, and at seed 0 they would equal the control's
    return Encoder(make_tiny_bert(tmp_path_factory.mktemp("control") / "tiny", seed=7))


def weights(encoder) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in encoder.model.state_dict().items()}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_control_weights_are_deterministic_per_seed_and_differ_from_the_model(tiny):
    before = weights(tiny)
    first, again, other = Encoder.random_init(tiny, 0), Encoder.random_init(tiny, 0), Encoder.random_init(tiny, 1)
    assert same(weights(first), weights(again)) and first.key == again.key
    assert not same(weights(first), weights(other)) and first.key != other.key
    assert not same(weights(first), before)
    assert same(weights(tiny), before)  # the parent is untouched
    # same architecture and tokenizer: identical parameter names and shapes, the very same tokenizer object
    assert {k: v.shape for k, v in weights(first).items()} == {k: v.shape for k, v in before.items()}
    assert first.tokenizer is tiny.tokenizer
    assert (first.num_layers, first.hidden_size, first.max_length) == (tiny.num_layers, tiny.hidden_size,
                                                                       tiny.max_length)
    assert not first.model.training


def test_control_key_and_identity_name_the_control_and_its_parent(tiny):
    control = Encoder.random_init(tiny, 3)
    name, digest = control.key.split("@")
    assert name == f"{tiny.name}-random-init" and digest == control.weights_hash[:12]
    assert control.weights_hash == state_hash(control.model, control.model.config, control.tokenizer)
    ident = control.identity()
    assert ident["control"] == "random-init" and ident["control_seed"] == 3
    assert ident["parent"] == {"key": tiny.key, "id": tiny.spec, "hash": tiny.weights_hash}
    assert ident["hash"] != tiny.weights_hash
    assert tiny.identity().get("control") is None and tiny.control is None


def test_control_leaves_the_global_rng_alone(tiny):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    Encoder.random_init(tiny, 0)
    assert torch.equal(torch.rand(3), expected)


def test_control_encodes_like_an_encoder(tiny):
    control = Encoder.random_init(tiny, 0)
    vectors = control.sentence_embeddings(["the cat sat", "der Hund"], layers=[0, tiny.num_layers])
    assert vectors.shape == (2, 2, tiny.hidden_size)
    assert not torch.allclose(torch.from_numpy(vectors),
                              torch.from_numpy(tiny.sentence_embeddings(["the cat sat", "der Hund"],
                                                                        layers=[0, tiny.num_layers])))


def test_unknown_control_is_a_config_error():
    assert check_control(None) is None and check_control("random-init") == "random-init"
    with pytest.raises(ConfigError, match="unknown control 'shuffled'"):
        check_control("shuffled")
    with pytest.raises(ConfigError, match="unknown control 'shuffled'"):
        check_control("random-init,shuffled")


def test_several_controls_comma_separated_each_once():
    assert check_controls("random-init, charngram,random-init") == ("random-init", "charngram")
    assert check_control("charngram,random-init") == "charngram,random-init"
    assert check_controls(None) == ()


def test_control_parents_from_records():
    parent = Record(Unit("m@1", "t", "de", "test"), {"accuracy": 1.0}, 1, model={"hash": "1"})
    child = Record(Unit("m-random-init@2", "t", "de", "test"), {"accuracy": 1.0}, 1,
                   model={"control": "random-init", "parent": {"key": "m@1"}})
    assert control_parents([parent, child]) == {"m-random-init@2": ("m@1", "random-init")}


# ------------------------------------------------------------------ xeval run --control, on real data


def _run(model, data_root, out, control=None, tasks=("tatoeba", "alignment"), langs=("de", "fr", "de-en")):
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    opts = RunOptions(model=str(model), suite="probes", tasks=list(tasks), langs=list(langs), data=str(data_root),
                      out=str(out), device="cpu", layers="all", max_eval=40, control=control)
    return run(opts, echo=lambda text: None)


@pytest.fixture(scope="module")
def control_run(tiny, data_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("control-run")
    records = _run(tiny.spec, data_root, out / "with", control="random-init")
    return out, records


def test_run_stores_the_control_under_its_own_key(tiny, control_run):
    out, records = control_run
    keys = {r.unit.model for r in records}
    control_key = Encoder.random_init(tiny, 0).key
    assert keys == {tiny.key, control_key}
    stored = list(Store(out / "with").records())
    assert {r.unit.model for r in stored} == keys
    for rec in stored:
        if rec.unit.model == control_key:
            assert rec.model["control"] == "random-init" and rec.model["parent"]["hash"] == tiny.weights_hash
        else:
            assert "control" not in rec.model
    # one record per (probe, language, split, layer) for each of the two models: tatoeba de, fr on test and on
    # the selection split that chooses the layer (FLORES-200 dev), and alignment de-en
    units = {(r.unit.model, r.unit.task, r.unit.lang, r.unit.split, r.unit.layer) for r in stored}
    assert len(units) == len(stored) == 2 * 5 * (tiny.num_layers + 1)


def test_model_numbers_do_not_change_with_the_control(tiny, data_root, control_run):
    out, records = control_run
    alone = _run(tiny.spec, data_root, out / "alone")
    with_control = {r.unit: r.metrics for r in records if r.unit.model == tiny.key}
    assert {r.unit: r.metrics for r in alone} == with_control


def test_rerun_with_control_resumes(tiny, data_root, control_run):
    out, records = control_run
    before = {p: p.stat().st_mtime_ns for p in (out / "with").glob("*/*/*.json")}
    again = _run(tiny.spec, data_root, out / "with", control="random-init")
    assert {p: p.stat().st_mtime_ns for p in (out / "with").glob("*/*/*.json")} == before
    assert {(r.unit, tuple(r.metrics.items())) for r in again} == {(r.unit, tuple(r.metrics.items())) for r in records}


def test_printed_tables_show_the_control_column(control_run):
    from xeval.report.console_tables import format_tables

    _, records = control_run
    text = format_tables(records)
    # probes over several layers: one compact table per probe (languages x layers), the control as an avg row
    assert text.count("tatoeba (zero-shot; accuracy by layer") == 1 and text.count("(zero-shot; aer by layer") == 1
    assert text.count("avg (random init)") == 2
    assert "random-init@" not in text  # no tables of the control's own


def test_cli_control_flag_and_bad_value(tiny, data_root, tmp_path, capsys):
    from xeval.cli import main

    args = ["run", "--model", tiny.spec, "--suite", "probes", "--tasks", "tatoeba", "--langs", "de",
            "--data", str(data_root), "--out", str(tmp_path / "runs"), "--layers", "0,2", "--max-eval", "20",
            "--threads", "1"]
    assert main([*args, "--control", "nonsense"]) == 2  # one line, before any model loads
    assert "--control: unknown control 'nonsense'" in capsys.readouterr().err
    assert main([*args, "--control", "random-init", "--control-seed", "5"]) == 0
    printed = capsys.readouterr().out
    assert "avg (random init)" in printed and "random init: layer" in printed
    # 2 layers x 2 models on test, and on the selection split (FLORES-200 dev) that chooses the layer
    assert "1 unit computed" not in printed and "8 units computed, 0 reused, in" in printed
    models = {r.unit.model for r in Store(tmp_path / "runs").records()}
    assert models == {tiny.key, Encoder.random_init(tiny, 5).key}


@pytest.mark.slow
def test_fine_tuning_control_is_cheap_to_run(tiny, data_root, tmp_path):
    """Fine-tuning tasks take the control too (the backbone copy is the random one); the model's numbers stay."""
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    recipe = {"max_train": 16, "max_dev": 8, "max_eval": 8, "epochs": 1, "batch_size": 8}

    def go(out, control=None):
        opts = RunOptions(model=tiny.spec, suite="xtreme-mini", tasks=["udpos"], langs=["en", "de"],
                          data=str(data_root), out=str(out), device="cpu", recipe=dict(recipe),
                          max_eval=8, control=control)
        return run(opts, echo=lambda text: None)

    both = go(tmp_path / "with", "random-init")
    control_key = Encoder.random_init(tiny, 0).key
    assert {r.unit.model for r in both} == {tiny.key, control_key}
    assert all(r.unit.layer is None for r in both)
    alone = go(tmp_path / "alone")
    assert {r.unit: r.metrics for r in alone} == {r.unit: r.metrics for r in both if r.unit.model == tiny.key}
