"""SFC64 dropout masks (xeval.engine.dropout): the same dropout as torch's, other masks."""

from __future__ import annotations

import math

import pytest
import torch

from xeval.engine import dropout as sfc64


def test_keeps_one_minus_p_and_scales_the_kept():
    torch.manual_seed(0)
    x = torch.ones(1_000_000)
    y = sfc64.dropout(x, 0.1)
    kept = y != 0
    # binomial(10^6, 0.9): std 300 examples; 5 std either side
    assert abs(int(kept.sum()) - 900_000) < 1_500
    assert torch.all(y[kept] == torch.tensor(1 / 0.9))  # the scale torch uses, exactly


def test_the_seed_decides_the_masks():
    x = torch.randn(3, 50, 50)
    torch.manual_seed(7)
    a = sfc64.dropout(x, 0.3)
    b = sfc64.dropout(x, 0.3)  # the generator moved on: another mask
    torch.manual_seed(7)
    assert torch.equal(sfc64.dropout(x, 0.3), a)
    assert not torch.equal(a, b)


def test_masks_are_not_torchs_but_the_distribution_is():
    torch.manual_seed(1)
    ours = sfc64.dropout(torch.ones(200_000), 0.5) != 0
    torch.manual_seed(1)
    theirs = torch.nn.functional.dropout(torch.ones(200_000), 0.5) != 0
    assert not torch.equal(ours, theirs)
    assert abs(float(ours.float().mean()) - float(theirs.float().mean())) < 0.01
    # no structure between neighbours (each 64-bit draw feeds two elements): pairs agree half of the time
    assert abs(float((ours[0::2] == ours[1::2]).float().mean()) - 0.5) < 0.01


def test_identity_when_off_and_torch_when_asked():
    x = torch.randn(4, 5)
    assert sfc64.dropout(x, 0.1, training=False) is x
    assert sfc64.dropout(x, 0.0) is x
    torch.manual_seed(3)
    want = torch.nn.functional.dropout(x, 0.4)
    torch.manual_seed(3)
    assert torch.equal(sfc64.dropout(x, 0.4, rng="torch"), want)
    assert torch.equal(sfc64.dropout(x, 1.0), torch.zeros_like(x))


def test_gradient_is_the_mask():
    torch.manual_seed(0)
    x = torch.randn(64, 32, requires_grad=True)
    y = sfc64.dropout(x, 0.25)
    y.sum().backward()
    keep = y.detach() != 0
    assert torch.equal(x.grad, torch.where(keep, torch.tensor(1 / 0.75), torch.tensor(0.0)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_module_is_a_drop_in(dtype):
    module = sfc64.Dropout(0.2)
    x = torch.ones(10_000, dtype=dtype)
    assert module.eval()(x) is x
    y = module.train()(x)
    assert y.dtype == dtype and math.isclose(float((y != 0).float().mean()), 0.8, abs_tol=0.02)
