"""``xeval run --batch-size auto``: the largest fine-tuning micro-batch that fits the accelerator's memory.

The optimiser step stays the recipe's (``batch_size`` examples, XTREME's 32): only how many of them go through one
forward/backward pass changes, the rest being gradient accumulation. The search, like lm-evaluation-harness's
``--batch-size auto`` (accelerate's ``find_executable_batch_size``), starts high and halves on out-of-memory:

1. candidates: the step size and its halvings (32, 16, 8, 4, 2, 1), so that micro-batches divide the step;
2. each is tried with one forward and backward pass on that many of the longest training inputs (the worst case a
   step can meet), gradients dropped after;
3. the first that runs is kept (its memory freed before training starts), and recorded in the training block of
   every record (``extra.training.micro_batch``, with ``batch_search``).

On a CPU there is no search: main memory gives no out-of-memory signal before the system swaps, so the recipe's
micro-batch is kept and the run says so. ``auto`` is part of each unit's identity (``batch_size: auto``): the
micro-batch decides which examples share a dropout draw and, for tagging and QA, a loss mean
(``xeval.adapters.transfer.passes``), so its numbers are those of the size it found, which the record names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from xeval.base.console import log


def candidates(batch_size: int) -> list[int]:
    """The step size and its halvings, largest first: 32 -> [32, 16, 8, 4, 2, 1]; 24 -> [24, 12, 6, 3, 1]."""
    out, size = [], int(batch_size)
    while size > 1:
        out.append(size)
        size //= 2
    return out + [1]


def largest_fitting(sizes: Sequence[int], fits: Callable[[int], bool]) -> int:
    """The first of ``sizes`` (largest first) for which ``fits(size)`` is true; the smallest when none is (its
    out-of-memory error then surfaces in training, where it names the task)."""
    for size in sizes:
        if fits(size):
            return size
    return sizes[-1]


def _out_of_memory(err: BaseException) -> bool:
    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


def micro_batch(model, features: Sequence[dict], recipe, pad_token_id: int, device, collate) -> tuple[int, str]:
    """(micro-batch, how it was found) for ``--batch-size auto``: searched on an accelerator, the recipe's on CPU."""
    kind = torch.device(device).type
    if kind == "cpu":
        log.info(f"--batch-size auto on cpu: no search (main memory gives no out-of-memory signal before swapping); "
                 f"micro-batches of {recipe.micro_batch_size} as the recipe says")
        return recipe.micro_batch_size, "cpu: the recipe's"
    longest = sorted(features, key=lambda f: len(f["input_ids"]), reverse=True)

    def fits(size: int) -> bool:
        batch = [longest[i % len(longest)] for i in range(size)]
        try:
            chunk = {k: v.to(device) for k, v in collate(batch, pad_token_id).items()}
            loss = model(**chunk)[0].float()
            loss.backward()
            return True
        except (torch.cuda.OutOfMemoryError, RuntimeError) as err:
            if not _out_of_memory(err):
                raise
            return False
        finally:
            model.zero_grad(set_to_none=True)
            if kind == "cuda":
                torch.cuda.empty_cache()

    sizes = candidates(recipe.batch_size)
    size = largest_fitting(sizes, fits)
    log.info(f"--batch-size auto on {kind}: micro-batches of {size} (the largest of {sizes} that fits one "
             f"forward and backward pass of the longest inputs; steps of {recipe.batch_size} examples)")
    return size, f"{kind}: largest of {'/'.join(map(str, sizes))} that fits"
