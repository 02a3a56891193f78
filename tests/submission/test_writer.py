"""Exports (issue 17, item 6): the .jsonl sidecar (id, gold, prediction, correct), a dev split exported under its
own name, --export-labels with Tatoeba's gold, probes re-exporting stored units on resume."""

import json
import shutil

import pytest

from tests.helpers.transfer import tiny_model
from xeval.cli import main
from xeval.results.store import Store
from xeval.submission.writer import export_name, renamed_for_split


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_names_follow_the_split():
    assert export_name("test", "de", "tsv") == "test-de.tsv"
    assert export_name("dev", "de", "json") == "dev-de.json"
    assert renamed_for_split("test-de.tsv", "dev") == "dev-de.tsv"
    assert renamed_for_split("test-de.tsv", "test") == "test-de.tsv"
    assert renamed_for_split("ro-en.ot-emd.out", "dev") == "ro-en.ot-emd.out"


def test_tatoeba_export_labels_sidecar_rescore_and_reexport_on_resume(data_root, tmp_path, capsys):
    model = tiny_model(data_root)
    export, labels, out = tmp_path / "export", tmp_path / "labels", tmp_path / "runs"
    argv = ["run", "--model", str(model), "--suite", "probes", "--tasks", "tatoeba", "--langs", "de,fr",
            "--data", str(data_root), "--out", str(out), "--layers", "1", "--max-eval", "60", "--threads", "1",
            "--export-predictions", str(export), "--export-labels", str(labels)]
    assert main(argv) == 0
    records = {r.unit.lang: r for r in Store(out).records()}
    for lang in ("de", "fr"):
        gold = (labels / "tatoeba" / f"test-{lang}.tsv").read_text().splitlines()
        assert gold == [str(i) for i in range(60)]  # English line i's translation is line i
        rows = _jsonl(export / "tatoeba" / f"test-{lang}.jsonl")
        predictions = (export / "tatoeba" / f"test-{lang}.tsv").read_text().splitlines()
        assert [r["id"] for r in rows] == [str(i) for i in range(60)]
        assert [str(r["prediction"]) for r in rows] == predictions and [r["gold"] for r in rows] == list(range(60))
        assert all(r["correct"] == (r["prediction"] == r["gold"]) for r in rows)
        assert 100 * sum(r["correct"] for r in rows) / 60 == pytest.approx(records[lang].metrics["accuracy"])
        # the input text: line i's English query and the sentence it should find (the data files' line i)
        name = {"de": "deu", "fr": "fra"}[lang]
        english = (data_root / "tatoeba" / f"tatoeba.{name}-eng.eng").read_text(encoding="utf-8").splitlines()
        own = (data_root / "tatoeba" / f"tatoeba.{name}-eng.{name}").read_text(encoding="utf-8").splitlines()
        assert [r["input"] for r in rows[:3]] == [[english[i].strip(), own[i].strip()] for i in range(3)]
    capsys.readouterr()
    # the exported files re-score to the stored numbers through xeval score
    assert main(["score", "--predictions", str(export), "--labels", str(labels), "--partial", "--out",
                 str(tmp_path / "s.json")]) == 0
    scored = json.loads((tmp_path / "s.json").read_text())["tatoeba"]
    assert scored["accuracy"]["de"] == pytest.approx(records["de"].metrics["accuracy"])
    # resume: nothing computed, everything exported again
    shutil.rmtree(export)
    shutil.rmtree(labels)
    assert main(argv) == 0
    assert "0 units computed, 2 reused" in capsys.readouterr().out
    for lang in ("de", "fr"):
        assert (export / "tatoeba" / f"test-{lang}.tsv").is_file()
        assert (export / "tatoeba" / f"test-{lang}.jsonl").is_file()
        assert (labels / "tatoeba" / f"test-{lang}.tsv").is_file()


