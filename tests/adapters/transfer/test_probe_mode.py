"""--mode probe end to end (frozen encoder + linear heads): every task type, resume, the encoding cache answering a
rerun, and the random-init control."""

from __future__ import annotations

import pytest

from tests.helpers import transfer as helpers_transfer


def _run(tmp_path, data_root, **kw):
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    recipe = {"max_train": 40, "max_dev": 10, "max_eval": 8}
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini",
                      tasks=["udpos", "xnli", "xquad"], langs=["en", "de"], out=str(tmp_path / "runs"),
                      recipe=recipe, max_eval=8, mode="probe", **kw)
    return run(opts, echo=lambda *_: None)


@pytest.mark.slow
def test_probe_mode_every_task_type_resumes_and_reuses_the_cache(tmp_path, data_root, monkeypatch):
    from xeval.adapters.transfer import readouts
    from xeval.report.console_tables import format_tables

    records = _run(tmp_path, data_root)
    by_task = {}
    for r in records:
        by_task.setdefault(r.unit.task, set()).add((r.unit.lang, r.unit.layer))
        assert r.unit.mode == "probe" and r.unit.seed == 0 and r.config["mode"] == "probe"
        assert r.metrics and all(0.0 <= v <= 100.0 for v in r.metrics.values())
    assert set(by_task) == {"udpos", "xnli", "xquad"}
    assert all(v == {(lang, k) for lang in ("en", "de") for k in (0, 1, 2)} for v in by_task.values())
    pos = next(r for r in records if r.unit.task == "udpos")
    assert pos.config["selection"]["on"] == "en/dev" and pos.config["head"]["C"] in (0.001, 0.01, 0.1, 1.0)
    nli = next(r for r in records if r.unit.task == "xnli")
    assert nli.config["selection"]["on"] == "en/train held out"  # xtreme-mini reports en/dev: not selected on
    assert nli.config["train"]["n_examples"] == 32
    from xeval.results.layers import chosen_layers

    chosen = chosen_layers(records)
    assert {task for _, task, _ in chosen} == {"udpos", "xnli", "xquad"}
    table = format_tables(records)
    assert "probe: frozen encoder + linear head" in table
    assert table.count("udpos (probe") == 1  # one table per task: the chosen layer only

    # the store answers a rerun; with the store gone, the cache answers it (no tagging / pair re-encoding)
    again = _run(tmp_path, data_root)
    assert sorted(r.metrics["f1" if "f1" in r.metrics else "accuracy"] for r in again) == \
        sorted(r.metrics["f1" if "f1" in r.metrics else "accuracy"] for r in records)
    # a changed fine-tuning recipe (learning rate, epochs, batch) is not the probe's: the store answers it too
    from xeval.run.options import RunOptions
    from xeval.run.runner import RunSummary, run

    summary = RunSummary()
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini",
                      tasks=["udpos", "xnli", "xquad"], langs=["en", "de"], out=str(tmp_path / "runs"),
                      recipe={"max_train": 40, "max_dev": 10, "max_eval": 8, "learning_rate": 1e-3, "epochs": 7,
                              "batch_size": 4}, max_eval=8, mode="probe")
    relabelled = run(opts, echo=lambda *_: None, summary=summary)
    assert summary.computed == 0 and summary.reused == len(records)
    assert all("learning_rate" not in r.config["recipe"] for r in relabelled)
    import shutil

    for task in ("udpos", "xnli"):
        shutil.rmtree(next((tmp_path / "runs").glob("tiny_*")) / task)
    monkeypatch.setattr(readouts, "hidden_rows", lambda *a, **k: pytest.fail("re-encoded a cached input"))
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["udpos", "xnli"],
                      langs=["en", "de"], out=str(tmp_path / "runs"),
                      recipe={"max_train": 40, "max_dev": 10, "max_eval": 8}, max_eval=8, mode="probe")
    rerun = run(opts, echo=lambda *_: None)
    old = {(r.unit.task, r.unit.lang, r.unit.layer): r.metrics for r in records if r.unit.task != "xquad"}
    assert {(r.unit.task, r.unit.lang, r.unit.layer): r.metrics for r in rerun} == old


