"""The heads of --mode probe (xeval.adapters.transfer.probe_heads): logistic regression with C chosen on a
selection set, and the linear start/end span head with its written-out gradient."""

from __future__ import annotations

import numpy as np
import pytest


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


def test_fit_each_gives_every_layer_s_head_in_order_and_the_same_numbers_on_one_worker_or_two():
    """Layers fitted in parallel threads, each on one thread: the heads equal the one-at-a-time fits bit for bit,
    come back in layer order, and torch's thread count is restored."""
    import torch

    from xeval.adapters.transfer.probe_heads import fit_classifier, fit_each

    data = [_separable(200, seed=10 + k) for k in range(4)]
    seen_threads = []

    def fit(row):
        from threadpoolctl import threadpool_info

        seen_threads.append((torch.get_num_threads(), {p["num_threads"] for p in threadpool_info()}))
        return fit_classifier(*data[row], None)

    before = torch.get_num_threads()
    one = fit_each(fit, 4, workers=1)
    two = fit_each(fit, 4, workers=2)
    assert torch.get_num_threads() == before
    assert all(t == 1 and pools <= {1} for t, pools in seen_threads)  # every fit single-threaded
    for a, b, (x, _) in zip(one, two, data):
        assert np.array_equal(a.model.coef_, b.model.coef_) and np.array_equal(a.predict(x), b.predict(x))
    assert [h.model.coef_.shape for h in two] == [(3, 8)] * 4
    assert not np.array_equal(two[0].model.coef_, two[1].model.coef_)  # each its own layer's data, not one reused