def test_a_dev_split_is_exported_as_dev_with_its_sidecar(data_root, tmp_path):
    model = tiny_model(data_root)
    export, out = tmp_path / "export", tmp_path / "runs"
    assert main(["run", "--model", str(model), "--suite", "xtreme-mini", "--tasks", "xnli", "--langs", "en,de",
                 "--data", str(data_root), "--out", str(out), "--max-train", "32", "--max-dev", "8", "--max-eval",
                 "16", "--epochs", "1", "--batch-size", "16", "--threads", "1",
                 "--export-predictions", str(export)]) == 0
    records = {r.unit.lang: r for r in Store(out).records()}
    for lang, rec in records.items():
        assert rec.unit.split == "dev"  # xtreme-mini scores XNLI on dev
        assert not (export / "xnli" / f"test-{lang}.tsv").exists()
        predictions = (export / "xnli" / f"dev-{lang}.tsv").read_text().splitlines()
        rows = _jsonl(export / "xnli" / f"dev-{lang}.jsonl")
        assert [r["prediction"] for r in rows] == predictions and len(rows) == 16
        assert all(r["correct"] == (r["gold"] == r["prediction"]) for r in rows)
        # the input text: premise and hypothesis, as the dev file's line named by the id holds them
        lines = (data_root / "xnli_xtreme" / f"dev-{lang}.tsv").read_text(encoding="utf-8").splitlines()
        for row in rows[:3]:
            line = int(row["id"].rsplit(":", 1)[1])
            assert row["input"] == lines[line - 1].split("\t")[:2], row
        assert 100 * sum(r["correct"] for r in rows) / 16 == pytest.approx(rec.metrics["accuracy"])


def _udpos_run(model, data_root, out, export, labels, langs, *extra):
    return main(["run", "--model", str(model), "--suite", "xtreme-mini", "--tasks", "udpos", "--langs", langs,
                 "--data", str(data_root), "--out", str(out), "--max-train", "64", "--max-eval", "32", "--max-dev",
                 "16", "--epochs", "1", "--threads", "1", "--export-predictions", str(export),
                 "--export-labels", str(labels), *extra])


def test_a_submission_mixing_two_runs_is_refused_and_one_run_scores(data_root, tmp_path, capsys):
    model = tiny_model(data_root)
    export, labels, out = tmp_path / "sub", tmp_path / "labels", tmp_path / "runs"
    assert _udpos_run(model, data_root, out, export, labels, "en,es,fr") == 0
    manifest = json.loads((export / "udpos" / "xeval-manifest.json").read_text())["files"]
    assert sorted(manifest) == ["test-en.tsv", "test-es.tsv", "test-fr.tsv"]
    assert len({(e["model"], e["run_hash"], e["seed"]) for e in manifest.values()}) == 1
    capsys.readouterr()
    score = ["score", "--predictions", str(export), "--labels", str(labels), "--partial", "--out", "-"]
    assert main(score) == 0  # one run's export scores; the manifest is not read as a prediction file
    scored = json.loads(capsys.readouterr().out)["udpos"]
    assert sorted(scored["f1"]) == ["en", "es", "fr"]
    # a second config over two of the languages: fr stays from the first run
    assert _udpos_run(model, data_root, out, export, labels, "en,es", "--learning-rate", "5e-3") == 0
    capsys.readouterr()
    assert main(score) == 2
    err = capsys.readouterr().err
    assert str(export / "udpos") in err and "two runs" in err and "test-fr.tsv" in err
    assert len(err.strip().splitlines()) == 1


def test_a_file_edited_or_copied_in_after_the_export_is_refused(data_root, tmp_path, capsys):
    model = tiny_model(data_root)
    export, labels, out = tmp_path / "sub", tmp_path / "labels", tmp_path / "runs"
    assert _udpos_run(model, data_root, out, export, labels, "en,es") == 0
    manifest = json.loads((export / "udpos" / "xeval-manifest.json").read_text())["files"]
    assert all(len(e["sha256"]) == 64 for e in manifest.values())
    score = ["score", "--predictions", str(export), "--labels", str(labels), "--partial", "--out", "-"]
    es = export / "udpos" / "test-es.tsv"
    original = es.read_text()
    es.write_text(original.replace("NOUN", "VERB", 1))  # one tag edited by hand
    capsys.readouterr()
    assert main(score) == 2
    err = capsys.readouterr().err
    assert "test-es.tsv: changed since xeval exported it" in err and len(err.strip().splitlines()) == 1
    es.write_text(original)
    (labels / "udpos" / "test-fr.tsv").write_text((labels / "udpos" / "test-es.tsv").read_text())
    (export / "udpos" / "test-fr.tsv").write_text(original)  # another language's file copied in from elsewhere
    capsys.readouterr()
    assert main(score) == 2
    err = capsys.readouterr().err
    assert "test-fr.tsv: not in" in err and "delete xeval-manifest.json" in err
    (export / "udpos" / "xeval-manifest.json").unlink()  # assembled by hand on purpose: scored unchecked
    capsys.readouterr()
    assert main(score) == 0
    assert sorted(json.loads(capsys.readouterr().out)["udpos"]["f1"]) == ["en", "es", "fr"]
