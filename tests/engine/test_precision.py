"""bf16 training weights with fp32 masters (train.bf16): small updates accumulate in the masters, tied weights stay
tied, checkpoints see the masters."""

from __future__ import annotations

import torch
import torch.nn as nn

from xeval.engine.precision import BF16Weights


def test_updates_below_bf16_resolution_accumulate_in_the_master():
    torch.manual_seed(0)
    lin = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        lin.weight.fill_(1.0)
    master = lin.weight
    opt = torch.optim.SGD(lin.parameters(), lr=1e-3)
    weights = BF16Weights(lin, opt)
    assert lin.weight.dtype == torch.bfloat16 and lin.weight is not master and opt.param_groups[0]["params"] == [master]
    for step in range(3):
        lin(torch.ones(1, 1, dtype=torch.bfloat16)).sum().backward()  # d out / d w = 1
        weights.grads_to_masters()
        assert master.grad.dtype == torch.float32 and lin.weight.grad is None
        opt.step()
        opt.zero_grad(set_to_none=True)
        weights.masters_to_weights()
        if step == 0:  # 0.999: bf16's neighbours of 1 below are 1 - 2^-8 = 0.99609375 and 1, so the weight stays 1
            assert lin.weight.detach().item() == 1.0 and abs(master.detach().item() - 0.999) < 1e-6
    # 0.997 is nearer 0.99609375 than 1: the three small steps reached the bf16 weight through the master
    assert abs(master.detach().item() - 0.997) < 1e-6 and lin.weight.detach().item() == 0.99609375


def test_tied_weights_share_one_bf16_copy_and_checkpoints_see_the_masters():
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    b.weight = a.weight  # tied
    model = nn.Sequential(a, b)
    opt = torch.optim.AdamW(model.parameters())
    fp32 = {k: v.clone() for k, v in model.state_dict().items()}
    weights = BF16Weights(model, opt)
    assert a.weight is b.weight and a.weight.dtype == torch.bfloat16
    assert len(weights.masters) == 3  # a.weight (tied), a.bias, b.bias
    with weights.masters_in_model():
        state = model.state_dict()
        assert all(v.dtype == torch.float32 and torch.equal(v, fp32[k]) for k, v in state.items())
        assert {id(p) for p in model.parameters()} == {id(p) for p in weights.masters}
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
