"""--mode probe (frozen encoder + linear heads) and the encoding cache it shares with the alignment probes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import transfer as helpers_transfer


def _separable(n: int, seed: int):
    """Three classes in 8 dimensions, each a tight cloud around its own corner: linearly separable by margin 4."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=n)
    centres = np.eye(3, 8) * 4.0
    return (centres[labels] + rng.normal(scale=0.3, size=(n, 8))).astype(np.float32), labels


def test_linearly_separable_classes_are_learnt_to_100_percent():
    from xeval.adapters.transfer.probe_heads import C_GRID, fit_classifier

    x, y = _separable(300, seed=1)
    xt, yt = _separable(200, seed=2)
    seen = []

    def select(head):
        seen.append(head.C)
        return float((head.predict(xt) == yt).mean())

    head = fit_classifier(x, y, select)
    assert seen == list(C_GRID)  # every C is tried on the selection set, in order
    assert (head.predict(x) == y).all() and (head.predict(xt) == yt).all()
    assert head.describe()["solver"] == "lbfgs" and head.describe()["C"] == head.C


def test_selection_keeps_the_best_c():
    """The C with the best selection score wins; ties keep the first (the most regularised)."""
    from xeval.adapters.transfer.probe_heads import fit_classifier

    x, y = _separable(60, seed=3)
    scores = iter([0.5, 0.9, 0.9, 0.9])
    assert fit_classifier(x, y, lambda head: next(scores)).C == 0.01


def test_span_head_finds_marked_positions():
    """Token features carrying a 'start here' and an 'end here' direction: the start/end head learns both."""
    from xeval.adapters.transfer.probe_heads import fit_span_head

    rng = np.random.default_rng(0)
    lengths = [int(n) for n in rng.integers(6, 12, size=40)]
    starts = [int(rng.integers(1, n - 2)) for n in lengths]
    ends = [s + 1 for s in starts]
    rows = []
    for n, s, e in zip(lengths, starts, ends):
        window = rng.normal(scale=0.1, size=(n, 4))
        window[s, 0] += 3.0
        window[e, 1] += 3.0
        rows.append(window)
    head = fit_span_head(np.concatenate(rows).astype(np.float32), lengths, starts, ends)
    import torch

    for window, s, e in zip(rows, starts, ends):
        logits = head.logits(torch.from_numpy(window.astype(np.float32)))
        assert int(logits[:, 0].argmax()) == s and int(logits[:, 1].argmax()) == e


def test_span_loss_by_hand_and_its_written_out_gradient_equals_autograd():
    """Zero weights: every position of a window is equally likely, so the loss is the mean of log(window length)
    (log 3 and log 5 here). Any weights: loss and gradient equal autograd's through a padded -inf grid."""
    import math

    import torch
    import torch.nn.functional as F

    from xeval.adapters.transfer.probe_heads import SpanLoss

    lengths, starts, ends = [3, 5], [1, 0], [2, 4]
    x = torch.from_numpy(np.random.default_rng(4).normal(size=(8, 6)).astype(np.float32))
    objective = SpanLoss(x, lengths, starts, ends)
    loss, grad_w, grad_b = objective(torch.zeros(6, 2), torch.zeros(2))
    assert float(loss) == pytest.approx((math.log(3) + math.log(5)) / 2, abs=1e-6)

    weight = torch.from_numpy(np.random.default_rng(5).normal(size=(6, 2)).astype(np.float32)).requires_grad_()
    bias = torch.tensor([0.3, -0.2], requires_grad=True)
    grid = torch.full((2, 5, 2), float("-inf"))
    grid = grid.index_put((torch.tensor([0, 0, 0, 1, 1, 1, 1, 1]), torch.tensor([0, 1, 2, 0, 1, 2, 3, 4])),
                          x @ weight + bias)
    reference = (F.cross_entropy(grid[..., 0], torch.tensor(starts)) + F.cross_entropy(grid[..., 1], torch.tensor(ends))) / 2
    reference.backward()
    loss, grad_w, grad_b = objective(weight.detach(), bias.detach())
    assert float(loss) == pytest.approx(float(reference.detach()), abs=1e-6)
    assert torch.allclose(grad_w, weight.grad, atol=1e-6) and torch.allclose(grad_b, bias.grad, atol=1e-6)


# ------------------------------------------------------------------------------------------ the encoding cache


