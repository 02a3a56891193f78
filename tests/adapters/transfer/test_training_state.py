"""A fine-tune's saved state (xeval.adapters.transfer.training_state): a run stopped part-way and started again ends
with the same weights, bit for bit, as one never stopped; a finished one is not trained again; a state that does not
check out is not used."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import BertConfig, BertModel

from xeval.adapters.transfer.dropout_masks import use_masks
from xeval.adapters.transfer.fine_tuning import IGNORE_INDEX, fine_tune
from xeval.adapters.transfer.lazy_rows import LazyRowsAdamW
from xeval.adapters.transfer.recipe import Recipe
from xeval.adapters.transfer.tagging import Tagger
from xeval.adapters.transfer.training_state import TrainingState
from xeval.base import console

VOCAB = 12_000  # above lazy_rows.MIN_ROWS: the embedding is stepped by LazyRowsAdamW, whose row record is saved too


class Stop(Exception):
    """Stands for a killed process."""


class _Tagger(Tagger):
    """A tagger that stops the run at its ``stop_at``-th training pass (a stop mid-epoch, mid-step)."""

    stop_at: int | None = None
    passes = 0

    def forward(self, input_ids, attention_mask, labels=None, **kwargs):
        if labels is not None:
            type(self).passes += 1
            if self.stop_at is not None and type(self).passes >= self.stop_at:
                raise Stop
        return super().forward(input_ids, attention_mask, labels, **kwargs)


def _model(stop_at: int | None = None) -> _Tagger:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=32, attn_implementation="sdpa",
                        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    model = _Tagger(BertModel(config), 3)
    use_masks(model, "sfc64")  # fine-tuning's own dropout masks, seeded per (seed, step, micro-batch)
    _Tagger.stop_at, _Tagger.passes = stop_at, 0
    return model


def _features(n: int = 23) -> list[dict]:
    generator = torch.Generator().manual_seed(3)
    out = []
    for i in range(n):
        length = 4 + i % 9
        ids = torch.randint(5, VOCAB, (length,), generator=generator).tolist()
        labels = [IGNORE_INDEX] + torch.randint(0, 3, (length - 1,), generator=generator).tolist()
        out.append({"input_ids": ids, "attention_mask": [1] * length, "labels": labels})
    return out


# 23 examples in steps of 8: 3 steps an epoch, 4 epochs; English dev every 2 steps and at each epoch end
RECIPE = {"batch_size": 8, "per_device_batch_size": 3, "epochs": 4, "learning_rate": 1e-2, "warmup_steps": 2,
          "eval_every": 2, "pass_tokens": 0}


def _dev_score():
    """A dev score of the weights that peaks mid-run (the dev loss falls from ~1.07 to ~0.71 over the run), so the
    selected weights are an earlier checkpoint's, which the state must carry."""
    dev = _features(5)
    width = max(len(f["input_ids"]) for f in dev)
    batch = {k: torch.tensor([f[k] + [0 if k != "labels" else IGNORE_INDEX] * (width - len(f[k])) for f in dev])
             for k in dev[0]}

    def score(model) -> float:
        model.eval()
        with torch.no_grad():
            return -(float(model(**batch)[0]) - 0.9) ** 2

    return score


def _train(state: TrainingState | None, stop_at: int | None = None, recipe=RECIPE):
    model = _model(stop_at)
    report = fine_tune(model, _features(), Recipe.build(recipe), seed=7, pad_token_id=0, evaluate=_dev_score(),
                       desc="test", state=state)
    return model, report


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _comparable(report) -> dict:
    out = report.to_json()
    out.pop("duration_s")
    return out


@pytest.mark.parametrize("stop_at", [5, 14, 26])  # passes: mid-epoch 1, mid-epoch 2, mid-epoch 3 (3 passes a step)
def test_a_stopped_fine_tune_continues_to_the_same_weights_bit_for_bit(tmp_path, stop_at):
    reference, report = _train(None)
    state = TrainingState(tmp_path, "k" * 64, 7, every_s=0.0)  # save at every step that may be saved
    with pytest.raises(Stop):
        _train(state, stop_at=stop_at)
    assert not [a for a in console.monitor.stack if a.label == "test"]  # the stopped loop's activity ended with it
    saved = json.loads(state.meta_path.read_text())
    assert saved["phase"] == "training" and 0 < saved["step"] < report.steps
    assert saved["step"] % 3 != 0  # an epoch's last step is never saved (its epoch-end selection is still to come)
    resumed, resumed_report = _train(state)
    assert _same(resumed.state_dict(), reference.state_dict())
    assert _comparable(resumed_report) == _comparable(report)
    assert report.best_step not in (None, report.steps)  # selection picked an earlier checkpoint: best weights restored


def test_the_saved_state_holds_the_lazy_optimiser_and_the_best_weights(tmp_path):
    from safetensors.torch import load_file

    state = TrainingState(tmp_path, "k" * 64, 7, every_s=0.0)
    with pytest.raises(Stop):
        _train(state, stop_at=20)
    tensors = load_file(str(state.tensors_path))
    assert state.tensors_path.stat().st_mode & 0o777 == state.meta_path.stat().st_mode & 0o777  # both as readable
    assert tensors["optim.lazy.touched"].dtype == torch.bool and 0 < int(tensors["optim.lazy.touched"].sum()) < VOCAB
    assert any(k.startswith("best.") for k in tensors) and "epoch_order" in tensors


def test_a_finished_fine_tune_is_not_trained_again_until_its_state_is_cleared(tmp_path):
    state = TrainingState(tmp_path, "k" * 64, 7, every_s=0.0)
    trained, report = _train(state)
    assert json.loads(state.meta_path.read_text())["phase"] == "done"
    again, again_report = _train(state, stop_at=1)  # any training pass would raise
    assert _same(again.state_dict(), trained.state_dict()) and again_report == report
    state.clear()
    assert not state.meta_path.exists() and not state.tensors_path.exists()
    with pytest.raises(Stop):
        _train(state, stop_at=1)


