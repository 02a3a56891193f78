"""XQuAD and MLQA share one fine-tuned model when they train alike (xeval.adapters.transfer.shared_training), as XTREME's
SQuAD model answers both: the same numbers as training MLQA on its own, one training instead of two, and no sharing
where the training differs (TyDiQA: another training file; MLQA without xtreme-mini's ``train_as``)."""

from __future__ import annotations

import pytest

from tests.helpers import transfer as helpers_transfer
from tests.helpers.transfer import FAST

pytestmark = pytest.mark.slow


def _run(tmp_path, data_root, tasks, store, monkeypatch=None, calls=None, suite="xtreme-mini"):
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    if calls is not None:
        from xeval.adapters.transfer import zero_shot

        train = zero_shot.train_model
        monkeypatch.setattr(zero_shot, "train_model", lambda family, *a, **k: (calls.append(family.card.name),
                                                                          train(family, *a, **k))[1])
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite=suite, tasks=tasks,
                      langs=["en", "de"], data=str(data_root), out=str(tmp_path / store),
                      recipe={**FAST, "max_train": 24, "max_eval": 6, "max_length": 128})
    return {(r.unit.task, r.unit.lang): r for r in run(opts, echo=lambda *_: None)}


def test_mlqa_answers_with_the_xquad_model_and_the_same_numbers_as_its_own(tmp_path, data_root, monkeypatch):
    calls: list[str] = []
    shared = _run(tmp_path, data_root, ["xquad", "mlqa", "tydiqa"], "shared", monkeypatch, calls)
    assert calls == ["xquad", "tydiqa"]  # MLQA trained nothing; TyDiQA (its own training file) did
    assert shared[("mlqa", "en")].extra["training"]["trained_for"] == "xquad"
    assert shared[("mlqa", "de")].extra["training"]["trained_for"] == "xquad"
    assert "trained_for" not in shared[("xquad", "en")].extra["training"]
    assert "trained_for" not in shared[("tydiqa", "en")].extra["training"]
    assert shared[("mlqa", "en")].data != shared[("xquad", "en")].data  # evaluated on MLQA, not XQuAD
    assert shared[("mlqa", "en")].config["train"]["data"]["subsample"]["task"] == "xquad"

    alone = _run(tmp_path, data_root, ["mlqa"], "alone")  # MLQA trains for itself: the numbers are the same
    for lang in ("en", "de"):
        assert alone[("mlqa", lang)].metrics == shared[("mlqa", lang)].metrics
        assert "trained_for" not in alone[("mlqa", lang)].extra["training"]


def test_no_sharing_when_the_training_examples_differ(tmp_path, data_root, monkeypatch):
    # xtreme-mini's QA entries without MLQA's train_as: each task draws its own 1,000 questions, so each trains
    suite = tmp_path / "qa.yaml"
    suite.write_text("name: qa\nlayouts: [shared]\ntasks:\n"
                     "  - {card: xquad, subsample: {train: 1000, eval: 100}}\n"
                     "  - {card: mlqa, eval_splits: {dev: [en, de]}, subsample: {train: 1000, eval: 100}}\n")
    calls: list[str] = []
    records = _run(tmp_path, data_root, ["xquad", "mlqa"], "own", monkeypatch, calls, suite=str(suite))
    assert calls == ["xquad", "mlqa"]
    assert not any("trained_for" in r.extra["training"] for r in records.values())
