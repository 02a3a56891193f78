"""Whether this CPU computes bf16 matrix products fast, and the one warning when bf16 is asked where it does not.

Without AVX-512 bf16 or AMX instructions oneDNN's bf16 products take a slow path: ~1 GFLOP/s against 177 in
float32 at 2 threads, measured on an AVX2-only AMD EPYC (docs/measurements.md, "One pass a step"), so every bf16
option of xeval (``--dtype bfloat16``, the recipe's ``precision: bf16``, the engine's ``train.bf16``) makes a run
10-100x slower there instead of faster.
"""

from __future__ import annotations

import functools


def slow_bf16_cpu() -> bool:
    """Whether this CPU lacks bf16 matrix instructions (AVX-512 bf16 / AMX), so that oneDNN's bf16 products take a
    slow path: ~1 GFLOP/s against 177 in float32 measured on an AVX2-only AMD EPYC (docs/measurements.md). False
    where torch cannot tell."""
    try:
        import torch

        return not bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:  # noqa: BLE001 - a private probe of torch's: no answer is no warning
        return False


@functools.cache
def warn_slow_bf16(what: str) -> bool:
    """One warning a process and ``what`` (``--dtype bfloat16``, ``precision=bf16``, ``train.bf16``) when bf16 is asked
    on a CPU without bf16 matrix instructions; whether it warned."""
    if not slow_bf16_cpu():
        return False
    from xeval.base.console import log

    log.warning(f"{what} on a CPU without bf16 matrix instructions (no AVX-512 bf16 / AMX): its products run 10-100x "
                f"slower than float32 here; float32 is the faster choice on this machine")
    return True