@pytest.mark.slow
def test_probe_mode_with_the_random_init_control(tmp_path, data_root):
    from xeval.report.console_tables import format_tables
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["xnli"],
                      langs=["en", "de"], out=str(tmp_path / "runs"), recipe={"max_train": 40, "max_eval": 8},
                      max_eval=8, mode="probe", control="random-init", layers="all",
                      export_predictions=str(tmp_path / "sub"))
    records = run(opts, echo=lambda *_: None)
    exported = (tmp_path / "sub" / "layer-1" / "xnli" / "test-de.tsv").read_text().splitlines()
    assert len(exported) == 8 and set(exported) <= {"contradiction", "entailment", "neutral"}  # the model's only
    models = {r.unit.model.split("@")[0] for r in records}
    assert models == {"tiny", "tiny-random-init"}
    assert "(random init)" in format_tables(records)


@pytest.mark.slow
def test_probe_mlqa_answers_with_the_heads_xquad_fitted_and_the_numbers_of_its_own(tmp_path, data_root,
                                                                                  monkeypatch):
    """xtreme-mini's MLQA trains on XQuAD's questions (train_as): in probe mode it reuses XQuAD's span heads and their
    selection answers (one fit, not two), says so, and scores exactly as a run of MLQA alone."""
    from xeval.adapters.transfer import probe_mode
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    fits: list[int] = []
    fit = probe_mode.fit_span_head
    monkeypatch.setattr(probe_mode, "fit_span_head", lambda *a, **k: (fits.append(1), fit(*a, **k))[1])

    def probe(tasks, store):
        opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=tasks,
                          langs=["en", "de"], out=str(tmp_path / store), recipe={"max_train": 40, "max_eval": 8},
                          max_eval=8, mode="probe")
        return {(r.unit.task, r.unit.lang, r.unit.layer): r for r in run(opts, echo=lambda *_: None)}

    shared = probe(["xquad", "mlqa"], "shared")
    layers = {k[2] for k in shared}
    assert len(fits) == len(layers)  # XQuAD's heads only
    assert all(r.extra["trained_for"] == "xquad" for k, r in shared.items() if k[0] == "mlqa")
    assert not any("trained_for" in r.extra for k, r in shared.items() if k[0] == "xquad")
    fits.clear()
    alone = probe(["mlqa"], "alone")
    assert len(fits) == len(layers)  # fitted for itself
    for key, record in alone.items():
        assert record.metrics == shared[key].metrics
        assert record.extra["probe_selection"] == shared[key].extra["probe_selection"]
        assert "trained_for" not in record.extra


@pytest.mark.slow
def test_probe_mode_bf16_encoding_is_its_own_unit_and_cache_entry(tmp_path, data_root, monkeypatch):
    """--set precision=bf16 in probe mode runs the frozen encoder under bf16 autocast: recorded in the probe's recipe,
    a unit of its own beside the float32 one (one store holds both), and never answered by float32 cache entries."""
    from xeval.adapters.transfer import readouts
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    precisions: list[str] = []
    hidden = readouts.hidden_rows
    monkeypatch.setattr(readouts, "hidden_rows",
                        lambda *a, **k: (precisions.append(k.get("precision")), hidden(*a, **k))[1])
    autocast = []
    real_autocast = readouts.torch.autocast
    monkeypatch.setattr(readouts.torch, "autocast", lambda *a, **k: (autocast.append(k.get("enabled")),
                                                                      real_autocast(*a, **k))[1])

    def probe(**recipe):
        opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["xnli"],
                          langs=["en", "de"], out=str(tmp_path / "runs"), recipe={"max_train": 40, "max_eval": 8,
                                                                                  **recipe},
                          max_eval=8, mode="probe", layers="1")
        return run(opts, echo=lambda *_: None)

    fp32 = probe()
    assert precisions and set(precisions) == {"fp32"} and not any(autocast)
    assert all("precision" not in r.config["recipe"] for r in fp32)  # float32 units keep their old identity
    precisions.clear()
    bf16 = probe(precision="bf16")
    assert precisions and set(precisions) == {"bf16"} and any(autocast)  # encoded again, under autocast
    assert all(r.config["recipe"]["precision"] == "bf16" for r in bf16)
    assert {r.unit.config_hash for r in bf16}.isdisjoint({r.unit.config_hash for r in fp32})
