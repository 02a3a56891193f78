"""AdamW over the touched rows of the input embedding only (xeval.adapters.transfer.lazy_rows): the same weights as
dense fused AdamW, bit for bit, and not used where skipping a row would change it."""

from __future__ import annotations

import pytest
import torch
from torch import nn


class _Tagger(nn.Module):
    """An embedding of 12,000 rows (above lazy_rows.MIN_ROWS), a layer norm and a linear head."""

    def __init__(self, tie: bool = False, hidden_use: bool = False):
        super().__init__()
        self.embed = nn.Embedding(12_000, 16, padding_idx=0)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 12_000 if tie else 5)
        if tie:
            self.head.weight = self.embed.weight
        self.hidden_use = hidden_use  # the head also reads embedding rows 11,995-11,999, which no input looks up

    def forward(self, ids, labels):
        logits = self.head(self.norm(self.embed(ids)))
        if self.hidden_use:
            logits = logits + nn.functional.linear(self.norm(self.embed(ids)), self.embed.weight[-5:])
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def _train(lazy: bool, steps: int = 30, hidden_use: bool = False, lr: float = 5e-2, weight_decay: float = 0.0,
           raise_lr_at: int | None = None) -> tuple[dict, torch.optim.Optimizer]:
    from xeval.adapters.transfer.fine_tuning import _optimizer, linear_schedule
    from xeval.adapters.transfer.recipe import Recipe

    torch.manual_seed(0)
    model = _Tagger(hidden_use=hidden_use)
    recipe = Recipe(learning_rate=lr, warmup_steps=3, weight_decay=weight_decay)
    optimizer = _optimizer(model, recipe, lazy_rows=lazy)
    scheduler = linear_schedule(optimizer, 3, steps)
    data = torch.Generator().manual_seed(1)
    for step in range(steps):
        if step == raise_lr_at:  # a learning rate 100x higher from the next step on
            scheduler.base_lrs = [100 * base for base in scheduler.base_lrs]
        # ids 1..300 from the start; ids 5,000..5,050 only from step 10 on (rows that wake up late), 0 is padding
        high = 300 if step < 10 else 5_050
        ids = torch.randint(1, high, (4, 7), generator=data)
        ids[ids.ge(300) & ids.lt(5_000)] = 0
        labels = torch.randint(0, 5, (4, 7), generator=data)
        model(ids, labels).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():  # an evaluation pass: its ids are not stepped
            model(torch.full((1, 3), 11_999), torch.zeros((1, 3), dtype=torch.long))
    return {k: v.clone() for k, v in model.state_dict().items()}, optimizer


def test_the_same_weights_bit_for_bit_as_dense_fused_adamw():
    from xeval.adapters.transfer.lazy_rows import LazyRowsAdamW

    dense, dense_opt = _train(lazy=False)
    lazy, lazy_opt = _train(lazy=True)
    assert type(dense_opt) is torch.optim.AdamW and isinstance(lazy_opt, LazyRowsAdamW)
    for name in dense:
        assert torch.equal(dense[name], lazy[name]), name
    touched = lazy_opt.touched.nonzero().squeeze(1)
    assert touched.ge(5_000).any() and touched.lt(300).sum() > 150  # the late rows too
    assert 11_999 not in touched  # looked up by the evaluation pass only: no gradient, no step
    assert not (touched.ge(300) & touched.lt(5_000)).any()  # never looked up
    assert len(touched) < 400  # a few hundred of 12,000 rows stepped
    # the moments too: zero outside the touched rows, the dense optimiser's inside
    for key in ("exp_avg", "exp_avg_sq"):
        assert torch.equal(dense_opt.state[dense_opt.param_groups[0]["params"][0]][key],
                           lazy_opt.state[lazy_opt.weight][key])
    lazy_opt.close()


def test_a_use_of_the_weight_the_hook_cannot_see_makes_it_step_every_row():
    """A head that reads embedding rows directly (no lookup) gives them a gradient: caught on the first step, and
    from then on every row is stepped, as dense AdamW does: the same weights bit for bit."""
    dense, _ = _train(lazy=False, hidden_use=True)
    lazy, lazy_opt = _train(lazy=True, hidden_use=True)
    assert lazy_opt.dense
    for name in dense:
        assert torch.equal(dense[name], lazy[name]), name
    _, plain = _train(lazy=True)
    assert not plain.dense


