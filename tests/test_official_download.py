"""XTREME's official download (``../shared/data/xtreme_download_replica``, the layout ``download_data.sh`` writes):
its test files carry no labels, so every such unit is predicted, exported in the submission layout and never scored;
predictions exported from it, scored against the labelled originals, equal xeval's own score on the shared layout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import REPO, require_file
from tests.helpers.transfer import context, tiny_model

REPLICA = "xtreme_download_replica"


@pytest.fixture(scope="module")
def replica(data_root) -> Path:
    return require_file(data_root, f"{REPLICA}/README.md").parent


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xeval", *args], cwd=cwd, capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})


def test_qa_test_files_with_dummy_answers_are_label_free(replica, data_root):
    from xeval.data.squad_json import is_label_free, read_squad

    stripped = read_squad(replica / "xquad" / "xquad.zh.json", "zh", "test")
    assert {(a.text, a.start) for ex in stripped for a in ex.answers} == {("", 0)}  # remove_qa_test_annotations
    assert is_label_free(stripped)
    assert not is_label_free(read_squad(data_root / "xquad" / "xquad.zh.json", "zh", "test"))
    mlqa = replica / "mlqa" / "MLQA_V1"
    assert is_label_free(read_squad(mlqa / "test" / "test-context-de-question-de.json", "de", "test"))
    assert not is_label_free(read_squad(mlqa / "dev" / "dev-context-de-question-de.json", "de", "dev"))


def test_tatoeba_with_the_english_side_sorted_is_label_free(replica, data_root):
    from xeval.cards.catalog import load_card
    from xeval.data.sources import DataRoot, load_examples
    from xeval.data.tatoeba import gold_order_known

    card = load_card("tatoeba")
    official = load_examples(card, "de", "test", DataRoot.resolve(str(replica)))
    laser = load_examples(card, "de", "test", DataRoot.resolve(str(data_root)))
    assert len(official) == len(laser) and not gold_order_known(official) and gold_order_known(laser)


def test_run_on_the_official_download_exports_everything_and_scores_nothing(replica, data_root, tmp_path):
    """The suite on XTREME's download: SQuAD train is not in it, which is one error naming the file (xquad and mlqa
    do not run); the tasks that have their training file run, every record is label-free, and the submission folder
    is one ``xeval score`` reads."""
    model = tiny_model(data_root)
    out, sub = tmp_path / "runs", tmp_path / "submission"
    done = _cli("run", "--model", str(model), "--suite", "xtreme", "--tasks", "xquad,udpos,pawsx,tydiqa",
                "--langs", "en,de,zh,ko", "--data", str(replica), "--out", str(out), "--export-predictions",
                str(sub), "--max-train", "32", "--max-eval", "6", "--epochs", "1", "--threads", "1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [f"xeval run: error: {replica.resolve()}/squad/train-v1.1.json: missing file: the training set "
                      "of xquad; that task was not run"]
    assert f"udpos: 2 of 4 languages have no evaluation file in {replica.resolve()}, not run: de, ko" in done.stderr
    records = [json.loads(p.read_text()) for p in out.glob("*/*/*.json")]  # the records
    assert {r["unit"]["task"] for r in records} == {"udpos", "pawsx", "tydiqa"}
    assert all(r["metrics"] == {} and "unscored" in r["extra"] for r in records)
    assert done.stdout.count("unscored (labels withheld)") == len(records)
    tydiqa = json.loads((sub / "tydiqa" / "test-ko.json").read_text(encoding="utf-8"))
    assert len(tydiqa) == 6 and all(isinstance(v, str) for v in tydiqa.values())
    assert sorted(p.name for p in (sub / "udpos").iterdir()) == ["test-en.tsv", "test-zh.tsv", "xeval-manifest.json"]
    # the submission is scored by xeval score against labels of the same examples (the labelled originals)
    labels = tmp_path / "labels" / "pawsx"
    labels.mkdir(parents=True)
    gold = (data_root / "pawsx_xtreme" / "dev-zh.tsv").read_text(encoding="utf-8").splitlines()[:6]
    (labels / "test-zh.tsv").write_text("".join(line.split("\t")[2] + "\n" for line in gold), encoding="utf-8")
    scored = _cli("score", "--predictions", str(sub), "--labels", str(tmp_path / "labels"), "--partial",
                  "--output", "-", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert 0 <= json.loads(scored.stdout)["pawsx"]["accuracy"]["zh"] <= 100


def _squad_json(examples) -> dict:
    """SQuAD v1.1 JSON holding exactly ``examples`` in order (one article each), as read_squad reads them back."""
    return {"version": "1.1", "data": [
        {"title": ex.title, "paragraphs": [{"context": ex.context, "qas": [
            {"id": ex.id, "question": ex.question,
             "answers": [{"text": a.text, "answer_start": a.start} for a in ex.answers]}]}]} for ex in examples]}


@pytest.mark.slow
def test_predictions_from_the_download_scored_against_the_originals_equal_the_shared_layout_score(
        replica, data_root, tiny_encoder, tmp_path):
    """Same model, same training data: a temporary copy of the download gets SQuAD train under XTREME's name (here:
    the shared layout's English QA training set, so both layouts train on the same examples) and the full TyDiQA
    English train. Its label-free predictions, scored by ``xeval score`` against labels from the originals, give
    exactly the numbers xeval computes itself on the shared layout (QA: first N questions; Tatoeba: all pairs)."""
    from xeval.adapters.probes import retrieval
    from xeval.adapters.transfer import qa
    from xeval.adapters.transfer.base import load
    from xeval.cards.catalog import load_card
    from xeval.data.sources import DataRoot
    from xeval.submission.scorer import score_submission

    copy = tmp_path / "download"
    shutil.copytree(replica, copy, ignore=shutil.ignore_patterns("udpos", "panx", "xnli", "pawsx", "bucc2018"))
    lean = {"max_train": 16, "max_eval": 8, "batch_size": 8}
    shared_ctx = context(tiny_encoder, data_root, tmp_path / "shared-runs", recipe=lean,
                         export_labels=str(tmp_path / "labels"))
    train = load(load_card("xquad"), "en", "train", shared_ctx)
    (copy / "squad" / "train-v1.1.json").write_text(json.dumps(_squad_json(train), ensure_ascii=False),
                                                    encoding="utf-8")
    tydiqa_train = "tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-train/tydiqa.goldp.en.train.json"
    shutil.copy(data_root / tydiqa_train, copy / "tydiqa" / "tydiqa-goldp-v1.1-train" / "tydiqa.goldp.en.train.json")
    official_ctx = context(tiny_encoder, copy, tmp_path / "official-runs", recipe=lean,
                           export_dir=tmp_path / "submission")
    assert official_ctx.data == DataRoot("xtreme", copy.resolve())

    langs = {"xquad": ["zh"], "mlqa": ["zh"], "tydiqa": ["ko"]}
    own: dict[str, dict[str, dict]] = {}
    for task, task_langs in langs.items():
        card = load_card(task)
        shared_card = replace(card, eval_splits={lang: "dev" for lang in task_langs}) if task == "mlqa" else card
        own[task] = {r.unit.lang: r.metrics for r in qa.run(shared_card, task_langs, shared_ctx)}
        unscored = qa.run(card, task_langs, official_ctx)
        assert all(r.metrics == {} and "unscored" in r.extra for r in unscored)

    # the shared layout's MLQA labels are its dev split (exported as dev-<lang>, never as a test file); here they
    # hold exactly the examples of the download's test file, so they stand in for its test labels
    for path in (tmp_path / "labels" / "mlqa").glob("dev-*.json"):
        path.rename(path.with_name("test-" + path.name.removeprefix("dev-")))
    tatoeba = load_card("tatoeba")
    probe = {"layers": [1]}
    laser = {r.unit.lang: r.metrics for r in retrieval.run(tatoeba, ["de", "zh"], replace(shared_ctx, **probe))}
    assert all(r.metrics == {} for r in retrieval.run(tatoeba, ["de", "zh"], replace(official_ctx, **probe)))
    for lang, iso3 in (("de", "deu"), ("zh", "cmn")):  # gold: each sorted English line's index in the LASER file
        english = (data_root / "tatoeba" / f"tatoeba.{iso3}-eng.eng").read_text(encoding="utf-8").splitlines()
        position = {line.strip(): i for i, line in enumerate(english)}
        ordered = (copy / "tatoeba" / f"{lang}-en.en").read_text(encoding="utf-8").splitlines()
        labels = tmp_path / "labels" / "tatoeba" / f"test-{lang}.tsv"
        labels.parent.mkdir(parents=True, exist_ok=True)
        labels.write_text("".join(f"{position[line]}\n" for line in ordered), encoding="utf-8")

    result = score_submission(tmp_path / "submission", tmp_path / "labels", partial=True).result
    for task, by_lang in own.items():
        for lang, metrics in by_lang.items():
            assert result[task]["f1"][lang] == pytest.approx(metrics["f1"], abs=1e-6), (task, lang)
            assert result[task]["exact_match"][lang] == pytest.approx(metrics["exact_match"], abs=1e-6)
    for lang, metrics in laser.items():
        assert result["tatoeba"]["accuracy"][lang] == pytest.approx(metrics["accuracy"], abs=1e-6)
    assert len(json.loads((tmp_path / "submission" / "xquad" / "test-zh.json").read_text())) == lean["max_eval"]
