"""``xeval quickstart`` end to end on a minimal world and a few pre-training steps: every stage writes its output,
records are stored, a rerun reuses world, model and records, and the world passes ``xeval data check``."""

from __future__ import annotations

import json

import pytest

from xeval.run.quickstart import FINETUNE, PROBES, Options, quickstart

TINY_SIZES = {"mono": 150, "parallel": 120, "train": 40, "dev": 12, "test": 12, "tatoeba": 12, "alignment": 8}
TINY_PLAN = {  # engine config overrides of the quickstart preset
    "model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32},
    "tokenizer": {"vocab_size": 500, "sample_lines": 2000},
    "data": {"seq_len": 32, "pair_max_side": 24, "mono_batch": 4, "pair_batch": 4},
}  # fmt: skip
TINY_EVAL = {"max_train": 16, "epochs": 1, "max_dev": 8, "max_eval": 8, "batch_size": 8}


def tiny_options(out) -> Options:
    return Options(out=str(out), steps=3, languages=2, sizes=TINY_SIZES, plan=TINY_PLAN, eval=TINY_EVAL)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("quickstart")
    lines: list[str] = []
    result = quickstart(tiny_options(out), echo=lines.append)
    return out, result, lines


@pytest.mark.slow
def test_every_stage_writes_its_output(first_run):
    out, result, lines = first_run
    assert (out / "world" / "world.json").is_file()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "quickstart.json"):
        assert (out / "model" / name).is_file(), name
    assert not (out / "model.partial").exists()
    assert result["pretrain"]["steps"] == 3
    tasks = {path.parent.name for path in (out / "results").glob("*/*/*.json")}
    assert tasks == set(PROBES) | set(FINETUNE)
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# xeval quickstart")
    assert (out / "figures" / "layers.png").is_file()
    saved = json.loads((out / "quickstart.json").read_text(encoding="utf-8"))
    assert saved["model"] == result["model"] and saved["records"] == result["records"]
    # probes over every layer (embeddings + 1 transformer layer), fine-tuning on qaa tested on both languages
    layers = {r for r in saved["headline"] if r.startswith("synth_tatoeba")}
    assert layers and any("report" in line for line in lines)
    assert set(saved["stages"]) == {"world", "pretrain", "evaluate", "report"}
    # chance and majority beside every task that has them: PAWS-X (accuracy) both, Tatoeba chance, QA none
    header, *rows = saved["headline"]
    assert header.split()[4:7] == ["control", "chance", "majority"]
    by_task = {row.split()[0]: row.split() for row in rows}
    assert by_task["synth_pawsx"][5] == "50.0" and float(by_task["synth_pawsx"][6]) >= 50.0
    assert by_task["synth_qa"][5:7] == ["-", "-"]
    assert any("done in" in line and "from the start of the process" not in line for line in lines)  # the API


@pytest.mark.slow
def test_rerun_reuses_world_model_and_records(first_run):
    out, result, _ = first_run
    before = {p: p.stat().st_mtime_ns for p in (out / "results").glob("*/*/*.json")}
    again = quickstart(tiny_options(out), echo=lambda text: None)
    assert again["world_reused"] and again["model_reused"]
    assert again["model"] == result["model"]
    assert {p: p.stat().st_mtime_ns for p in (out / "results").glob("*/*/*.json")} == before


@pytest.mark.slow
def test_quickstart_world_passes_data_check(first_run, monkeypatch):
    from xeval.cards.catalog import load_suite
    from xeval.data.check import check_suite
    from xeval.data.sources import DataRoot

    out, _, _ = first_run
    monkeypatch.setenv("XEVAL_TASKS", str(out / "world" / "tasks"))
    report = check_suite(load_suite("synthetic"), DataRoot.resolve(str(out / "world")))
    assert not report.errors, [row.error for row in report.errors]
    assert report.rows and all((row.examples or 0) > 0 for row in report.rows)


def test_bad_options_are_user_errors_and_write_nothing(tmp_path):
    from xeval.base.errors import UserError

    with pytest.raises(UserError, match="--steps"):
        quickstart(Options(out=str(tmp_path / "a"), steps=-1), echo=lambda text: None)
    with pytest.raises(UserError, match="--order"):
        quickstart(Options(out=str(tmp_path / "b"), order=("XYZ",)), echo=lambda text: None)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.slow
def test_zero_steps_gives_a_random_init_control(first_run, tmp_path):
    from xeval.run.quickstart_model import quickstart_config, train_quickstart_model

    out, _, _ = first_run
    cfg = quickstart_config(out / "world", steps=0, overrides=TINY_PLAN)
    summary = train_quickstart_model(cfg, tmp_path / "control", echo=lambda text: None)
    assert summary["steps"] == 0 and (tmp_path / "control" / "model.safetensors").is_file()
    assert summary["parameters"] > 0 and summary["objectives"] == ["mlm", "seqcl"]


@pytest.mark.slow
def test_pretraining_is_the_engines_quickstart_preset(first_run):
    out, result, lines = first_run
    card = json.loads((out / "model" / "xeval_pretrain.json").read_text(encoding="utf-8"))
    assert card["config"]["name"] == "quickstart" and card["config"]["data"]["layout"] == "synthetic"
    assert card["config"]["train"]["max_seconds"] is None and card["config"]["train"]["steps"] == 3  # fixed steps
    assert (out / "model" / "state" / "step-0000003" / "state.json").is_file()  # the steps actually done
    assert any(line.strip().startswith("encoder ") for line in lines)  # the engine's log, indented under [2/4]
    assert set(result["pretrain"]["last"]) >= {"loss", "mlm", "seqcl"}