def test_weight_decay_below_float32_resolution_is_skipped_exactly():
    """XTREME's QA recipe decays by lr x wd = 2e-4 x 1e-4 = 2e-8 a step: below half a float32 ulp of any weight, so an
    untouched row's decay rounds away and skipping it changes no bit. At 1e-2 x 1e-4 it would not round away: the
    optimiser is not lazy then, and a run whose learning rate rises past that point mid-way steps every row from
    there on, still bit for bit."""
    from xeval.adapters.transfer.lazy_rows import LazyRowsAdamW, decay_rounds_away

    assert decay_rounds_away(1e-4, 2e-4) and not decay_rounds_away(1e-4, 1e-3) and decay_rounds_away(0.0, 1.0)
    dense, _ = _train(lazy=False, lr=2e-4, weight_decay=1e-4)
    lazy, opt = _train(lazy=True, lr=2e-4, weight_decay=1e-4)
    assert isinstance(opt, LazyRowsAdamW) and not opt.dense
    for name in dense:
        assert torch.equal(dense[name], lazy[name]), name
    _, high = _train(lazy=True, lr=1e-2, weight_decay=1e-4)
    assert not isinstance(high, LazyRowsAdamW)  # 1e-6 a step would decay untouched rows
    dense, _ = _train(lazy=False, lr=2e-4, weight_decay=1e-4, raise_lr_at=12)
    lazy, opt = _train(lazy=True, lr=2e-4, weight_decay=1e-4, raise_lr_at=12)
    assert opt.dense  # switched when lr x wd passed 2**-25
    for name in dense:
        assert torch.equal(dense[name], lazy[name]), name


def test_not_used_where_skipping_a_row_would_change_it():
    from xeval.adapters.transfer.fine_tuning import _optimizer
    from xeval.adapters.transfer.lazy_rows import LazyRowsAdamW
    from xeval.adapters.transfer.recipe import Recipe

    assert isinstance(_optimizer(_Tagger(), Recipe()), LazyRowsAdamW)
    assert not isinstance(_optimizer(_Tagger(), Recipe(weight_decay=0.01)), LazyRowsAdamW)  # untouched rows decay
    assert not isinstance(_optimizer(_Tagger(tie=True), Recipe()), LazyRowsAdamW)  # gradient from the output layer
    assert not isinstance(_optimizer(_Tagger(), Recipe(), lazy_rows=False), LazyRowsAdamW)  # data parallel
    small = _Tagger()
    small.embed = nn.Embedding(100, 16)
    assert not isinstance(_optimizer(small, Recipe()), LazyRowsAdamW)
    odd = _Tagger()  # 100-wide rows: the fused kernel's scalar tail rounds them differently (measured)
    odd.embed = nn.Embedding(12_000, 100)
    assert not isinstance(_optimizer(odd, Recipe()), LazyRowsAdamW)


@pytest.mark.slow
def test_a_real_fine_tune_gives_the_same_numbers(tmp_path, data_root, monkeypatch):
    """UD-POS on the tiny real-data model, with and without the lazy rows: identical scores in every language."""
    from tests.helpers import transfer as helpers_transfer
    from tests.helpers.transfer import FAST
    from xeval.adapters.transfer import fine_tuning, lazy_rows
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    def scores(store):
        opts = RunOptions(model=str(helpers_transfer.tiny_model(data_root)), suite="xtreme-mini", tasks=["udpos"],
                          langs=["en", "de"], data=str(data_root), out=str(tmp_path / store),
                          recipe={**FAST, "max_train": 48, "max_eval": 12})
        return {r.unit.lang: r.metrics for r in run(opts, echo=lambda *_: None)}

    monkeypatch.setattr(lazy_rows, "MIN_ROWS", 100)  # the tiny model's vocabulary has 1,000 rows
    used = []
    lazy = fine_tuning.LazyRowsAdamW.__init__
    monkeypatch.setattr(fine_tuning.LazyRowsAdamW, "__init__", lambda self, *a, **k: (used.append(1),
                                                                                    lazy(self, *a, **k))[1])
    with_rows = scores("lazy")
    assert used  # the tiny model's embedding is large enough to be stepped lazily
    monkeypatch.setattr(fine_tuning, "lazy_embedding", lambda *a: None)
    assert scores("dense") == with_rows
