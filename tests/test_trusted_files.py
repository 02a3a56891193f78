"""Nothing trusted that was not checked (issue 24): files and settings that xeval wrote itself, or that sit beside its
own files -- the encoding cache, per-example outcomes, baselines, shards, exports, label files, pre-training configs
and states -- are verified before a number is built on them. Each case: one line on stderr naming the file or flag and
what was expected, exit 2, nothing written; or the right number; never exit 0 with a number the input made wrong.

The one-line helpers are those of ``tests/test_bad_inputs.py`` (the earlier passes' cases stay there)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import transfer as helpers_transfer
from tests.test_bad_inputs import one_error, snapshot
from xeval import cli

# ------------------------------------------------------------------------------------------ the encoding cache


def test_cache_entries_are_checked_when_read(tmp_path, caplog):
    """Unit level: each way an entry can go bad is recomputed (the compute function runs again for that layer), with
    one warning naming the entry; a good entry is read back exactly."""
    from xeval.models.encoding_cache import EncodingCache

    cache = EncodingCache(tmp_path / "cache")
    truth = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5) / 7  # [layers, rows, H]
    calls = []

    def compute(todo):
        calls.append(list(todo))
        return truth[todo]

    assert np.array_equal(cache.layers("m" * 40, {"s": 1}, [0, 1, 2], compute), truth)
    assert np.array_equal(cache.layers("m" * 40, {"s": 1}, [0, 1, 2], compute), truth) and calls == [[0, 1, 2]]
    entry = cache.path("m" * 40, {"s": 1}, 1)
    poisons = {
        "zeros of the same shape": lambda: np.save(entry, np.zeros((4, 5), np.float32)),
        "NaN": lambda: np.save(entry, np.full((4, 5), np.nan, np.float32)),
        "another layer's array": lambda: np.save(entry, truth[2]),
        "truncated": lambda: entry.write_bytes(entry.read_bytes()[:60]),
        "wrong shape": lambda: np.save(entry, np.ones((2, 5), np.float32)),
        "another dtype": lambda: np.save(entry, truth[1].astype(np.float64)),
        "no checksum sidecar": lambda: entry.with_name(entry.name + ".meta").unlink(),
        "a pickle": lambda: np.save(entry, np.array([{"a": 1}], dtype=object), allow_pickle=True),
    }
    for how, poison in poisons.items():
        poison()
        calls.clear()
        caplog.clear()
        with caplog.at_level("WARNING", logger="xeval"):
            got = cache.layers("m" * 40, {"s": 1}, [0, 1, 2], compute)
        assert np.array_equal(got, truth), how
        assert calls == [[1]], how  # only the bad layer is encoded again
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1 and str(entry) in warnings[0], (how, warnings)
        assert np.array_equal(np.load(entry), truth[1]), how  # rewritten
    assert cache.layers("m" * 40, {"s": 1}, [1], compute).shape == (1, 4, 5)


def _cache_run(tiny: Path, data_root: Path, out: Path, *extra) -> list[str]:
    return ["run", "--model", str(tiny), "--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de",
            "--data", str(data_root), "--out", str(out), "--layers", "all", "--max-eval", "60", "--threads", "1",
            *extra]


def _scores(out: Path) -> dict:
    from xeval.results.store import Store

    return {(r.unit.split, r.unit.layer): r.metrics for r in Store(out).records()}


@pytest.mark.parametrize("how", ["zeros", "nan", "truncated", "wrong shape"])
def test_a_poisoned_cache_never_changes_a_printed_number(data_root, tmp_path, capfd, how):
    tiny = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    assert cli.main(_cache_run(tiny, data_root, out)) == 0
    capfd.readouterr()
    before = _scores(out)
    entries = sorted((out / "cache").rglob("*.npy"))
    assert entries
    for entry in entries:  # every entry poisoned the same way
        array = np.load(entry)
        if how == "zeros":
            np.save(entry, np.zeros_like(array))
        elif how == "nan":
            np.save(entry, np.full_like(array, np.nan))
        elif how == "truncated":
            entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
        else:
            np.save(entry, array[:-1])
    assert cli.main(["run", "-q", *_cache_run(tiny, data_root, out, "--overwrite")[1:]]) == 0
    _, err = capfd.readouterr()
    assert "Traceback" not in err
    warnings = [line for line in err.splitlines() if "encoding cache" in line and "recomputed" in line]
    assert warnings and str(entries[0]) in err, err  # named
    assert _scores(out) == before  # the same numbers as from a clean encoding


def test_xeval_cache_a_file_fails_before_any_encoding(data_root, tmp_path, capfd, monkeypatch):
    tiny = helpers_transfer.tiny_model(data_root)
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("XEVAL_CACHE", str(tmp_path / "a-file"))
    before = snapshot(tmp_path)
    error = one_error(capfd, _cache_run(tiny, data_root, tmp_path / "runs"))
    assert str(tmp_path / "a-file") in error and "XEVAL_CACHE" in error and "folder" in error, error
    assert snapshot(tmp_path) == before and not (tmp_path / "runs").exists()
    monkeypatch.setenv("XEVAL_CACHE", str(tmp_path / "a-file" / "below"))
    error = one_error(capfd, _cache_run(tiny, data_root, tmp_path / "runs"))
    assert "which is a file" in error, error


# ------------------------------------------------------------------------------------------ the gate: like with like


def _rec(task="xnli", lang="de", value=50.0, seed=1, n=200, split="test", dtype="float32", metrics=None, **unit):
    from dataclasses import replace

    from tests.helpers.report_records import rec

    r = rec("m@0123456789ab", task, lang, metrics or {"accuracy": value}, seed=seed, split=split)
    return replace(r, unit=replace(r.unit, **unit), n_examples=n, model={"dtype": dtype})


def _gate(capfd, tmp_path, base, cur, *flags, status=1, baseline_flags=()):
    from tests.helpers.report_records import write_run

    write_run(tmp_path / "base", base)
    write_run(tmp_path / "cur", cur)
    assert cli.main(["report", str(tmp_path / "base"), "--format", "baseline", "--out", str(tmp_path / "b.json"),
                     *baseline_flags]) == 0
    got = cli.main(["compare", "--baseline", str(tmp_path / "b.json"), "--current", str(tmp_path / "cur"), *flags])
    out, err = capfd.readouterr()
    assert got == status and "Traceback" not in err, out + err
    return out


@pytest.mark.parametrize("case", ["3 examples against 200", "1 seed against 3", "bfloat16 against float32"])
def test_the_gate_fails_a_number_obtained_otherwise(tmp_path, capfd, case):
    base = [_rec(seed=s) for s in (1, 2, 3)] if case == "1 seed against 3" else [_rec()]
    cur = {"3 examples against 200": [_rec(n=3, value=60.0)], "1 seed against 3": [_rec(value=55.0)],
           "bfloat16 against float32": [_rec(dtype="bfloat16")]}[case]
    out = _gate(capfd, tmp_path, base, cur)
    assert out.startswith("FAIL: 0 regressed, 0 missing, 0 improved, 0 within tolerance, 0 new, 1 unlike"), out
    why = {"3 examples against 200": "3 examples (baseline 200)", "1 seed against 3": "1 seed(s) (baseline 3)",
           "bfloat16 against float32": "dtype bfloat16 (baseline float32)"}[case]
    assert "UNLIKE | xnli | de | test |  | accuracy" in out and why in out, out
    what = {"3 examples against 200": "examples", "1 seed against 3": "seeds", "bfloat16 against float32": "dtype"}
    out = _gate(capfd, tmp_path, base, cur, "--allow-different", what[case], status=0)
    assert out.startswith("PASS") and f"--allow-different {what[case]}" in out, out


def test_a_tolerance_in_examples_allows_one_flipped_example_of_each_number(tmp_path, capfd):
    base = [_rec(value=50.0, n=200), _rec(lang="fr", value=50.0, n=50)]
    one_flip = [_rec(value=49.5, n=200), _rec(lang="fr", value=48.0, n=50)]  # one of 200, one of 50
    assert _gate(capfd, tmp_path, base, one_flip).startswith("FAIL: 2 regressed")
    out = _gate(capfd, tmp_path, base, one_flip, "--tolerance-examples", "1", status=0)
    assert out.startswith("PASS: 0 regressed, 0 missing, 0 improved, 2 within tolerance") and "1 example(s)" in out
    two_flips = [_rec(value=49.0, n=200), _rec(lang="fr", value=48.0, n=50)]
    assert _gate(capfd, tmp_path, base, two_flips, "--tolerance-examples", "1").startswith("FAIL: 1 regressed")
    error = one_error(capfd, ["compare", "--baseline", str(tmp_path / "b.json"), "--current", str(tmp_path / "cur"),
                              "--tolerance-examples", "nan"])
    assert "--tolerance-examples" in error and "finite" in error, error


@pytest.mark.parametrize("case", ["split", "probe mode", "compat"])
def test_the_gate_says_where_a_missing_number_went(tmp_path, capfd, case):
    cur = {"split": _rec(split="dev"), "probe mode": _rec(mode="probe", seed=0), "compat": _rec()}[case]
    if case == "compat":
        from dataclasses import replace

        cur = replace(cur, config={"compat": "xtreme"})
    out = _gate(capfd, tmp_path, [_rec()], [cur])
    assert out.startswith("FAIL: 0 regressed, 1 missing"), out
    where = {"split": "current has it on split dev", "probe mode": "current has it in setting probe",
             "compat": "current has it in setting zero-shot, compat xtreme"}[case]
    assert where in out, out


def test_a_misspelt_metric_tolerance_is_an_error(tmp_path, capfd):
    from tests.helpers.report_records import write_run

    write_run(tmp_path / "base", [_rec()])
    for flag, expected in (("acuracy=1", "'acuracy' is no metric of the baseline (did you mean 'accuracy'?)"),
                           ("xnl:accuracy=1", "'xnl:accuracy' is no metric"),
                           ):
        error = one_error(capfd, ["compare", "--baseline", str(tmp_path / "base"), "--current",
                                  str(tmp_path / "base"), "--metric-tolerances", flag])
        assert expected in error, error
    error = one_error(capfd, ["compare", "--baseline", str(tmp_path / "base"), "--current", str(tmp_path / "base"),
                              "--allow-different", "sedes"])
    assert "--allow-different: expected some of examples, seeds, dtype, found sedes" in error, error


def test_a_headline_baseline_holds_one_metric_per_task(tmp_path, capfd):
    metrics = {"aer": 40.0, "precision": 60.0, "recall": 50.0, "f1": 55.0, "ot_emd_aer": 41.0}
    base = [_rec("alignment", "de-en", metrics=metrics, layer=k, seed=0) for k in range(4)]
    base += [_rec("tatoeba", "de", metrics={"accuracy": 30.0, "accuracy_xx_en": 28.0, "accuracy_en_xx": 30.0},
                  layer=k, seed=0) for k in range(4)]
    worse = [_rec("alignment", "de-en", metrics={**metrics, "precision": 10.0}, layer=k, seed=0) for k in range(4)]
    worse += base[4:]
    out = _gate(capfd, tmp_path, base, worse, status=0, baseline_flags=["--baseline-metrics", "headline"])
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["metrics"] == "headline" and len(doc["entries"]) == 8  # 2 tasks x 4 layers, not 4 x (5 + 4)
    assert {(e["task"], e["metric"]) for e in doc["entries"]} == {("alignment", "aer"), ("tatoeba", "accuracy")}
    assert out.startswith("PASS: 0 regressed, 0 missing, 0 improved, 8 within tolerance, 0 new"), out
    # the full baseline still sees the precision drop
    shutil.rmtree(tmp_path / "base")
    shutil.rmtree(tmp_path / "cur")
    out = _gate(capfd, tmp_path, base, worse, status=1)
    assert out.startswith("FAIL: 4 regressed"), out


# ------------------------------------------------------------------------------------------ per-example outcomes


def _outcome_store(tmp_path: Path) -> tuple[Path, dict]:
    """Two models' pawsx/de records (8 examples; accuracy 87.5 and 12.5) with their outcomes; returns the store
    and {model: record file}."""
    from xeval.results.outcomes import Outcomes
    from xeval.results.store import Record, Store, Unit

    store = Store(tmp_path / "runs")
    paths = {}
    for model, right in (("m@1", 7), ("n@2", 1)):
        unit = Unit(model, "pawsx", "de", "test", seed=1, config_hash="abc")
        scores = [100.0] * right + [0.0] * (8 - right)
        outcomes = Outcomes([str(i) for i in range(8)], [1] * 8, [1] * right + [0] * (8 - right))
        outcomes.add("accuracy", "mean", score=scores)
        paths[model] = store.put(Record(unit, {"accuracy": 100.0 * right / 8}, 8,
                                        provenance={"timestamp": "2026-01-01T00:00:00"}), outcomes)
    return tmp_path / "runs", paths


def _poison_outcomes(paths: dict, how: str) -> Path:
    import gzip

    from xeval.results.outcomes import Outcomes, outcomes_path, write_outcomes
    from xeval.results.store import Store

    target = outcomes_path(paths["m@1"])
    if how == "another record's file":
        shutil.copyfile(outcomes_path(paths["n@2"]), target)
    elif how == "edited":
        body = json.loads(gzip.open(target).read())
        body["metrics"]["accuracy"]["stats"]["score"] = [0] * 8
        target.write_bytes(gzip.compress(json.dumps(body).encode()))
    elif how == "an older file without identity":
        body = json.loads(gzip.open(target).read())
        del body["record"], body["sha256"]
        target.write_bytes(gzip.compress(json.dumps(body).encode()))
    else:  # bound to the record, but its statistics do not give the record's number
        wrong = Outcomes([str(i) for i in range(8)], [1] * 8, [1] * 8).add("accuracy", "mean", score=[0.0] * 8)
        write_outcomes(paths["m@1"], wrong, Store._load(paths["m@1"]))
    return target


OUTCOME_CASES = ["another record's file", "edited", "an older file without identity", "bound but not reproducing"]


@pytest.mark.parametrize("how", OUTCOME_CASES)
def test_outcomes_not_bound_to_their_record_give_no_interval(tmp_path, capfd, how):
    import csv
    import io

    runs, paths = _outcome_store(tmp_path)
    assert cli.main(["report", str(runs), "--table", "ci", "--format", "csv"]) == 0
    good = {r["model"]: r for r in csv.DictReader(io.StringIO(capfd.readouterr().out))}
    assert good["m"]["95% CI low"] != ""  # a real interval before
    target = _poison_outcomes(paths, how)
    assert cli.main(["report", str(runs), "--table", "ci", "--format", "md"]) == 0
    out, err = capfd.readouterr()
    row = next(line for line in out.splitlines() if line.startswith("| m "))
    cells = [c.strip() for c in row.split("|")[1:-1]]  # model, lang, score, low, high, seeds, examples
    assert cells[2] == "87.5" and cells[3:5] == ["", ""], row  # the score, no interval
    assert "not their record's" in out and str(target) in err, (out, err)


@pytest.mark.parametrize("how", OUTCOME_CASES)
def test_significance_never_tests_on_unbound_outcomes(tmp_path, capfd, how):
    runs, paths = _outcome_store(tmp_path)
    store_a, store_b = tmp_path / "a", tmp_path / "b"
    for model, folder in (("m@1", store_a), ("n@2", store_b)):
        (folder / model.replace("@", "_")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(paths[model].parent.parent, folder / paths[model].parent.parent.name)
    assert cli.main(["compare", "--significance", str(store_a), str(store_b)]) == 0
    capfd.readouterr()
    paths = {"m@1": next(store_a.rglob("*.s1~abc.json")), "n@2": next(store_b.rglob("*.s1~abc.json"))}
    target = _poison_outcomes(paths, how)
    error = one_error(capfd, ["compare", "--significance", str(store_a), str(store_b)])
    assert "outcomes not the record's" in error and str(target) in error, error


# ------------------------------------------------------------------------------------------ shards


def _shard(tiny, data_root, out, shard, *extra):
    argv = ["run", "-q", "--model", str(tiny), "--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de,fr,es",
            "--data", str(data_root), "--out", str(out), "--layers", "0,2", "--threads", "1", "--no-cache", *extra]
    return cli.main(argv + (["--shard", shard] if shard else []))


@pytest.mark.parametrize("case", ["one shard of two", "0/2 then 2/3", "other --max-eval per shard"])
def test_report_refuses_shards_that_are_not_one_partition_of_one_run(data_root, tmp_path, capfd, case):
    tiny = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    if case == "one shard of two":
        assert _shard(tiny, data_root, out, "0/2", "--max-eval", "30") == 0
    elif case == "0/2 then 2/3":
        assert _shard(tiny, data_root, out, "0/2", "--max-eval", "30") == 0
        assert _shard(tiny, data_root, out, "2/3", "--max-eval", "30") == 0
    else:
        assert _shard(tiny, data_root, out, "0/2", "--max-eval", "30") == 0
        assert _shard(tiny, data_root, out, "1/2", "--max-eval", "20") == 0
    capfd.readouterr()
    for verb in (["report", str(out)], ["compare", "--baseline", str(out), "--current", str(out)]):
        error = one_error(capfd, verb)
        assert "is incomplete" in error and re.search(r"missing tatoeba \((de|es|fr)\)", error), error
    if case == "0/2 then 2/3":
        assert "1 of 3 work items" in error and "cut into 2 and into 3 parts" in error, error
    if case == "other --max-eval per shard":
        assert re.search(r"other settings \(max_eval (30 -> 20|20 -> 30)", error), error
    assert cli.main(["report", str(out), "--partial", "--table", "languages", "--format", "csv"]) == 0
    _, err = capfd.readouterr()
    assert "note:" in err and "is incomplete" in err


def test_shards_that_cover_the_run_are_joined(data_root, tmp_path, capfd):
    tiny = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    assert _shard(tiny, data_root, out, "0/2", "--max-eval", "30") == 0
    assert _shard(tiny, data_root, out, None, "--max-eval", "30") == 0  # the whole run, reusing shard 0's units
    assert cli.main(["report", str(out), "--table", "languages", "--format", "csv"]) == 0
    assert _shard(tiny, data_root, tmp_path / "other", "1/3", "--max-eval", "30") == 0
    for shard in ("0/3", "2/3"):
        assert _shard(tiny, data_root, tmp_path / "other", shard, "--max-eval", "30") == 0
    assert cli.main(["report", str(tmp_path / "other"), "--table", "languages", "--format", "csv"]) == 0
    assert "incomplete" not in capfd.readouterr().err


# ------------------------------------------------------------------------------------------ exports


@pytest.mark.parametrize("labels", ["same", "inside", "outside"])
def test_labels_and_predictions_never_share_an_export_folder(tmp_path, capfd, monkeypatch, labels):
    from tests.conftest import one_card_world
    from tests.test_bad_inputs import CARD, LABELS

    tasks, data = one_card_world(tmp_path, monkeypatch)
    (tasks / "tiny.yaml").write_text(CARD.format(name="tiny", type="pair_classification", format="pairs",
                                                 metric="accuracy", labels=f"labels: {json.dumps(LABELS['xnli'])}",
                                                 files="xnli_xtreme/xnli-{lang}.tsv", train=""))
    (data / "xnli_xtreme" / "xnli-de.tsv").write_text("a\tb\tneutral\n")
    export = tmp_path / "export"
    other = {"same": export, "inside": export / "gold", "outside": tmp_path}[labels]
    before = snapshot(tmp_path)
    error = one_error(capfd, ["run", "--model", str(tmp_path / "no-model-needed"), "--suite", "t", "--data", str(data),
                              "--out", str(tmp_path / "runs"), "--export-predictions", str(export),
                              "--export-labels", str(other)])
    assert "--export-predictions" in error and "--export-labels" in error and "overwrite" in error, error
    assert snapshot(tmp_path) == before


def _merge_many(folder: str, worker: int) -> None:
    from xeval.submission.writer import record_exports

    for i in range(25):
        name = f"test-w{worker}-{i}.tsv"
        (Path(folder) / name).write_text(f"{worker} {i}\n")
        record_exports(folder, {name: {"model": "m@1", "run_hash": "r", "seed": 1}})


def test_concurrent_exports_keep_every_manifest_entry(tmp_path):
    import multiprocessing

    folder = tmp_path / "xnli"
    folder.mkdir()
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_merge_many, args=(str(folder), w)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
        assert p.exitcode == 0
    from xeval.submission.writer import read_manifest

    assert len(read_manifest(folder)) == 100  # no writer's entries lost between another's read and write


def test_a_manifest_entry_without_its_checksum_is_unlisted(tmp_path, capfd):
    from xeval.submission.writer import MANIFEST, record_exports

    preds, labels = tmp_path / "preds" / "xnli", tmp_path / "labels" / "xnli"
    labels.mkdir(parents=True)
    preds.mkdir(parents=True)
    (labels / "test-de.tsv").write_text("neutral\nentailment\n")
    (preds / "test-de.tsv").write_text("neutral\nentailment\n")
    record_exports(preds, {"test-de.tsv": {"model": "m@1", "run_hash": "r", "seed": 1}})
    argv = ["score", "--predictions", str(tmp_path / "preds"), "--labels", str(tmp_path / "labels"), "--partial"]
    assert cli.main(argv) == 0
    capfd.readouterr()
    manifest = json.loads((preds / MANIFEST).read_text())
    del manifest["files"]["test-de.tsv"]["sha256"]
    (preds / MANIFEST).write_text(json.dumps(manifest))
    (preds / "test-de.tsv").write_text("neutral\nneutral\n")  # edited: with no checksum nothing would notice
    error = one_error(capfd, argv)
    assert str(preds / "test-de.tsv") in error and "without its SHA-256" in error, error


# ------------------------------------------------------------------------------------------ xeval score: label lines


def _score_folders(tmp_path: Path, task: str, labels: str, predictions: str) -> list[str]:
    for role, text in (("labels", labels), ("preds", predictions)):
        (tmp_path / role / task).mkdir(parents=True, exist_ok=True)
        (tmp_path / role / task / "test-de.tsv").write_text(text, encoding="utf-8")
    return ["score", "--predictions", str(tmp_path / "preds"), "--labels", str(tmp_path / "labels"), "--partial",
            "--out", "-"]


@pytest.mark.parametrize("case", ["space-separated token tag", "three tab-separated fields", "a tab in a label"])
def test_label_lines_without_the_expected_columns_are_errors(tmp_path, capfd, case):
    task, labels, predictions, line = {
        "space-separated token tag": ("panx", "Berlin B-LOC\nist O\n\n", "B-LOC\nO\n\n", 1),
        "three tab-separated fields": ("panx", "Berlin\tB-LOC\n\nist\tNN\tO\n\n", "B-LOC\n\nO\n\n", 3),
        "a tab in a label": ("xnli", "neutral\ta b\tentailment\n", "neutral\n", 1),
    }[case]
    argv = _score_folders(tmp_path, task, labels, predictions)
    error = one_error(capfd, argv)
    assert f"{tmp_path / 'labels' / task / 'test-de.tsv'}:{line}: expected one" in error, error
    if case.startswith("space"):
        assert "space-separated columns?" in error, error


def test_a_line_separator_inside_a_token_is_not_a_line_break(tmp_path, capfd):
    argv = _score_folders(tmp_path, "panx", "Ber\u2028lin\tB-LOC\nist\tO\n\nParis\u0085\tB-LOC\n\n",
                          "B-LOC\nO\n\nB-LOC\n\n")
    assert cli.main(argv) == 0
    out = capfd.readouterr().out
    assert json.loads(out)["panx"]["f1"] == {"de": 100.0}


# ------------------------------------------------------------------------------------------ pre-training configs


def _own_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine" / "my.yaml"  # outside the presets folder, no sizes.yaml beside it
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_a_duplicated_yaml_key_is_an_error_naming_its_line(tmp_path, capfd):
    path = _own_config(tmp_path, "name: mine\nsize: micro\ntrain:\n  lr: 1e-3\nobjectives:\n  mlm: {}\n"
                                 "train:\n  steps: 5\n")
    error = one_error(capfd, ["pretrain", "--config", str(path), "--out", str(tmp_path / "o")])
    assert f"{path}:7: not valid YAML (duplicate key 'train'" in error, error
    assert not (tmp_path / "o").exists()


BAD_VALUES = {
    "a negative objective weight": ("objectives.mlm.weight=-1", "objectives.mlm.weight must be a number >= 0, found -1"),
    "masking probability above 1": ("objectives.mlm.mask_prob=1.5", "mask_prob must be a number in (0, 1], found 1.5"),
    "masking probability 0": ("objectives.mlm.mask_prob=0", "mask_prob must be a number in (0, 1], found 0"),
    "train.steps true": ("train.steps=true", "train.steps must be an integer, found True"),
    "an inexact integer": ("train.steps=16.9", "train.steps must be an integer, found 16.9"),
    "dropout 1": ("model.hidden_dropout_prob=1", "model.hidden_dropout_prob must be a number in [0, 1), found 1"),
    "beta2 of 1": ("train.beta2=1", "train.beta2 must be a number in [0, 1), found 1"),
    "a temperature of 0": ("objectives.xlco.temperature=0", "temperature must be a number > 0, found 0"),
    "a boolean that is a number": ("objectives.tlm.position_reset=2", "position_reset must be true or false"),
    "a string width": ("model.hidden_size=wide", "model.hidden_size must be a number, got 'wide'"),
    "an unknown cleaning option": ("data.clean.min_leters=2", "unknown key(s) ['min_leters'] in data.clean"),
    "a similarity above 1": ("data.clean.near_identical=1.5", "data.clean.near_identical must be a number in [0, 1]"),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_every_numeric_option_has_a_type_and_a_range(case):
    from xeval.base.errors import ConfigError
    from xeval.engine.config import load_config

    override, expected = BAD_VALUES[case]
    preset = "infoxlm" if "xlco" in override else "xlm"
    with pytest.raises(ConfigError) as err:
        load_config(preset, "micro", [override])
    assert expected in str(err.value), str(err.value)


def test_numbers_read_as_written(tmp_path):
    from xeval.engine.config import load_config

    path = _own_config(tmp_path, "name: mine\nsize: micro\ntrain:\n  steps: 010\n  warmup: 1e1\n  lr: 5e-4\n"
                                 "  max_seconds: 1e3\nobjectives:\n  mlm: {mask_prob: 15e-2}\n")
    cfg = load_config(str(path))  # a config of one's own resolves the shipped sizes ("micro")
    assert cfg.size == "micro" and cfg.model["hidden_size"] == 64
    assert cfg.train.steps == 10 and isinstance(cfg.train.steps, int)  # not octal 8
    assert cfg.train.warmup == 10 and isinstance(cfg.train.warmup, int)  # 1e1 is exactly 10
    assert cfg.train.lr == 0.0005 and cfg.train.max_seconds == 1000.0  # 5e-4 and 1e3 both numbers
    assert cfg.objectives["mlm"]["mask_prob"] == 0.15
    assert load_config("mlm", "micro", ["train.steps=1e3"]).train.steps == 1000


def test_an_unknown_size_of_ones_own_config_says_where_sizes_come_from(tmp_path):
    from xeval.base.errors import ConfigError
    from xeval.engine.config import load_config

    path = _own_config(tmp_path, "name: mine\nsize: huge\nobjectives:\n  mlm: {}\n")
    with pytest.raises(ConfigError, match=r"unknown size 'huge'; expected one of \[.*'micro'.*\] \(the shipped"):
        load_config(str(path))


# ------------------------------------------------------------------------------------------ pretrain --resume


@pytest.mark.parametrize("change", ["a corpus file rewritten", "a corpus file added"])
def test_resume_refuses_a_changed_corpus(tmp_path, capfd, change):
    import gzip

    from tests.helpers.engine import make_data_root
    from tests.test_bad_inputs import pretrain_yaml

    root = make_data_root(tmp_path / "data", n_pairs=80, n_mono=80)
    config = pretrain_yaml(tmp_path / "run.yaml", root, tokenizer={"vocab_size": 400}, train={"stop_after": 1})
    out = tmp_path / "ckpt"
    assert cli.main(["pretrain", "--config", str(config), "--out", str(out)]) == 0
    capfd.readouterr()
    state = json.loads((out / "state" / "step-0000001" / "state.json").read_text())
    assert "monolingual/debian_fortunes/de.txt.gz" in state["corpus"]  # the identities of what it read
    if change == "a corpus file rewritten":
        path = root / "monolingual" / "debian_fortunes" / "de.txt.gz"
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write("ein ganz anderer Text\n" * 80)
        named = "monolingual/debian_fortunes/de.txt.gz changed"
    else:
        with gzip.open(root / "monolingual" / "debian_fortunes" / "fr.txt.gz", "wt", encoding="utf-8") as handle:
            handle.write("un texte\n" * 80)
        named = "monolingual/debian_fortunes/fr.txt.gz added"
    before = snapshot(out)
    error = one_error(capfd, ["pretrain", "--config", str(config), "--out", str(out), "--resume",
                              "--set", "train.stop_after=null"])
    assert "--resume with corpora that differ" in error and named in error, error
    assert snapshot(out) == before


# ------------------------------------------------------------------------------------------ the Python API


@pytest.mark.parametrize("kwargs, named", [
    ({"max_eval": True}, "max_eval"), ({"max_eval": 16.9}, "max_eval"), ({"max_eval": 0}, "max_eval"),
    ({"seeds": True}, "seeds"), ({"seeds": [1, 2.5]}, "seeds"), ({"layers": 2.5}, "layers"),
    ({"layers": [0, True]}, "layers"), ({"overwrite": "no"}, "overwrite"), ({"tasks": 3}, "tasks"),
    ({"recipe": {"max_train": 16.9}}, "max_train"), ({"recipe": {"epochs": True}}, "epochs"),
])
def test_api_arguments_are_typed_as_the_command_line_types_them(tmp_path, kwargs, named):
    import xeval
    from xeval.base.errors import UserError

    with pytest.raises(UserError, match=named):
        xeval.evaluate(str(tmp_path / "no-model-needed"), **{"suite": "xtreme-mini", "tasks": ["xnli"], **kwargs})