def test_a_short_fine_tune_saves_nothing(tmp_path):
    state = TrainingState(tmp_path, "k" * 64, 7)  # every 30 minutes
    _train(state)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["tensors", "hash", "key", "json"])
def test_a_state_that_does_not_check_out_is_not_used(tmp_path, damage, caplog):
    reference, _ = _train(None)
    state = TrainingState(tmp_path, "k" * 64, 7, every_s=0.0)
    with pytest.raises(Stop):
        _train(state, stop_at=14)
    meta = json.loads(state.meta_path.read_text())
    if damage == "tensors":  # a byte flipped on disk
        data = bytearray(state.tensors_path.read_bytes())
        data[-3] ^= 0xFF
        state.tensors_path.write_bytes(bytes(data))
    elif damage == "hash":
        meta["tensors_sha256"] = "0" * 64
        state.meta_path.write_text(json.dumps(meta))
    elif damage == "key":  # another fine-tune's state under this name
        meta["key"] = "j" * 64
        state.meta_path.write_text(json.dumps(meta))
    else:
        state.meta_path.write_text("{not json")
    fresh, _ = _train(state)  # from step 0: still the reference weights
    assert _same(fresh.state_dict(), reference.state_dict())
    assert "training state not used" in caplog.text and str(state.meta_path) in caplog.text


def test_lazy_rows_optimiser_continues_on_the_embedding_group(tmp_path):
    """After load_state_dict (new group dicts), LazyRowsAdamW's group is the one holding the embedding."""
    from xeval.adapters.transfer.fine_tuning import _optimizer
    from xeval.adapters.transfer.training_state import load_optimizer_state, optimizer_state

    model = _model()
    optimizer = _optimizer(model, Recipe.build(RECIPE))
    assert isinstance(optimizer, LazyRowsAdamW)
    tensors, meta = optimizer_state(optimizer)
    load_optimizer_state(optimizer, tensors, json.loads(json.dumps(meta)))
    assert any(p is optimizer.weight for p in optimizer.group["params"])
    assert optimizer.group is next(g for g in optimizer.param_groups if any(p is optimizer.weight for p in g["params"]))
    optimizer.close()


@pytest.mark.slow
def test_a_stopped_run_rerun_gives_the_records_of_a_run_never_stopped(tmp_path, data_root, monkeypatch):
    """``xeval run`` end to end: a UD-POS fine-tune stopped at its 6th training pass, run again, stores the records
    an unstopped run stores (the same F1 in every language) and leaves no training state behind."""
    from tests.helpers import transfer as helpers_transfer
    from xeval.adapters.transfer import training_state
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    monkeypatch.setattr(training_state, "SAVE_EVERY_S", 0.0)

    def records(store: str) -> dict:
        opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["udpos"],
                          langs=["en", "de", "zh"], data=str(data_root), out=str(tmp_path / store),
                          recipe={**helpers_transfer.FAST, "epochs": 2, "eval_every": 2, "pass_tokens": 0})
        return {r.unit.lang: r for r in run(opts, echo=lambda *_: None)}

    reference = records("reference")
    forward, passes = Tagger.forward, []
    stop_at: list[int | None] = [6]

    def counting(self, input_ids, attention_mask, labels=None, **kwargs):
        if labels is not None:
            passes.append(1)
            if len(passes) == stop_at[0]:
                raise Stop
        return forward(self, input_ids, attention_mask, labels, **kwargs)

    monkeypatch.setattr(Tagger, "forward", counting)
    with pytest.raises(Stop):
        records("stopped")
    [saved] = (tmp_path / "stopped").glob("*/udpos/training/*.json")
    meta = json.loads(saved.read_text())
    assert meta["phase"] == "training" and meta["step"] >= 1
    passes.clear()
    stop_at[0] = None
    again = records("stopped")
    assert {lang: r.metrics for lang, r in again.items()} == {lang: r.metrics for lang, r in reference.items()}
    training = again["en"].extra["training"]
    assert training["steps"] == reference["en"].extra["training"]["steps"] == 10
    assert len(passes) == training["passes"] - meta["passes"] > 0  # only the passes after the saved step
    assert list((tmp_path / "stopped").glob("*/udpos/training/*")) == []  # cleared once the units are stored


def test_a_stop_in_the_middle_of_a_save_leaves_the_previous_state_whole(tmp_path, monkeypatch):
    """The tensors go to the file the json does not name, the json last: killed between the two, the earlier
    state is still read (its own tensors, its own hash), and a finished save leaves one tensors file."""
    from xeval.adapters.transfer import training_state

    state = TrainingState(tmp_path, "k" * 64, 7, every_s=0.0)
    with pytest.raises(Stop):
        _train(state, stop_at=14)
    before = json.loads(state.meta_path.read_text())
    assert len(list(tmp_path.glob("*.safetensors"))) == 1
    write_json = training_state.write_json

    def killed(path, obj):
        raise Stop  # the new tensors are on disk, the json that would name them is not

    monkeypatch.setattr(training_state, "write_json", killed)
    with pytest.raises(Stop):
        state.save({"x": torch.zeros(2)}, {"phase": "training"})
    assert len(list(tmp_path.glob("*.safetensors"))) == 2
    monkeypatch.setattr(training_state, "write_json", write_json)
    tensors, meta = state.load()
    assert meta["step"] == before["step"] and "epoch_order" in tensors
    reference, _ = _train(None)
    resumed, _ = _train(state)
    assert _same(resumed.state_dict(), reference.state_dict())
