"""``xeval score`` on a submission folder built from the labelled files in ../shared/data.

The label folder is XTREME's layout (``<task>/test-<lang>.tsv|json``), built from dev / labelled test files and
subsampled so the test stays fast. Gold copied as predictions must give 100 everywhere; perturbed predictions give
numbers computed here independently (counts, or the seqeval library for chunk F1).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError, UserError
from xeval.cli import main
from xeval.data.tatoeba import TATOEBA_XTREME
from xeval.metrics.xtreme import XTREME, XTREME_R
from xeval.submission.scorer import read_tags, score_submission, write_predictions

N_SENTENCES = 40  # tagging sentences per language
N_LINES = 200  # classification / tatoeba lines per language
N_QUESTIONS = 60  # QA questions per language


def _tag_sentences(path: Path) -> list[list[str]]:
    """The first N_SENTENCES sentences' tags (``token<TAB>tag`` or tag-only lines)."""
    return [tags for _, tags in read_tags(path)][:N_SENTENCES]


def _write_tags(path: Path, sentences: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\n".join(s) + "\n\n" for s in sentences), encoding="utf-8")


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")


def _squad_head(path: Path, n: int) -> dict:
    """The first n questions of a SQuAD file, keeping its article/paragraph structure."""
    data = json.loads(path.read_text(encoding="utf-8"))
    articles, left = [], n
    for article in data["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][:left]
            left -= len(qas)
            if qas:
                paragraphs.append({**paragraph, "qas": qas})
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
        if left == 0:
            break
    return {"version": data.get("version"), "data": articles}


def _questions(squad: dict) -> list[dict]:
    return [qa for a in squad["data"] for p in a["paragraphs"] for qa in p["qas"]]


@pytest.fixture(scope="module")
def labels(data_root: Path, tmp_path_factory) -> Path:
    """XTREME label layout from the shared data: every language the data has labels for."""
    root = tmp_path_factory.mktemp("labels")
    spec = XTREME.tasks
    for lang in spec["udpos"].langs:
        src = data_root / "udpos_xtreme" / "test_labeled" / f"test-{lang}.tsv"
        if src.is_file():
            _write_tags(root / "udpos" / f"test-{lang}.tsv", _tag_sentences(src))
    for lang in spec["panx"].langs:
        src = data_root / "panx_xtreme" / f"test-{lang}.tsv"
        if src.is_file():
            _write_tags(root / "panx" / f"test-{lang}.tsv", _tag_sentences(src))
    for task, folder in (("xnli", "xnli_xtreme"), ("pawsx", "pawsx_xtreme")):
        for lang in spec[task].langs:
            src = require_file(data_root, f"{folder}/dev-{lang}.tsv")
            rows = src.read_text(encoding="utf-8").splitlines()[:N_LINES]
            _write_lines(root / task / f"test-{lang}.tsv", [r.rstrip("\r").rsplit("\t", 1)[-1] for r in rows])
    qa_sources = {
        "xquad": "xquad/xquad.{lang}.json",
        "mlqa": "mlqa_v1/dev/dev-context-{lang}-question-{lang}.json",
        "tydiqa": "tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-dev/tydiqa.goldp.{lang}.dev.json",
    }
    for task, pattern in qa_sources.items():
        for lang in spec[task].langs:
            head = _squad_head(require_file(data_root, pattern.format(lang=lang)), N_QUESTIONS)
            out = root / task / f"test-{lang}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(head, ensure_ascii=False), encoding="utf-8")
    iso3 = (
        {two: three for three, two in TATOEBA_XTREME.items()} if "deu" in TATOEBA_XTREME else TATOEBA_XTREME
    )
    for lang in spec["tatoeba"].langs:
        src = require_file(data_root, f"tatoeba/tatoeba.{iso3[lang]}-eng.{iso3[lang]}")
        n = min(N_LINES, len(src.read_text(encoding="utf-8").splitlines()))
        _write_lines(root / "tatoeba" / f"test-{lang}.tsv", [str(i) for i in range(n)])
    gold = require_file(data_root, "bucc2018/zh-en.dev.gold").read_text(encoding="utf-8").splitlines()
    _write_lines(root / "bucc2018" / "test-zh.tsv", gold)
    return root


def score_file_for(spec, pred: Path, gold: Path) -> dict:
    from xeval.submission.scorer import score_file

    if spec.metric in ("squad", "mlqa"):  # labels are SQuAD JSON: build them from the answers
        answers = json.loads(gold.read_text(encoding="utf-8"))
        qas = [{"id": q, "answers": [{"text": a, "answer_start": 0}]} for q, a in answers.items()]
        gold.write_text(
            json.dumps({"data": [{"paragraphs": [{"context": "", "qas": qas}]}]}), encoding="utf-8"
        )
    return score_file(spec, "zh", pred, gold, [])


def _gold_as_predictions(labels: Path, out: Path) -> Path:
    for path in labels.rglob("test-*"):
        target = out / path.relative_to(labels)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".json":
            squad = json.loads(path.read_text(encoding="utf-8"))
            answers = {qa["id"]: qa["answers"][0]["text"] for qa in _questions(squad)}
            target.write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
        else:
            target.write_bytes(path.read_bytes())
    return out


def test_gold_as_predictions_scores_100_everywhere(labels, tmp_path):
    preds = _gold_as_predictions(labels, tmp_path / "preds")
    report = score_submission(preds, labels, "xtreme", partial=True)
    result = report.result
    for task in XTREME.tasks:
        block = result[task]
        for metric, per_lang in block.items():
            if isinstance(per_lang, dict):
                assert set(per_lang.values()) == {100.0}, (task, metric)
            else:
                assert per_lang == 100.0, (task, metric)
    # Complete tasks give complete groups; tagging (13/33 udpos, 14/40 panx) and retrieval (bucc zh only) are not.
    assert result["classification"] == 100.0 and result["qa"] == 100.0
    assert "tagging" not in result and "retrieval" not in result and "all_task" not in result
    assert set(report.skipped) == {"udpos", "panx", "bucc2018"}
    assert report.warnings == []
    assert len(result["xnli"]["accuracy"]) == 15 and len(result["tatoeba"]["accuracy"]) == 36


def test_structure_matches_the_official_scorer(labels, tmp_path):
    preds = _gold_as_predictions(labels, tmp_path / "preds")
    result = score_submission(preds, labels, partial=True).result
    assert list(result) == [
        "classification",
        "qa",
        "pawsx",
        "xnli",
        "panx",
        "udpos",
        "bucc2018",
        "tatoeba",
        "xquad",
        "mlqa",
        "tydiqa",
    ]
    assert list(result["mlqa"]) == ["exact_match", "f1", "avg_exact_match", "avg_f1", "avg_metric"]
    assert list(result["udpos"]) == [
        "f1",
        "precision",
        "recall",
        "avg_f1",
        "avg_precision",
        "avg_recall",
        "avg_metric",
    ]
    assert list(result["xnli"]) == ["accuracy", "avg_accuracy", "avg_metric"]
    assert list(result["xnli"]["accuracy"]) == list(XTREME.tasks["xnli"].langs)  # the scorer's language order


def _flip(label: str, choices: list[str]) -> str:
    return choices[(choices.index(label) + 1) % len(choices)]


def test_perturbed_predictions(labels, tmp_path):
    seqeval_metrics = pytest.importorskip("seqeval.metrics")
    preds = _gold_as_predictions(labels, tmp_path / "preds")
    expected: dict[tuple[str, str], dict[str, float]] = {}

    # classification / tatoeba: change every 10th line (0, 10, 20, ...)
    for task, choices in (("xnli", ["entailment", "neutral", "contradiction"]), ("pawsx", ["0", "1"])):
        for path in sorted((preds / task).glob("test-*.tsv")):
            lines = path.read_text(encoding="utf-8").splitlines()
            changed = [_flip(x, choices) if i % 10 == 0 else x for i, x in enumerate(lines)]
            path.write_text("\n".join(changed) + "\n", encoding="utf-8")
            wrong = (len(lines) + 9) // 10
            expected[(task, path.stem[5:])] = {"accuracy": (len(lines) - wrong) / len(lines) * 100}
    path = preds / "tatoeba" / "test-de.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text(
        "\n".join(str(len(lines) - 1 - int(x)) if i % 4 == 0 else x for i, x in enumerate(lines)) + "\n"
    )
    expected[("tatoeba", "de")] = {"accuracy": (len(lines) - (len(lines) + 3) // 4) / len(lines) * 100}

    # QA: drop every 5th question, answer every 7th (of the rest) with an empty string
    for task in ("xquad", "mlqa", "tydiqa"):
        for path in sorted((preds / task).glob("test-*.json")):
            answers = json.loads(path.read_text(encoding="utf-8"))
            kept = {}
            for i, (qid, text) in enumerate(answers.items()):
                if i % 5 == 0:
                    continue
                kept[qid] = "" if i % 7 == 0 else text
            path.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
            right = sum(1 for qid in kept if kept[qid])
            score = right / len(answers) * 100
            expected[(task, path.stem[5:])] = {"exact_match": score, "f1": score}

    # tagging: in every 3rd sentence give the first token another tag; expected numbers from seqeval itself
    for task, tagset in (("udpos", ["NOUN", "VERB"]), ("panx", ["B-PER", "B-ORG"])):
        for lang in ("en", "ar", "zh"):
            path = preds / task / f"test-{lang}.tsv"
            gold = _tag_sentences(labels / task / path.name)
            pred = [
                [_flip(s[0], tagset) if s[0] in tagset else tagset[0], *s[1:]] if i % 3 == 0 else s
                for i, s in enumerate(gold)
            ]
            _write_tags(path, pred)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected[(task, path.stem[5:])] = {
                    "f1": seqeval_metrics.f1_score(gold, pred) * 100,
                    "precision": seqeval_metrics.precision_score(gold, pred) * 100,
                    "recall": seqeval_metrics.recall_score(gold, pred) * 100,
                }

    # BUCC: drop every 4th gold pair, add 3 wrong ones
    path = preds / "bucc2018" / "test-zh.tsv"
    gold_pairs = path.read_text(encoding="utf-8").splitlines()
    kept = [p for i, p in enumerate(gold_pairs) if i % 4 != 0]
    path.write_text("\n".join(kept + ["zh-1\ten-1", "zh-2\ten-2", "zh-3\ten-3"]) + "\n", encoding="utf-8")
    p, r = len(kept) / (len(kept) + 3), len(kept) / len(gold_pairs)
    expected[("bucc2018", "zh")] = {"f1": 2 * p * r / (p + r) * 100, "precision": p * 100, "recall": r * 100}

    report = score_submission(preds, labels, partial=True)
    result = report.result
    for (task, lang), metrics in expected.items():
        for metric, value in metrics.items():
            assert result[task][metric][lang] == pytest.approx(value, abs=1e-9), (task, lang, metric)
    # per-task averages and group scores follow from the per-language numbers
    for task in ("xnli", "pawsx"):
        langs = XTREME.tasks[task].langs
        assert result[task]["avg_metric"] == pytest.approx(
            sum(expected[(task, lg)]["accuracy"] for lg in langs) / len(langs)
        )
    assert result["classification"] == pytest.approx(
        (result["pawsx"]["avg_metric"] + result["xnli"]["avg_metric"]) / 2
    )
    qa = [(result[t]["avg_exact_match"] + result[t]["avg_f1"]) / 2 for t in ("xquad", "mlqa", "tydiqa")]
    assert result["qa"] == pytest.approx(sum(qa) / 3)
    # the dropped questions are reported, not silent
    assert any("mlqa/test-de.json" in w and "no prediction (scored 0)" in w for w in report.warnings)


def test_missing_prediction_file_is_a_clear_error(labels, tmp_path, capsys):
    preds = _gold_as_predictions(labels, tmp_path / "preds")
    (preds / "xnli" / "test-sw.tsv").unlink()
    with pytest.raises(DataError, match=r"xnli/test-sw.tsv: missing: expected the xnli predictions for sw"):
        score_submission(preds, labels, partial=True)
    assert main(["score", "--predictions", str(preds), "--labels", str(labels), "--partial"]) == 2
    assert "test-sw.tsv: missing" in capsys.readouterr().err


def test_short_prediction_files_are_clear_errors(labels, tmp_path):
    preds = _gold_as_predictions(labels, tmp_path / "preds")
    path = preds / "pawsx" / "test-ja.tsv"
    path.write_text("\n".join(path.read_text().splitlines()[:-5]) + "\n")
    with pytest.raises(
        DataError, match=rf"pawsx/test-ja.tsv: expected {N_LINES} lines .* found {N_LINES - 5}"
    ):
        score_submission(preds, labels, partial=True)
    path.write_bytes((labels / "pawsx" / "test-ja.tsv").read_bytes())

    path = preds / "udpos" / "test-ar.tsv"
    sentences = _tag_sentences(path)
    _write_tags(path, [sentences[0], sentences[1][:-1], *sentences[2:]])
    line = len(sentences[0]) + 2
    with pytest.raises(
        DataError, match=rf"udpos/test-ar.tsv:{line}: sentence 2 has {len(sentences[1]) - 1} tags"
    ):
        score_submission(preds, labels, partial=True)
    _write_tags(path, sentences[:-1])
    with pytest.raises(DataError, match=r"expected \d+ sentences"):
        score_submission(preds, labels, partial=True)
    _write_tags(path, sentences)

    (preds / "tydiqa" / "test-ko.json").write_text('{"unrelated-id": "x"}')
    with pytest.raises(DataError, match=r"tydiqa/test-ko.json: none of the \d+ ids"):
        score_submission(preds, labels, partial=True)
    (preds / "tydiqa" / "test-ko.json").write_text('["not", "a", "map"]')
    with pytest.raises(DataError, match=r"expected a JSON object"):
        score_submission(preds, labels, partial=True)


def test_missing_labels_need_partial(labels, tmp_path):
    preds = _gold_as_predictions(labels, tmp_path / "preds")
    with pytest.raises(UserError, match=r"panx: no label file for 26 of the 40 panx languages \(he, id, "):
        score_submission(preds, labels)


def _tiny_complete_submission(root: Path, benchmark=XTREME) -> tuple[Path, Path]:
    """Every task and language of the benchmark with two tiny examples; one wrong prediction in xnli-en."""
    labels, preds = root / "labels", root / "preds"
    for task, spec in benchmark.tasks.items():
        for lang in spec.langs:
            name = f"{task}/test-{lang}.{spec.suffix}"
            if spec.metric == "chunk_f1":
                gold = "B-PER\nI-PER\nO\n\nO\nB-LOC\n" if task == "panx" else "DET\nNOUN\n\nVERB\n"
                for folder in (labels, preds):
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_text(gold)
            elif spec.metric in ("squad", "mlqa"):
                squad = {
                    "data": [
                        {
                            "paragraphs": [
                                {
                                    "context": "x",
                                    "qas": [
                                        {"id": f"{lang}1", "answers": [{"text": "Paris", "answer_start": 0}]},
                                        {
                                            "id": f"{lang}2",
                                            "answers": [{"text": "red dog", "answer_start": 0}],
                                        },
                                    ],
                                }
                            ]
                        }
                    ]
                }
                (labels / name).parent.mkdir(parents=True, exist_ok=True)
                (labels / name).write_text(json.dumps(squad))
                (preds / name).parent.mkdir(parents=True, exist_ok=True)
                # q1 exact; q2 "red" vs "red dog" -> P 1, R 1/2, F1 2/3 -> EM 50, F1 (1 + 2/3)/2*100
                (preds / name).write_text(json.dumps({f"{lang}1": "Paris", f"{lang}2": "red"}))
            elif spec.metric == "mrr_at_20":  # reciprocal rank 1/2; a second query without prediction: 0
                for folder, value in ((labels, {"q1": ["Q7 "], "q2": ["Q1"]}), (preds, {"q1": ["Q2", "Q7"]})):
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_text(json.dumps(value))
            elif spec.metric == "xcopa_accuracy":  # one row of two right
                for folder, labels_ in ((labels, [0, 1]), (preds, [0, 0])):
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_text("".join(json.dumps({"idx": i, "label": v}) + "\n"
                                                       for i, v in enumerate(labels_)))
            else:
                gold = "zh-1\ten-1\nzh-2\ten-2\n" if spec.metric == "bucc_f1" else "0\n1\n"
                pred = "0\n0\n" if (task, lang) == ("xnli", "en") else gold
                for folder, text in ((labels, gold), (preds, pred)):
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_text(text)
    return preds, labels


def test_overall_score_needs_every_task(tmp_path):
    preds, labels = _tiny_complete_submission(tmp_path)
    result = score_submission(preds, labels).result
    # xnli: en 50, the 14 others 100 -> (50 + 14*100)/15; qa tasks: (50 + (1 + 2/3)/2*100)/2
    xnli = (50 + 14 * 100) / 15
    qa = (50 + (1 + 2 / 3) / 2 * 100) / 2
    assert result["xnli"]["avg_metric"] == pytest.approx(xnli)
    assert result["mlqa"]["avg_metric"] == pytest.approx(qa)
    assert result["classification"] == pytest.approx((100 + xnli) / 2)
    assert result["tagging"] == 100.0 and result["retrieval"] == 100.0
    assert result["qa"] == pytest.approx(qa)
    assert result["all_task"] == pytest.approx((xnli + 3 * qa + 5 * 100) / 9)
    assert list(result)[:5] == ["all_task", "classification", "tagging", "qa", "retrieval"]
    # without one task the overall score and that task's group disappear
    for folder in (preds, labels):
        for f in (folder / "bucc2018").iterdir():
            f.unlink()
        (folder / "bucc2018").rmdir()
    result = score_submission(preds, labels).result
    assert "all_task" not in result and "retrieval" not in result and "tagging" in result


def test_cli_writes_the_json(tmp_path, capsys):
    preds, labels = _tiny_complete_submission(tmp_path)
    out = tmp_path / "scores.json"
    assert main(["score", "--predictions", str(preds), "--labels", str(labels), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "all_task" in printed and "xnli" in printed
    assert json.loads(out.read_text()) == score_submission(preds, labels).result
    assert main(["score", "--predictions", str(tmp_path / "nope"), "--labels", str(labels)]) == 2
    assert "predictions folder not found" in capsys.readouterr().err


def test_xtreme_r_benchmark_as_the_repositorys_evaluate_py(tmp_path):
    """``--benchmark xtreme-r`` = evaluate.py ``--xtreme_version xtreme-r`` (commit 838c13b): its task and language
    lists (XQuAD with ro), groups (retrieval = Tatoeba + Mewsli-X, multi_choice = XCOPA), XCOPA read as .jsonl,
    Mewsli-X's map@20 (mean reciprocal rank), and LAReQA with no languages: an empty block and no all_task."""
    preds, labels = _tiny_complete_submission(tmp_path, XTREME_R)
    for folder in (preds, labels):
        (folder / "lareqa").mkdir()
    result = score_submission(preds, labels, "xtreme-r").result
    qa = (50 + (1 + 2 / 3) / 2 * 100) / 2
    xnli = (50 + 14 * 100) / 15
    assert list(result) == ["classification", "tagging", "qa", "retrieval", "multi_choice", "xnli", "panx", "udpos",
                            "tatoeba", "xcopa", "lareqa", "mewslix", "xquad", "mlqa", "tydiqa"]
    assert result["mewslix"]["map@20"]["ar"] == 25.0 and result["mewslix"]["avg_metric"] == 25.0
    assert result["xcopa"]["avg_accuracy"] == 50.0 and result["multi_choice"] == 50.0
    assert result["lareqa"] == {} and "all_task" not in result
    assert result["retrieval"] == pytest.approx((100 + 25) / 2)
    assert result["classification"] == pytest.approx((xnli + 50) / 2)
    assert result["qa"] == pytest.approx(qa)
    assert len(result["xquad"]["f1"]) == 12 and "ro" in result["xquad"]["f1"]
    assert len(result["udpos"]["f1"]) == 38 and len(result["tatoeba"]["accuracy"]) == 41
    assert list(result["udpos"]["f1"])[-5:] == ["lt", "pl", "uk", "wo", "ro"]  # evaluate.py's order


def test_write_predictions_round_trips(tmp_path):
    """What adapters export with ``write_predictions`` re-scores to the same numbers."""
    tasks = XTREME.tasks
    cases = {
        "udpos": [["DET", "NOUN"], ["VERB"]],
        "xnli": ["neutral", "entailment"],
        "bucc2018": [("zh-1", "en-2")],
        "mlqa": {"q1": "北京", "q2": "«Berlin»"},
    }
    for task, value in cases.items():
        write_predictions(tasks[task], tmp_path / "p.out", value)
        write_predictions(tasks[task], tmp_path / "g.out", value)
        scores = score_file_for(tasks[task], tmp_path / "p.out", tmp_path / "g.out")
        assert scores.get("f1", scores.get("accuracy")) == 100.0, task


def test_empty_label_file_is_a_data_error(tmp_path):
    (tmp_path / "l" / "xnli").mkdir(parents=True)
    (tmp_path / "p" / "xnli").mkdir(parents=True)
    for lang in XTREME.tasks["xnli"].langs:
        (tmp_path / "l" / "xnli" / f"test-{lang}.tsv").write_text("")
        (tmp_path / "p" / "xnli" / f"test-{lang}.tsv").write_text("")
    with pytest.raises(DataError, match=r"l/xnli/test-ar.tsv: accuracy of an empty set is undefined"):
        score_submission(tmp_path / "p", tmp_path / "l")
