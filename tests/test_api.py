"""The Python API (issue 17, item 4): xeval.evaluate -> DataFrame (hub id / path / in-memory pair), store=None
writes nothing, xeval.load_results reads a store back as the same frame."""

import os

import pandas as pd
import pytest

import xeval
from tests.helpers.transfer import tiny_model

PROBE = {"suite": "probes", "tasks": "tatoeba", "langs": ["de", "fr"], "layers": [0, 2], "max_eval": 30}


def _files(folder):
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_evaluate_a_path_writes_nothing_and_returns_a_row_per_unit(data_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame = xeval.evaluate(str(tiny_model(data_root)), data=data_root, **PROBE)
    assert _files(tmp_path) == []  # store=None: no runs/ folder, nothing anywhere under the working directory
    assert list(frame.columns[:10]) == ["model", "task", "lang", "split", "setting", "layer", "seed", "mode",
                                      "compat", "n_examples"]
    assert (frame["compat"] == "none").all()
    test = frame[frame["split"] == "test"]
    assert sorted(zip(test["lang"], test["layer"])) == [("de", 0), ("de", 2), ("fr", 0), ("fr", 2)]
    assert set(frame["split"]) == {"test", "dev"}  # a sweep also runs FLORES-200 dev, the split that chooses its layer
    assert (frame["n_examples"] == 30).all() and frame["accuracy_en_xx"].between(0, 100).all()
    assert (frame["accuracy"] == frame["accuracy_en_xx"]).all()  # XTREME's official direction


def test_an_in_memory_pair_scores_like_its_folder_and_a_store_reads_back(data_root, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    folder = tiny_model(data_root)
    from_path = xeval.evaluate(str(folder), data=data_root, store=tmp_path / "runs", **PROBE)
    pair = (AutoModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder))
    in_memory = xeval.evaluate(pair, data=data_root, **PROBE)
    metrics = ["accuracy_en_xx", "accuracy_xx_en"]
    key = ["lang", "layer"]
    left = from_path.sort_values(key).reset_index(drop=True)
    right = in_memory.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(left[key + metrics], right[key + metrics])
    assert right["model"].str.startswith("tiny@").all()  # named after the model's name_or_path
    loaded = xeval.load_results(tmp_path / "runs").sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(loaded, left)


def test_evaluate_keeps_freed_memory_as_the_command_line_does_and_records_it(data_root, tmp_path, monkeypatch):
    import json

    from xeval.base import allocator

    calls = []
    monkeypatch.setattr(allocator, "retain_freed_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(allocator, "_state", "a state only this test sets")
    xeval.evaluate(str(tiny_model(data_root)), data=data_root, store=tmp_path / "runs", **PROBE)
    assert calls == [1]  # once, before the run (a notebook user gets the CLI's fast fine-tuning loop)
    host = json.loads((tmp_path / "runs" / "results.json").read_text())["host"]
    assert host["allocator"] == "a state only this test sets"


def test_compat_is_an_argument_recorded_in_its_own_column(data_root):
    from xeval.base.errors import UserError

    frame = xeval.evaluate(str(tiny_model(data_root)), data=data_root, compat="xtreme",
                           **{**PROBE, "langs": ["de"], "layers": [2]})
    assert len(frame) and (frame["compat"] == "xtreme").all()
    with pytest.raises(UserError, match="--compat: expected one of"):
        xeval.evaluate(str(tiny_model(data_root)), data=data_root, compat="xtrem", **PROBE)


def test_bad_model_arguments_are_user_errors(data_root):
    from xeval.base.errors import UserError
    from xeval.models.encoder import Encoder

    with pytest.raises(UserError, match=r"\(model, tokenizer\) pair"):
        xeval.evaluate(object(), data=data_root, **PROBE)
    from transformers import AutoModel

    module = AutoModel.from_pretrained(tiny_model(data_root))
    with pytest.raises(UserError, match="found a BertModel"):  # was 'File name too long' on the module's repr
        Encoder(module)


@pytest.mark.slow
def test_evaluate_fine_tuning_in_memory_store(data_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame = xeval.evaluate(str(tiny_model(data_root)), suite="xtreme-mini", tasks=["xnli"], langs="en,de",
                           data=data_root, seeds=[1, 2], max_eval=8,
                           recipe={"max_train": 32, "max_dev": 8, "epochs": 1, "batch_size": 16})
    assert _files(tmp_path) == [] and not any(os.scandir(tmp_path))
    assert sorted(zip(frame["lang"], frame["seed"])) == [("de", 1), ("de", 2), ("en", 1), ("en", 2)]
    assert frame["layer"].isna().all() and frame["accuracy"].between(0, 100).all()


def test_evaluate_shows_progress_sets_threads_and_uses_a_cache_in_memory(data_root, tmp_path, monkeypatch, capfd):
    import logging

    from xeval.base import console

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XEVAL_HEARTBEAT", "0.01")
    monkeypatch.delenv("XEVAL_CACHE", raising=False)
    saved = console.state()  # as in a fresh interpreter: xeval's logger not configured (an earlier test's CLI did)
    console.restore(([], logging.NOTSET, True, {"enabled": True}, False, 30.0))
    try:
        _evaluate_verbose_threads_cache(data_root, tmp_path, monkeypatch, capfd)
    finally:
        console.restore(saved)


def _evaluate_verbose_threads_cache(data_root, tmp_path, monkeypatch, capfd):
    import re
    import time

    import torch

    from xeval.base.console import log
    from xeval.base.errors import UserError

    model, threads, handlers = str(tiny_model(data_root)), torch.get_num_threads(), list(log.handlers)
    capfd.readouterr()
    quiet = xeval.evaluate(model, data=data_root, **PROBE)
    assert capfd.readouterr().err == ""  # default: xeval's logging as it was (Python's: warnings only)
    cache = tmp_path / "enc"
    from xeval.base import heartbeat

    update = heartbeat.Activity.update

    def slow_update(self, n=1):  # every step outlasts the 0.01 s interval: a beat is due however fast the machine
        time.sleep(0.05)
        update(self, n)

    monkeypatch.setattr(heartbeat.Activity, "update", slow_update)
    first = xeval.evaluate(model, data=data_root, verbose=True, threads=1, cache=cache, **PROBE)
    monkeypatch.setattr(heartbeat.Activity, "update", update)
    err = capfd.readouterr().err
    # the run's log on stderr, timestamped (pytest's capture is no terminal), the heartbeat among it
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d xeval run: tiny@\w+ on probes .* memory \(nothing written\); "
                     rf"encoding cache {re.escape(str(cache))}$", err, re.M), err
    assert re.search(r"^\S+ \S+ heartbeat: xeval run: \d/2 work items", err, re.M), err
    assert torch.get_num_threads() == threads and log.handlers == handlers  # what the call changed is restored
    entries = sorted(cache.rglob("*.npy"))
    checks = sorted(cache.rglob("*.npy.meta"))  # each entry's check (shape, dtype, digest) beside it
    assert entries and [p.with_suffix("") for p in checks] == entries
    assert _files(tmp_path) == sorted(entries + checks)  # store=None: the cache is the only thing written
    again = xeval.evaluate(model, data=data_root, verbose=True, cache=cache, **PROBE)
    assert re.search(rf"encoding cache: {len(entries)} layer entries reused, 0 computed", capfd.readouterr().err)
    metrics = ["lang", "split", "layer", "accuracy_en_xx", "accuracy_xx_en"]
    pd.testing.assert_frame_equal(quiet[metrics], first[metrics])
    pd.testing.assert_frame_equal(first[metrics], again[metrics])  # read from the cache: the same numbers
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    xeval.evaluate(model, data=data_root, cache=True, **{**PROBE, "langs": ["de"], "layers": [2]})
    assert list((tmp_path / "xdg" / "xeval" / "encodings").rglob("*.npy"))  # True: the user's cache folder
    with pytest.raises(UserError, match="threads: expected an integer >= 1, found 0"):
        xeval.evaluate(model, data=data_root, threads=0, **PROBE)
