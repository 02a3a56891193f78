"""Result identity: a rerun with other settings computes new records beside the old ones and says so; the same
settings resume; ``--name`` makes two settings of one model two rows; a store never lets a stray copy stand in
for a record; stores written before config hashes are read with a notice; the model key covers the tokenizer."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers.transfer import tiny_model
from xeval import cli
from xeval.base.errors import DataError
from xeval.results.store import Store

TATOEBA = ["--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de,fr", "--layers", "2", "--max-eval", "60"]
XNLI = ["--suite", "xtreme-mini", "--tasks", "xnli", "--langs", "en,de", "--max-train", "32", "--max-eval", "40",
        "--max-dev", "16", "--epochs", "1", "--batch-size", "16"]


def _run(model, data_root, out, *extra, capsys=None) -> tuple[int, str]:
    rc = cli.main(["run", "--model", str(model), "--data", str(data_root), "--out", str(out), "--device", "cpu",
                   "--threads", "1", *extra])
    text = capsys.readouterr() if capsys is not None else None
    return rc, (text.out + text.err) if text is not None else ""


def _metrics(out) -> dict:
    return {(r.unit.task, r.unit.lang, r.unit.config_hash): r.metrics for r in Store(out).records()}


@pytest.fixture(scope="module")
def model(data_root):
    return tiny_model(data_root)


def test_probe_option_change_recomputes_beside_the_old_records(model, data_root, tmp_path, capsys):
    out = tmp_path / "runs"
    assert _run(model, data_root, out, *TATOEBA, capsys=capsys)[0] == 0
    mean = _metrics(out)
    assert len(mean) == 2 and all(h for _, _, h in mean)

    rc, text = _run(model, data_root, out, *TATOEBA, "--set", "pooling=cls", capsys=capsys)
    assert rc == 0 and "2 units recomputed: config changed" in text
    both = _metrics(out)
    assert len(both) == 4  # the mean-pooled records stay, the CLS-pooled ones sit beside them
    cls = {k: v for k, v in both.items() if k not in mean}
    assert {k[:2] for k in cls} == {("tatoeba", "de"), ("tatoeba", "fr")}
    assert [v for k, v in sorted(cls.items())] != [v for k, v in sorted(mean.items())]  # other numbers
    records = [r for r in Store(out).records() if r.unit.config_hash in {k[2] for k in cls}]
    assert {r.config["pooling"] for r in records} == {"cls"}

    # the same settings again: resumed, nothing recomputed, no new file
    files = sorted(p.name for p in out.rglob("*.json"))
    rc, text = _run(model, data_root, out, *TATOEBA, "--set", "pooling=cls", capsys=capsys)
    assert rc == 0 and "recomputed" not in text
    assert sorted(p.name for p in out.rglob("*.json")) == files


@pytest.mark.slow
def test_recipe_change_recomputes_and_name_gives_two_rows(model, data_root, tmp_path, capsys):
    out = tmp_path / "runs"
    assert _run(model, data_root, out, *XNLI, "--name", "lr-a", capsys=capsys)[0] == 0
    first = _metrics(out)
    rc, text = _run(model, data_root, out, *XNLI, "--name", "lr-a", "--learning-rate", "1e-3", capsys=capsys)
    assert rc == 0 and "2 units recomputed: config changed" in text
    rc, text = _run(model, data_root, out, *XNLI, "--name", "lr-a", "--max-train", "16", capsys=capsys)
    assert rc == 0 and "2 units recomputed: config changed" in text
    assert len(_metrics(out)) == 6 and set(first) < set(_metrics(out))

    # two labelled settings of one model: two rows of the report, each with its own numbers
    assert _run(model, data_root, out, *XNLI, "--name", "lr-b", "--learning-rate", "1e-3", capsys=capsys)[0] == 0
    models = {r.unit.model.split("@")[0] for r in Store(out).records()}
    assert models == {"lr-a", "lr-b"}
    b = [r for r in Store(out).records() if r.unit.model.startswith("lr-b")]
    assert {r.model["name"] for r in b} == {"lr-b"} and {r.config["recipe"]["learning_rate"] for r in b} == {1e-3}
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == 0
    table = capsys.readouterr().out.split("## XNLI")[1]
    assert [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| lr-")] == ["lr-a", "lr-b"]


def test_report_says_which_of_two_configs_it_shows(model, data_root, tmp_path, capsys):
    out = tmp_path / "runs"
    _run(model, data_root, out, *TATOEBA, capsys=capsys)
    _run(model, data_root, out, *TATOEBA, "--set", "include_special=false", capsys=capsys)
    assert cli.main(["report", str(out)]) == 0
    text = capsys.readouterr().err
    assert "2 cell(s) hold records of several configs; the newest of each is shown" in text
    hashes = {r.unit.config_hash for r in Store(out).records() if r.unit.lang == "de"}  # the example cell
    assert len(hashes) == 2 and all(f"config {h}" in text for h in hashes)  # the one shown and the one left out


def test_a_stray_copy_of_a_record_is_an_error_naming_both(model, data_root, tmp_path, capsys):
    out = tmp_path / "runs"
    _run(model, data_root, out, *TATOEBA, capsys=capsys)
    record = next(out.rglob("de.test*.json"))
    stray = record.with_name("de.test.s0.old.json")
    shutil.copy(record, stray)
    with pytest.raises(DataError, match="holds the same result unit as"):
        list(Store(out).records())
    assert cli.main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(stray) in err and str(record) in err and len(err.strip().splitlines()) == 1


def test_records_without_a_config_hash_are_read_with_a_notice_and_recomputed(model, data_root, tmp_path, capsys):
    out = tmp_path / "runs"
    _run(model, data_root, out, *TATOEBA, capsys=capsys)
    for path in list(out.rglob("*~*.json")):  # what an older xeval wrote: no hash in the name or the unit
        obj = json.loads(path.read_text())
        del obj["unit"]["config_hash"]
        path.with_name(path.name.split("~")[0] + ".json").write_text(json.dumps(obj))
        path.unlink()
    old = list(Store(out).records())
    assert len(old) == 2 and all(r.unit.config_hash is None for r in old)
    assert cli.main(["report", str(out)]) == 0
    assert "2 records without a config hash (written by an older xeval) read as before" in capsys.readouterr().err
    rc, text = _run(model, data_root, out, *TATOEBA, capsys=capsys)
    assert rc == 0 and "2 units recomputed: stored without a config hash" in text
    assert len(list(out.glob("*/*/*.json"))) == 4  # the records (the run summary results.json beside them)


def test_model_key_covers_the_tokenizer_files(model, tmp_path):
    from xeval.models.encoder import Encoder

    copy = tmp_path / "same-weights"
    shutil.copytree(model, copy)
    config = json.loads((copy / "tokenizer_config.json").read_text())
    config["do_lower_case"] = not config.get("do_lower_case", False)
    (copy / "tokenizer_config.json").write_text(json.dumps(config))
    a, b = Encoder(model), Encoder(copy)
    assert a.weights_hash != b.weights_hash
    (copy / "README.md").write_text("notes change no number")
    assert Encoder(copy).weights_hash == b.weights_hash


# ------------------------------------------------------------------ options checked before any model loads

MISSING_MODEL = "/nonexistent/model"  # never reached: each error below comes before the model would load


@pytest.mark.parametrize("extra, expected", [
    (["--suite", "xtreme-mini", "--tasks", "tatoeba", "--set", "poolin=cls"],
     "--set poolin: unknown option (did you mean 'pooling'?)"),
    (["--suite", "xtreme-mini", "--tasks", "xnli", "--set", "warmup_ratoi=0.1"],
     "--set warmup_ratoi: unknown option (did you mean 'warmup_ratio'"),
    (["--suite", "xtreme-mini", "--tasks", "tatoeba", "--set", "pooling=max"], "pooling must be 'mean', 'cls' or 'model'"),
    (["--suite", "xtreme-mini", "--tasks", "xnil"], "has no task xnil (did you mean 'xnli'?)"),
    (["--suite", "xtreme-mini", "--tasks", "xnli", "--langs", "en,dee"], "--langs dee: no selected task"),
    (["--suite", "xtrme"], "unknown suite 'xtrme' (did you mean 'xtreme'"),
])
def test_bad_options_fail_before_loading_with_the_closest_names(extra, expected, data_root, tmp_path, capfd):
    rc = cli.main(["run", "--model", MISSING_MODEL, "--data", str(data_root), "--out", str(tmp_path / "runs"),
                   *extra])
    err = capfd.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and expected in err, err
    assert MISSING_MODEL not in err and not (tmp_path / "runs").exists()


def test_one_record_per_cell_never_drops_one_without_a_word(monkeypatch):
    import dataclasses

    from tests.helpers.report_records import rec
    from xeval.report import frame

    said = []
    monkeypatch.setattr(frame.log, "warning", said.append)
    old = rec("m@1", "xnli", "de", {"accuracy": 60.0})
    old.provenance = {"timestamp": "2026-01-01T00:00:00.000+00:00"}
    new = dataclasses.replace(old, unit=dataclasses.replace(old.unit, config_hash="fedcba987654"),
                              metrics={"accuracy": 70.0}, provenance={"timestamp": "2026-01-02T00:00:00.000+00:00"})
    other = rec("m@1", "xnli", "fr", {"accuracy": 50.0})
    # the newer config is shown whatever the order, and the one left out is named
    for given in ([old, new, other], [new, old, other]):
        said.clear()
        kept = frame.one_per_cell(given)
        assert sorted((r.unit.lang, r.metrics["accuracy"]) for r in kept) == [("de", 70.0), ("fr", 50.0)]
        assert len(said) == 1 and "config fedcba987654" in said[0] and f"over config {old.unit.config_hash}" in said[0]
    # one run listed twice: counted once, silently; the same unit with other numbers: said
    said.clear()
    assert frame.one_per_cell([old, old]) == [old] and not said
    assert len(frame.one_per_cell([old, dataclasses.replace(old, metrics={"accuracy": 1.0})])) == 1
    assert "same config but other numbers" in said[0]


def test_an_option_no_selected_task_reads_is_said(model, data_root, tmp_path, capsys):
    rc, text = _run(model, data_root, tmp_path / "runs", *TATOEBA, "--set", "warmup_ratio=0.1", "--max-train", "9",
                    capsys=capsys)
    assert rc == 0 and "--set warmup_ratio: none of the selected tasks (tatoeba) reads this option" in text
    assert "max_train" not in text  # a run-wide size applies to the tasks that read it, silently
