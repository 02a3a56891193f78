"""How a fine-tuning step's micro-batches go through the model: the recipe's ``pass_tokens``.

XTREME steps 32 examples as 4 micro-batches of 8 (``per_device_batch_size`` 8, ``gradient_accumulation`` 4): each
micro-batch's loss is a mean over its own examples (tagging: over its own labelled tokens) and the step's gradient
is their average, so the micro-batch belongs to the maths of tagging, while its size was XTREME's GPU memory. On a
CPU four small passes cost more than one pass of four times the size (docs/measurements.md, "Fine-tuning speed").
So consecutive micro-batches of a step share one forward/backward pass while the pass holds at most ``pass_tokens``
padded tokens (``plan``), and the heads take each micro-batch's own mean inside the pass (``grouped_cross_entropy``):
the step's loss is the same sum. What changes is float rounding and the dropout masks (one draw for the pass
instead of one a micro-batch: like another seed). ``pass_tokens: 0`` gives every micro-batch a pass of its own, as
xeval did before the field; so do accelerators (the micro-batch bounds the device's memory) and ``--ddp-finetune``'s
ranks (``fine_tune`` decides).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F


def plan(lengths: Sequence[int], micro: int, budget: int) -> list[tuple[int, int]]:
    """Row ranges ``[start, end)`` of one step's passes. ``lengths``: each example's tokens (padding excluded), in
    step order. Micro-batches of ``micro`` consecutive rows join the current pass while its rows x its longest stay
    within ``budget`` tokens (a micro-batch over the budget still gets a pass of its own); ``budget`` 0: one
    micro-batch a pass.

    >>> plan([10, 12, 9, 11, 30, 8], 2, 48)
    [(0, 4), (4, 6)]
    >>> plan([10, 12, 9, 11, 30, 8], 2, 0)
    [(0, 2), (2, 4), (4, 6)]
    """
    out: list[tuple[int, int]] = []
    for start in range(0, len(lengths), micro):
        end = min(start + micro, len(lengths))
        if out and budget:
            first = out[-1][0]
            if (end - first) * max(lengths[first:end]) <= budget:
                out[-1] = (first, end)
                continue
        out.append((start, end))
    return out


def grouped_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, group: int | None = None,
                          ignore_index: int = -100) -> torch.Tensor:
    """Cross-entropy averaged as separate micro-batches of ``group`` rows average it: each group's own mean over
    its non-ignored targets, the groups weighted by their rows. ``logits`` [B, ..., C], ``labels`` [B, ...]. With
    one group (``group`` None or >= B) it is ``F.cross_entropy``'s mean, the very computation of a micro-batch in
    a pass of its own.

    >>> logits = torch.tensor([[2.0, 0.0], [0.0, 0.0], [0.0, 3.0]])
    >>> labels = torch.tensor([0, -100, 1])
    >>> round(float(grouped_cross_entropy(logits, labels, 2)), 4)   # (2/3) x 0.1269 + (1/3) x 0.0486
    0.1008
    >>> round(float(grouped_cross_entropy(logits, labels)), 4)      # one mean over the 2 labelled rows
    0.0878
    """
    def mean(a: int, b: int) -> torch.Tensor:
        return F.cross_entropy(logits[a:b].flatten(0, -2), labels[a:b].flatten(), ignore_index=ignore_index)

    return group_means(logits.shape[0], group, mean)


def group_means(rows: int, group: int | None, mean: Callable[[int, int], torch.Tensor]) -> torch.Tensor:
    """The loss of a pass of ``rows`` rows as micro-batches of ``group`` rows would give it: ``mean(a, b)`` (the
    loss of rows [a, b) alone) for each group, weighted by its rows; one call over every row for one group."""
    if group is None or group >= rows:
        return mean(0, rows)
    return torch.stack([mean(a, min(a + group, rows)) * (min(group, rows - a) / rows)
                        for a in range(0, rows, group)]).sum()
