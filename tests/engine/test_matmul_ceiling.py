"""bench/matmul_ceiling.py: a step's matrix products found once each, with hand-computed FLOPs, and replayed."""

from __future__ import annotations

import torch

from tests.helpers.bench import load_bench


def test_a_linear_layers_step_has_three_products_of_known_flops():
    ceiling = load_bench("matmul_ceiling")
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(5, 8, requires_grad=True)

    def step(batch):
        layer(batch).sum().backward()

    calls = ceiling.product_calls(step, x)
    # forward: addmm(bias [4], x [5, 8], W^T [8, 4]); backward: grad_x = g [5, 4] @ W [4, 8], grad_W = g^T [4, 5] @ x
    assert sum(calls.values()) == 3
    assert sorted(op for op, _ in calls) == ["aten::addmm", "aten::mm", "aten::mm"]
    rows = ceiling.replay(calls, torch.float32, reps=1)
    assert sorted(r["flops"] for r in rows) == [320.0, 320.0, 320.0]  # 2 x 5 x 8 x 4 each
    assert all(r["seconds"] > 0 for r in rows)


def test_bmm_flops_count_the_batch():
    ceiling = load_bench("matmul_ceiling")
    _, flops = ceiling.operands("aten::bmm", ((3, 4, 5), (3, 5, 6)), torch.float32)
    assert flops == 2.0 * 3 * 4 * 5 * 6
