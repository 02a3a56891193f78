"""``python -m xeval run`` end to end on the tiny model: every unit stored, exported predictions re-score to the
stored numbers with ``xeval score``, a rerun trains nothing and stores nothing new."""

import json

import pytest

from tests.helpers import transfer as helpers_transfer
from xeval.adapters.transfer import base as transfer_base
from xeval.cli import main
from xeval.results.store import Store

TASKS = "udpos,panx,xnli,pawsx,xquad,mlqa,tydiqa"
FAST_FLAGS = ["--max-train", "32", "--max-dev", "8", "--max-eval", "8", "--epochs", "1", "--batch-size", "16",
              "--set", "learning_rate=0.001", "--threads", "1"]


def run_cli(model, data_root, out, *extra):
    return main(["run", "--model", str(model), "--suite", "xtreme-mini", "--data", str(data_root), "--out", str(out),
                 "--seeds", "1", *FAST_FLAGS, *extra])


def stored(out) -> dict:
    return {p: p.stat().st_mtime_ns for p in out.glob("*/*/*.json")}  # the records (not results.json, a summary)


def check_rescore(tmp_path, records, exported, labels):
    assert main(["score", "--predictions", str(exported), "--labels", str(labels), "--partial",
                 "--out", str(tmp_path / "score.json")]) == 0
    scored = json.loads((tmp_path / "score.json").read_text())
    for rec in records:
        suffix = "json" if rec.unit.task in ("xquad", "mlqa", "tydiqa") else "tsv"
        name = f"{rec.unit.split}-{rec.unit.lang}.{suffix}"
        assert (exported / rec.unit.task / name).is_file() and (labels / rec.unit.task / name).is_file(), name
        if rec.unit.split != "test":  # a dev split is exported as dev-<lang>, never as a test submission
            assert not (exported / rec.unit.task / f"test-{rec.unit.lang}.{suffix}").exists()
            continue
        block = scored[rec.unit.task]
        shared = [m for m in rec.metrics if m in block]
        assert shared, (rec.unit, list(block))
        for metric in shared:
            assert block[metric][rec.unit.lang] == pytest.approx(rec.metrics[metric], abs=1e-5), (rec.unit, metric)


@pytest.mark.slow
def test_run_every_task_type_rescore_and_resume(tmp_path, data_root, monkeypatch, capsys):
    model = helpers_transfer.tiny_model(data_root)
    out, exported, labels = tmp_path / "runs", tmp_path / "export", tmp_path / "labels"
    langs = ["--langs", "en,de,zh"]
    assert run_cli(model, data_root, out, "--tasks", TASKS, *langs, "--export-predictions", str(exported),
                   "--export-labels", str(labels)) == 0
    printed = capsys.readouterr().out
    records = list(Store(out).records())
    units = {(r.unit.task, r.unit.lang) for r in records}
    # pawsx is evaluated on de and zh only in the mini suite (its English dev set is the training set)
    expected = {(t, lang) for t in TASKS.split(",") for lang in ("en", "de", "zh")}
    expected -= {("pawsx", "en"), ("tydiqa", "de"), ("tydiqa", "zh")}
    assert units == expected
    assert "udpos (zero-shot; 1 seed)" in printed and "exact_match" in printed
    check_rescore(tmp_path, records, exported, labels)

    before = stored(out)

    def no_training(*args, **kwargs):
        raise AssertionError("a resumed run must not train")

    monkeypatch.setattr(transfer_base, "fine_tune", no_training)
    assert run_cli(model, data_root, out, "--tasks", TASKS, *langs) == 0
    assert stored(out) == before, "rerun stores nothing new"


@pytest.mark.slow
def test_run_whole_mini_suite_of_fine_tuning_tasks(tmp_path, data_root):
    """The command of issue 3 over every language of xtreme-mini's seven fine-tuning tasks."""
    model = helpers_transfer.tiny_model(data_root)
    out, exported, labels = tmp_path / "runs", tmp_path / "export", tmp_path / "labels"
    assert run_cli(model, data_root, out, "--tasks", TASKS, "--export-predictions", str(exported),
                   "--export-labels", str(labels)) == 0
    records = list(Store(out).records())
    from xeval.cards.catalog import load_suite

    suite = load_suite("xtreme-mini")
    expected = {(c.name, lang) for c in suite.cards if c.name in TASKS.split(",") for lang in c.languages}
    assert {(r.unit.task, r.unit.lang) for r in records} == expected
    check_rescore(tmp_path, records, exported, labels)


def test_user_errors_are_one_line(tmp_path, data_root, capsys):
    model = helpers_transfer.tiny_model(data_root)
    capsys.readouterr()  # building the model (once per session) may draw a bar
    assert run_cli(model, data_root, tmp_path, "--tasks", "udpos,nope") == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "has no task nope" in err
    assert run_cli(model, data_root, tmp_path, "--tasks", "udpos", "--set", "epoch=3") == 2
    assert "--set epoch: unknown option (did you mean 'epochs'" in capsys.readouterr().err
    assert main(["run", "--model", str(model), "--suite", "xtreme-mini", "--seeds", "x"]) == 2
    assert main(["run", "--model", str(tmp_path), "--suite", "xtreme-mini", "--data", str(data_root)]) == 2
    assert "config.json" in capsys.readouterr().err
