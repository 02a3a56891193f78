"""Pre-training: ``pretrain(config, out, resume=False)``, what ``xeval pretrain`` calls.

One step = draw the global batch (every rank draws the same one from the seeded streams), let each objective
prepare its inputs on the CPU (masking seeded by (seed, step)), take this rank's slice, one forward through all
objectives, one backward, clip, AdamW. Under ``torchrun`` the model is wrapped in DDP (NCCL on GPUs, gloo on CPU).

- AdamW (beta2 0.98), no weight decay on biases and norms (every parameter with < 2 dimensions), linear warm-up then
  linear decay to 0 (the schedule is a pure function of the step, so resuming needs only the step);
- ``train.max_seconds`` (a wall-clock budget, e.g. the quickstart's) stops the loop when the budget is spent (or at
  ``train.steps``, whichever comes first) and decays the learning rate over the budget instead (``lr_at``). The
  loop's elapsed seconds are saved with each state, so ``--resume`` continues the same budget and schedule; but
  such a run is *not* bit-reproducible, nor is its resume exact: the number of steps and the learning rate of each
  depend on how fast the machine ran. Runs without ``max_seconds`` (every preset but ``quickstart``) are exact;
- a run that does no step (``train.steps`` 0) exports the initial weights: a random-init control of the same shape,
  tokenizer and seed (``export_random_init``);
- dropout is reseeded from (seed, step, rank) at every step, so the random stream after a resume is the one an
  uninterrupted run would have used (the torch RNG state is saved as well);
- log lines: loss per objective, tokens/s, executed-FLOP utilisation = FLOPs actually run (counted with
  ``torch.utils.flop_counter`` on the first step of each log window, per token) / time, against the best matmul
  rate measured so far (at start-up and at every log line) on the same device and dtype.

The parts: ``engine/setup.py`` builds the run (config, corpora, tokenizer, streams, model, optimiser, devices),
``engine/train_loop.py`` trains it (one step, the log window, the checkpoints), ``engine/runlog.py`` writes what
it tells.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist

from xeval.engine.config import PretrainConfig
from xeval.engine.setup import setup, setup_distributed
from xeval.engine.train_loop import train_loop


def pretrain(cfg: PretrainConfig, out: str | Path, resume: bool = False, echo=None) -> dict:
    """Train; returns a summary (steps, tokens, loop seconds, last logged losses, tokens/s). Writes the model into
    ``out``. ``echo(text)`` receives the log lines (default: printed)."""
    out = Path(out)
    tc = cfg.train
    if tc.threads:
        torch.set_num_threads(tc.threads)
    rank, world, device = setup_distributed(tc.device)
    try:
        summary = train_loop(setup(cfg, out, resume, rank, world, device, echo))
    except BaseException:
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()  # no barrier: the other ranks may never reach it; torchrun stops them
        raise
    if world > 1 and dist.is_initialized():
        # leave together: a rank that tears gloo down while rank 0 still writes the export can abort at exit (SIGABRT)
        dist.barrier()
        dist.destroy_process_group()
    return summary


def export_random_init(cfg: PretrainConfig, out: str | Path, echo=None) -> dict:
    """The untrained encoder of ``cfg`` into ``out``: the tokenizer, shape and seeded initial weights a training run
    of ``cfg`` starts from (a random-init control). A run of 0 steps."""
    return pretrain(cfg.updated({"train": {"steps": 0, "max_seconds": None, "stop_after": None}}), out, echo=echo)