def test_encoding_cache_hit_on_rerun_and_invalidated_by_model_or_data(tiny_encoder, tmp_path, monkeypatch):
    from xeval.adapters import RunContext
    from xeval.adapters.transfer import probe_mode
    from xeval.models.encoder import Encoder
    from xeval.models.encoding_cache import EncodingCache

    cache = EncodingCache(tmp_path / "cache")
    ctx = RunContext(encoder=tiny_encoder, data=None, store=None, cache=cache)
    ids = tiny_encoder.tokenizer(["the dog sleeps", "a cat"])["input_ids"]
    feats = [{"input_ids": i, "attention_mask": [1] * len(i)} for i in ids]
    first = probe_mode.cached_rows(ctx, feats, [0, 2], "mean", np.float32)
    assert (cache.hits, cache.misses) == (0, 2) and len(list((tmp_path / "cache").rglob("*.npy"))) == 2

    real = probe_mode.hidden_rows
    monkeypatch.setattr(probe_mode, "hidden_rows", lambda *a, **k: pytest.fail("re-encoded a cached input"))
    again = probe_mode.cached_rows(ctx, feats, [2, 0], "mean", np.float32)
    assert np.array_equal(again, first[::-1]) and cache.hits == 2
    calls = []
    monkeypatch.setattr(probe_mode, "hidden_rows", lambda *a, **k: calls.append(a[2]) or real(*a, **k))

    probe_mode.cached_rows(ctx, feats[:1], [0], "mean", np.float32)  # other data
    twin = RunContext(encoder=Encoder.random_init(tiny_encoder, seed=7), data=None, store=None, cache=cache)
    other_model = probe_mode.cached_rows(twin, feats, [0, 2], "mean", np.float32)  # other model
    probe_mode.cached_rows(ctx, feats, [0], "cls", np.float32)  # other readout
    assert calls == [[0], [0, 2], [0]]
    assert not np.array_equal(other_model, first)
    assert np.array_equal(probe_mode.cached_rows(ctx, feats, [0, 2], "mean", np.float32), first)  # still stored

    off = EncodingCache(None)  # --no-cache: computes, writes nothing
    probe_mode.cached_rows(RunContext(encoder=tiny_encoder, data=None, store=None, cache=off), feats, [0], "mean",
                           np.float32)
    assert off.misses == 1 and len(list((tmp_path / "cache").rglob("*.npy"))) == 6


# ------------------------------------------------------------------------------------------------ end to end


def _run(tmp_path, data_root, **kw):
    from xeval.run.runner import RunOptions, run

    recipe = {"max_train": 40, "max_dev": 10, "max_eval": 8}
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini",
                      tasks=["udpos", "xnli", "xquad"], langs=["en", "de"], out=str(tmp_path / "runs"),
                      recipe=recipe, options={"max_eval": 8}, mode="probe", **kw)
    return run(opts, echo=lambda *_: None)


@pytest.mark.slow
def test_probe_mode_every_task_type_resumes_and_reuses_the_cache(tmp_path, data_root, monkeypatch):
    from xeval.adapters.transfer import probe_mode
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
    from xeval.run.runner import RunOptions, RunSummary, run

    summary = RunSummary()
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini",
                      tasks=["udpos", "xnli", "xquad"], langs=["en", "de"], out=str(tmp_path / "runs"),
                      recipe={"max_train": 40, "max_dev": 10, "max_eval": 8, "learning_rate": 1e-3, "epochs": 7,
                              "batch_size": 4}, options={"max_eval": 8}, mode="probe")
    relabelled = run(opts, echo=lambda *_: None, summary=summary)
    assert summary.computed == 0 and summary.reused == len(records)
    assert all("learning_rate" not in r.config["recipe"] for r in relabelled)
    import shutil

    for task in ("udpos", "xnli"):
        shutil.rmtree(next((tmp_path / "runs").glob("tiny_*")) / task)
    monkeypatch.setattr(probe_mode, "hidden_rows", lambda *a, **k: pytest.fail("re-encoded a cached input"))
    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["udpos", "xnli"],
                      langs=["en", "de"], out=str(tmp_path / "runs"),
                      recipe={"max_train": 40, "max_dev": 10, "max_eval": 8}, options={"max_eval": 8}, mode="probe")
    rerun = run(opts, echo=lambda *_: None)
    old = {(r.unit.task, r.unit.lang, r.unit.layer): r.metrics for r in records if r.unit.task != "xquad"}
    assert {(r.unit.task, r.unit.lang, r.unit.layer): r.metrics for r in rerun} == old


@pytest.mark.slow
def test_probe_mode_with_the_random_init_control(tmp_path, data_root):
    from xeval.report.console_tables import format_tables
    from xeval.run.runner import RunOptions, run

    opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["xnli"],
                      langs=["en", "de"], out=str(tmp_path / "runs"), recipe={"max_train": 40, "max_eval": 8},
                      options={"max_eval": 8}, mode="probe", control="random-init", layers="all",
                      export_predictions=str(tmp_path / "sub"))
    records = run(opts, echo=lambda *_: None)
    exported = (tmp_path / "sub" / "layer-1" / "xnli" / "test-de.tsv").read_text().splitlines()
    assert len(exported) == 8 and set(exported) <= {"contradiction", "entailment", "neutral"}  # the model's only
    models = {r.unit.model.split("@")[0] for r in records}
    assert models == {"tiny", "tiny-random-init"}
    assert "(random init)" in format_tables(records)


def test_cache_key_ignores_the_tokenizers_truncation_state(tiny_encoder):
    """A call with truncation=True changes the fast tokenizer's serialised state; the cache key must not follow."""
    from xeval.models.encoder import Encoder

    fresh = Encoder(tiny_encoder.spec)
    before = fresh.cache_key
    fresh._cache_key = None
    fresh.tokenizer(["a b c d e f"], truncation=True, max_length=3)
    assert fresh.cache_key == before
