"""results.json per run and the experiment-tracker sink (issue 26, item 5): every unit with its metrics, the
config, versions and timings, written atomically into --out; --log-to mlflow:DIR offline, never required."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

import xeval
from tests.helpers.transfer import tiny_model
from xeval.cli import main
from xeval.results.store import Store
from xeval.run.results_file import SCHEMA, file_name


def _probe(model, data_root, out, *extra):
    return ["run", "--model", str(model), "--suite", "probes", "--tasks", "tatoeba", "--langs", "de,fr",
            "--data", str(data_root), "--out", str(out), "--layers", "1,2", "--max-eval", "30", "--threads", "1",
            *extra]


def _strict(path):
    """The file as strict JSON (no NaN / Infinity tokens)."""
    def refuse(token):
        raise AssertionError(f"{path}: {token} is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_a_run_writes_results_json_with_every_unit_config_versions_and_timings(data_root, tmp_path, capsys):
    model, out = tiny_model(data_root), tmp_path / "runs"
    assert main(_probe(model, data_root, out)) == 0
    assert f"results: {out / 'results.json'}" in capsys.readouterr().err
    doc = _strict(out / "results.json")
    assert doc["schema"] == SCHEMA == "xeval.results/1"
    assert doc["command"][:3] == ["xeval", "run", "--model"] and doc["run"]["suite"] == "probes"
    assert doc["run"]["layers"] == "1,2" and doc["run"]["max_eval"] == 30 and doc["run"]["seeds"] == [1]
    assert {"xeval", "torch", "transformers"} <= set(doc["versions"]) and "git_commit" in doc
    records = list(Store(out).records())
    assert [m["key"] for m in doc["models"]] == [records[0].unit.model]
    assert doc["models"][0]["hash"] == records[0].model["hash"]
    # every unit of the run, each as its record says, computed now
    assert len(doc["units"]) == len(records) == 8  # 2 languages x 2 layers x (test, the selection split dev)
    for unit in doc["units"]:
        stored = Store._load(out / unit["record"])
        assert unit["metrics"] == stored.metrics and unit["n_examples"] == stored.n_examples == 30
        assert (unit["task"], unit["lang"], unit["split"], unit["layer"]) == \
            (stored.unit.task, stored.unit.lang, stored.unit.split, stored.unit.layer)
        assert unit["headline"] == "accuracy" and unit["computed"] is True and unit["duration_s"] > 0
    assert doc["timings"]["units_computed"] == 8 and doc["timings"]["units_reused"] == 0
    assert doc["timings"]["wall_s"] > 0 and doc["timings"]["computed_s_by_task"]["tatoeba"] > 0
    # the summary: per split and layer, each language's value and their mean; a mean never mixes splits
    by_cell = {(u["split"], u["layer"], u["lang"]): u["metrics"]["accuracy"] for u in doc["units"]}
    assert len(doc["summary"]) == 4
    for entry in doc["summary"]:
        values = [by_cell[(entry["split"], entry["layer"], lang)] for lang in ("de", "fr")]
        assert entry["languages"] == {"de": values[0], "fr": values[1]} and entry["metric"] == "accuracy"
        assert math.isclose(entry["mean"], sum(values) / 2) and entry["seeds"] == [0]
    assert not list(out.glob(".results.json*"))  # atomic: no temporary file left
    documented = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text(encoding="utf-8")
    for key in [*doc, *doc["units"][0], *doc["summary"][0], *doc["timings"], *doc["host"]]:  # the schema page
        assert f'"{key}"' in documented, key
    assert main(_probe(model, data_root, out)) == 0  # a resumed run: the same units, found in the store
    again = _strict(out / "results.json")
    assert again["timings"]["units_reused"] == 8 and not any(u["computed"] for u in again["units"])
    assert [u["metrics"] for u in again["units"]] == [u["metrics"] for u in doc["units"]]


def test_evaluate_with_a_store_writes_it_too_seeds_averaged(data_root, tmp_path):
    store = tmp_path / "runs"
    xeval.evaluate(str(tiny_model(data_root)), suite="xtreme-mini", tasks="pawsx", langs="de", seeds=2,
                   data=data_root, store=store, max_eval=16,
                   recipe={"max_train": 32, "max_dev": 8, "epochs": 1, "batch_size": 16})
    doc = _strict(store / "results.json")
    assert doc["command"] is None and doc["run"]["recipe"]["max_train"] == 32
    (entry,) = [e for e in doc["summary"] if e["task"] == "pawsx"]
    seeds = [u["metrics"]["accuracy"] for u in doc["units"] if u["task"] == "pawsx"]
    assert entry["seeds"] == [1, 2] and len(seeds) == 2
    assert math.isclose(entry["languages"]["de"], sum(seeds) / 2) and entry["mean"] == entry["languages"]["de"]
    assert all(u["duration_s"] > 0 for u in doc["units"])  # fine-tuning and scoring, per unit


def test_a_shard_writes_its_own_file():
    assert file_name(None) == "results.json" and file_name((0, 1)) == "results.json"
    assert file_name((2, 4)) == "results.shard-2-of-4.json"


def test_log_to_mlflow_keeps_a_local_store_offline(data_root, tmp_path, capsys):
    pytest.importorskip("mlflow", reason="the mlflow extra (mlflow-skinny) is not installed")
    from mlflow.tracking import MlflowClient

    model, out, store = tiny_model(data_root), tmp_path / "runs", tmp_path / "mlruns"
    assert main(_probe(model, data_root, out, "--log-to", f"mlflow:{store}")) == 0
    assert f"logged to MLflow {store.as_uri()} (experiment xeval): run " in capsys.readouterr().err
    doc = _strict(out / "results.json")
    client = MlflowClient(tracking_uri=store.as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("xeval").experiment_id])
    metrics = run.data.metrics
    for entry in doc["summary"]:
        for lang, value in entry["languages"].items():
            assert metrics[f"tatoeba/L{entry['layer']}/{entry['split']}/{lang}/accuracy"] == pytest.approx(value)
        assert metrics[f"tatoeba/L{entry['layer']}/{entry['split']}/avg/accuracy"] == pytest.approx(entry["mean"])
    assert run.data.params["run.suite"] == "probes" and run.data.params["run.layers"] == "1,2"
    assert run.data.tags["xeval.models"] == doc["models"][0]["key"] and run.info.status == "FINISHED"
    (artifact,) = client.list_artifacts(run.info.run_id)
    assert artifact.path == "results.json"


def test_a_tracker_that_fails_is_one_line_after_the_tables(data_root, tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow", reason="the mlflow extra (mlflow-skinny) is not installed")
    from xeval.run.trackers import MlflowSink

    def unreachable(self, doc, path):
        raise ConnectionError("API request to endpoint /api/2.0/mlflow/runs/create failed\nretries exhausted")

    monkeypatch.setattr(MlflowSink, "_log", unreachable)
    out = tmp_path / "runs"
    assert main(_probe(tiny_model(data_root), data_root, out, "--log-to", f"mlflow:{tmp_path / 'm'}")) == 2
    captured = capsys.readouterr()
    assert "accuracy by layer" in captured.out and (out / "results.json").is_file()  # everything else done
    assert captured.err.strip().splitlines()[-1] == (
        f"xeval run: error: --log-to: MLflow {(tmp_path / 'm').as_uri()} (experiment xeval): API request to endpoint "
        "/api/2.0/mlflow/runs/create failed (results.json is written all the same)")


def test_a_missing_tracker_extra_is_one_line_before_anything_loads(tmp_path, monkeypatch, capfd):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    args = ["run", "--model", str(tmp_path / "absent"), "--suite", "probes", "--out", str(tmp_path / "r")]
    assert main([*args, "--log-to", "mlflow:mlruns"]) == 2
    err = capfd.readouterr().err.strip()
    assert err == ("xeval run: error: --log-to mlflow: needs the optional package mlflow-skinny "
                   "(pip install 'xeval[mlflow]')")  # before the model is looked for
    assert main([*args, "--log-to", "wandb:offline"]) == 2
    assert "unknown tracker 'wandb'; expected one of mlflow" in capfd.readouterr().err
    assert not (tmp_path / "r").exists()
