"""How fast a training step's own matrix products run alone: the ceiling of its matrix-peak utilisation.

``bench/engine_throughput.py --ceiling V`` records every matrix product of one step of variant V (``aten::mm``,
``aten::addmm``, ``aten::bmm``, outermost calls only; forward, backward and optimiser) with its shapes, then replays
each shape alone on fresh contiguous tensors of the step's product dtype (bf16 under autocast, else float32),
timed (median of ``reps`` after a warm-up), same threads. What it says:

- the products' rate at their own shapes against the n x n x n peak: a step cannot use the peak better than its
  products do (at 12 x 384 the products are 4096 x 384 x 384-like, far from the square 1024-products of the peak);
- the products' share of the step: the step's time minus the replayed products is everything else (dropout,
  casts, softmax, layer norm, GELU, the optimiser's elementwise work, Python).

The replay ignores the operands' layout in the step (a backward product reads a transposed operand) and the
caches a step leaves warm or cold, so it is an estimate of the products' cost, not an exact split of the step.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

import torch

PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm")


def product_calls(step, batch) -> Counter:
    """(op, shapes) -> calls in one ``step(batch)``; shapes as the profiler records them."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step(batch)
    calls: Counter = Counter()
    for event in prof.events():
        if event.name not in PRODUCTS:
            continue
        parent, nested = event.cpu_parent, False
        while parent is not None:  # a product inside another (addmm -> mm on some paths) is counted once
            nested = nested or parent.name in PRODUCTS
            parent = parent.cpu_parent
        if not nested:
            calls[(event.name, tuple(tuple(s) for s in event.input_shapes))] += 1
    return calls


def operands(op: str, shapes: tuple, dtype: torch.dtype) -> tuple[list[torch.Tensor], float]:
    """Fresh operands for one product and its FLOPs (2 n k m, times the batch for bmm)."""
    if op == "aten::addmm":  # (bias, a, b, beta, alpha)
        (n, k), (_, m) = shapes[1], shapes[2]
        bias = torch.randn(*shapes[0]).to(dtype) if shapes[0] else torch.zeros(m, dtype=dtype)
        return [bias, torch.randn(n, k).to(dtype), torch.randn(k, m).to(dtype)], 2.0 * n * k * m
    if op == "aten::bmm":
        (b, n, k), (_, _, m) = shapes[0], shapes[1]
        return [torch.randn(b, n, k).to(dtype), torch.randn(b, k, m).to(dtype)], 2.0 * b * n * k * m
    (n, k), (_, m) = shapes[0], shapes[1]
    return [torch.randn(n, k).to(dtype), torch.randn(k, m).to(dtype)], 2.0 * n * k * m


def replay(calls: Counter, dtype: torch.dtype, reps: int = 3) -> list[dict]:
    """Each recorded shape timed alone: one row per shape with calls, FLOPs and seconds (all calls)."""
    run = {"aten::mm": torch.mm, "aten::addmm": torch.addmm, "aten::bmm": torch.bmm}
    rows = []
    for (op, shapes), count in calls.items():
        args, flops = operands(op, shapes, dtype)
        run[op](*args)  # warm-up
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            run[op](*args)
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        rows.append({"op": op, "shapes": shapes, "calls": count, "flops": flops * count, "seconds": seconds * count})
    return sorted(rows, key=lambda r: -r["seconds"])


def report(name: str, step_seconds: float, step_flops: float, rows: list[dict], peak: float, top: int = 8) -> None:
    """Print the ceiling of one variant: its products alone against the peak and against its step."""
    flops, seconds = sum(r["flops"] for r in rows), sum(r["seconds"] for r in rows)
    print(f"\nceiling {name}: {sum(r['calls'] for r in rows)} products a step, {flops / 1e9:.1f} GFLOP, "
          f"{seconds:.3f} s alone = {flops / seconds / 1e9:.0f} GFLOP/s, {100 * flops / seconds / peak:.1f} % of the "
          f"peak ({peak / 1e9:.0f}); the step: {step_seconds:.3f} s, {100 * step_flops / step_seconds / peak:.1f} % "
          f"of the peak; products {100 * seconds / step_seconds:.0f} % of the step, the rest "
          f"{step_seconds - seconds:.3f} s")
    print(f"{'op':12s} {'shapes':44s} {'calls':>5s} {'ms':>8s} {'GFLOP/s':>8s} {'% peak':>6s}")
    for r in rows[:top]:
        shapes = " ".join("x".join(map(str, s)) for s in r["shapes"] if s)[:44]
        rate = r["flops"] / r["seconds"]
        print(f"{r['op'][6:]:12s} {shapes:44s} {r['calls']:5d} {1e3 * r['seconds']:8.1f} {rate / 1e9:8.0f} "
              f"{100 * rate / peak:6.1f}")
