"""The training loop over a ``Run`` (``engine/setup.py``): one optimiser step, the log window, the checkpoint
series, the saved state, the budget, the end.

The random streams of a step depend on (seed, step, micro-batch, rank) only: the objectives' masking generators
are seeded from (seed, step, micro-batch) and the objective's name, dropout from those and the rank, so a resumed
run draws exactly what an uninterrupted one would.
"""

from __future__ import annotations

import contextlib
import math
import time
import zlib
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.utils.flop_counter import FlopCounterMode

from xeval.base.errors import UserError
from xeval.engine import checkpoint as ckpt
from xeval.engine.objectives import StepContext, slice_inputs
from xeval.engine.runlog import measure_peak, progress_bar, write_card
from xeval.engine.setup import Run, barrier, lr_at


class Clock:
    """Seconds of the training loop, over resumes (``before``: those of the run before this resume)."""

    def __init__(self, before: float):
        self.before, self.t0 = before, time.perf_counter()

    def elapsed(self) -> float:
        return self.before + time.perf_counter() - self.t0


@dataclass
class Window:
    """The steps since the last log line: their wall time, tokens (all ranks) and summed statistics."""

    t: float = field(default_factory=time.perf_counter)
    tokens: int = 0
    steps: int = 0
    stats: dict = field(default_factory=dict)

    def add(self, stats: dict, loss: torch.Tensor, grad_norm, world: int) -> None:
        self.tokens += stats["tokens"] * world
        self.steps += 1
        for k, v in stats.items():
            if k != "tokens":
                self.stats[k] = self.stats.get(k, 0.0) + float(v)
        self.stats["loss"] = self.stats.get("loss", 0.0) + float(loss.detach())
        if grad_norm is not None:
            self.stats["grad_norm"] = self.stats.get("grad_norm", 0.0) + float(grad_norm)


def train_loop(run: Run) -> dict:
    """Train from ``run.start`` to ``train.steps`` (or the budget, or ``train.stop_after``); returns the summary."""
    tc = run.cfg.train
    timed = tc.max_seconds is not None
    clock = Clock(run.elapsed0)
    if tc.export_every and run.start == 0:
        export_series(run, 0, clock)
    flops_per_token = None
    window = Window()
    last_stats: dict = {}
    total_tokens = 0
    bar = progress_bar(tc, run.start, run.elapsed0, run.rank)
    run.log.bar = bar
    step = run.start
    done = step >= tc.steps or budget_spent(run, clock)
    while not done:
        if tc.head_warmup:  # no per-step walk over the parameters for a run without one
            freeze_encoder(run, step < tc.head_warmup, step)
        lr = lr_at(step, tc, clock.elapsed())
        for group in run.optimizer.param_groups:
            group["lr"] = lr
        count_flops = window.steps == 0 and not tc.compile  # first step of each log window (the mix changes)
        loss, stats, grad_norm, counted = train_step(run, step, count_flops)
        flops_per_token = counted if counted is not None else flops_per_token
        step += 1
        if not math.isfinite(float(loss.detach())):
            raise UserError(f"loss became {float(loss.detach())} at step {step}; lower train.lr or check the data")
        window.add(stats, loss, grad_norm, run.world)
        total_tokens += stats["tokens"] * run.world
        done = step >= tc.steps or budget_spent(run, clock)
        if bar is not None:
            bar.update(min(bar.total, int(clock.elapsed())) - bar.n if timed else 1)
            if timed:
                bar.set_postfix_str(f"step {step}", refresh=False)
        if step % tc.log_every == 0 or done:
            last_stats = log_window(run, window, step, lr, flops_per_token, clock)
            window = Window()
        if tc.export_every and (step % tc.export_every == 0 or done):
            export_series(run, step, clock)
        if step % tc.save_every == 0 or done or step == tc.stop_after:
            save(run, step, clock)
        if tc.stop_after is not None and step >= tc.stop_after:
            run.log.line(f"stopped after step {step} (train.stop_after); continue with --resume")
            break
    if bar is not None:
        bar.close()
    run.log.bar = None
    return finish(run, step, clock, last_stats, total_tokens)


def freeze_encoder(run: Run, frozen: bool, step: int) -> None:
    """``train.head_warmup``: while ``frozen`` the encoder's weights get no gradient -- the optimiser skips them (no
    update, no weight decay) and backward stops at the heads; a tied MLM decoder is the word embedding, so it stays
    too, and the head's transform and bias learn. Logged where it changes."""
    params = list(run.model.encoder.parameters())
    if params[0].requires_grad != frozen:
        return
    for p in params:
        p.requires_grad_(not frozen)
    if frozen:
        run.log.line(f"head warm-up: steps {step + 1}-{run.cfg.train.head_warmup} train the objectives' heads only "
                     "(train.head_warmup; the encoder frozen)")
    elif step:
        run.log.line(f"head warm-up done: the encoder trains from step {step + 1}")


# --------------------------------------------------------------------------------------------------- one step
def train_step(run: Run, step: int, count_flops: bool):
    """One optimiser step over ``train.accumulate`` micro-batches (gradients summed): (summed loss, statistics
    (tokens summed, the rest averaged over the micro-batches), gradient norm before clipping or None, FLOPs per
    token of the first micro-batch when ``count_flops``, else None)."""
    tc, dc, model, world = run.cfg.train, run.cfg.data, run.model, run.world
    weights, flops_per_token = run.weights, None
    loss, stats = None, {}
    for micro in range(tc.accumulate):  # train.accumulate batches, one optimizer step (gradients summed)
        batches = {
            "mono": run.mono.next_batch(dc.mono_batch) if run.mono else None,
            "pairs": run.pairs.next_batch(dc.pair_batch) if run.pairs else None,
        }
        # micro 0's seeds are those of a run without accumulation
        gen_seed = tc.seed * 1_000_003 + step * 7919 + micro * 104_651
        inputs = model.prepare(batches, lambda name, s=gen_seed: torch.Generator().manual_seed(s + _salt(name)))
        inputs = slice_inputs(inputs, run.rank, world)
        inputs = _to_device(inputs, run.device)
        torch.manual_seed(gen_seed + run.rank * 104_729 + 17)  # dropout stream of this step, micro-batch and rank
        ctx = StepContext(step=step, seed=tc.seed, rank=run.rank, world=world, device=run.device, micro=micro,
                          pair_buckets=dc.pair_buckets)
        counter = FlopCounterMode(display=False) if count_flops and micro == 0 else None
        if counter is not None:
            counter.__enter__()
        # DDP: gradients are all-reduced once, on the last micro-batch
        sync = world == 1 or micro == tc.accumulate - 1
        with (contextlib.nullcontext() if sync else run.net.no_sync()):
            with torch.autocast(run.device.type, dtype=torch.bfloat16, enabled=tc.bf16):
                part, part_stats = run.net(inputs, ctx)
            if tc.accumulate > 1:
                part = part / tc.accumulate
            if part.requires_grad:  # False only while an XLCO-only run fills its queue
                part.backward()
        if weights is not None and world == 1:  # micro-batch gradients summed in fp32 (DDP: see below)
            weights.grads_to_masters()
        if counter is not None:
            counter.__exit__(None, None, None)
            flops_per_token = counter.get_total_flops() / max(1, part_stats["tokens"])
        loss = part.detach() if loss is None else loss + part.detach()
        for k, v in part_stats.items():  # stats: tokens summed, the rest averaged over the micro-batches
            v = float(v) if k == "tokens" else float(v) / tc.accumulate
            stats[k] = stats.get(k, 0) + (int(v) if k == "tokens" else v)
    if weights is not None and world > 1:  # DDP all-reduces the bf16 gradients summed over the micro-batches
        weights.grads_to_masters()
    clipped = weights.masters if weights is not None else model.parameters()
    grad_norm = torch.nn.utils.clip_grad_norm_(clipped, tc.clip) if tc.clip else None
    run.optimizer.step()
    run.optimizer.zero_grad(set_to_none=True)
    if weights is not None:
        weights.masters_to_weights()
    return loss, stats, grad_norm, flops_per_token


def _salt(name: str) -> int:
    return zlib.crc32(name.encode()) % 1_000_000


def _to_device(inputs: dict, device: torch.device) -> dict:
    if device.type == "cpu":
        return inputs
    return {n: {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in d.items()}
            for n, d in inputs.items()}  # fmt: skip


# --------------------------------------------------------------------------------------------------- logging
def log_window(run: Run, window: Window, step: int, lr: float, flops_per_token: float | None, clock: Clock) -> dict:
    """The log line and record of the steps since the last one (losses averaged over the window and the ranks,
    tokens/s, executed-FLOP utilisation against the best matmul rate seen); returns the record."""
    tc, world, device = run.cfg.train, run.world, run.device
    if device.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - window.t
    run.peak = max(run.peak, measure_peak(device, run.amp_dtype, reps=1))  # best rate seen: the CPU may be shared
    avg = {k: v / window.steps for k, v in window.stats.items()}
    if world > 1:  # each rank's loss is its share of the global mean: average over ranks; counts: sum
        keys = sorted(avg)
        vec = torch.tensor([avg[k] for k in keys], dtype=torch.float64, device=device)
        dist.all_reduce(vec)
        avg = {k: float(v) / (1 if k in run.model.summed_stats else world) for k, v in zip(keys, vec.tolist())}
        if "grad_norm" in window.stats:
            avg["grad_norm"] = window.stats["grad_norm"] / window.steps  # identical on every rank
    tok_s = window.tokens / dt
    flops_s = (flops_per_token or 0.0) * window.tokens / world / dt
    last_stats = {"step": step, **avg, "lr": lr, "tokens_per_s": tok_s,
                  "flops_per_s": flops_s, "mfu": flops_s / run.peak, "s_per_step": dt / window.steps}  # fmt: skip
    timed = tc.max_seconds is not None
    if timed:
        last_stats["elapsed_s"] = clock.elapsed()
    run.log.record(last_stats)
    parts = " ".join(f"{k} {v:.3f}" for k, v in avg.items() if k not in ("loss", "grad_norm"))
    where = f"{step} ({clock.elapsed():.0f}/{tc.max_seconds:.0f} s)" if timed else f"{step}/{tc.steps}"
    msg = (f"step {where} | loss {avg['loss']:.4f} | {parts} | lr {last_stats['lr']:.2e} | "
           f"{tok_s:,.0f} tok/s | {flops_s / 1e9:.1f} GFLOP/s = {100 * flops_s / run.peak:.0f} % of peak | "
           f"{dt / window.steps:.2f} s/step")  # fmt: skip
    run.log.line(msg)
    return last_stats


# --------------------------------------------------------------------------------------------------- checkpoints
def budget_spent(run: Run, clock: Clock) -> bool:
    """Whether ``train.max_seconds`` is spent; under DDP every rank must agree: rank 0's clock decides."""
    tc = run.cfg.train
    if tc.max_seconds is None:
        return False
    flag = torch.tensor([float(clock.elapsed() >= tc.max_seconds)], device=run.device)
    if run.world > 1:
        dist.broadcast(flag, src=0)
    return bool(flag.item())


def save(run: Run, step: int, clock: Clock) -> None:
    """The model into ``out`` and the training state into ``out/state/`` (rank 0; the other ranks wait)."""
    if run.rank == 0:
        with run.as_saved():
            ckpt.export_model(run.model.encoder, run.out)
            extra = {"config": run.cfg.to_dict(), "world": run.world, "elapsed_s": clock.elapsed(), "corpus": run.corpus,
                     "data": {"mono": run.mono.state_dict() if run.mono else None,
                              "pairs": run.pairs.state_dict() if run.pairs else None}}  # fmt: skip
            ckpt.save_state(run.out, step, run.model, run.optimizer, extra, keep=run.cfg.train.keep)
    barrier(run.world)


def export_series(run: Run, step: int, clock: Clock) -> None:
    """train.export_every: the checkpoint series for curves over training (``out/steps/step-NNNNNNN/``)."""
    if run.rank == 0:
        card = {"config": run.cfg.to_dict(), "elapsed_s": round(clock.elapsed(), 1),
                "note": "a step of the checkpoint series (train.export_every); step 0 = the initial weights"
                        + (" (the init model's)" if run.init else ""), **({"init": run.init} if run.init else {})}
        with run.as_saved():
            path = ckpt.export_step(run.model.encoder, run.out, step, card)
        run.log.line(f"exported step {step} to {path}")


def finish(run: Run, step: int, clock: Clock, last_stats: dict, total_tokens: int) -> dict:
    """The last words: the initial weights when no step ran, the budget spent, the run card; the summary."""
    tc = run.cfg.train
    if step == 0 and run.rank == 0:  # no step at all: the initial weights (a random-init control, or the init model)
        with run.as_saved():
            ckpt.export_model(run.model.encoder, run.out)
        run.log.line(f"no training steps: exported the init model's weights ({run.init['path']})" if run.init
                     else "no training steps: exported the initial (random) weights")
    if tc.max_seconds is not None and step > run.start:
        run.log.line(f"stopped after step {step}: {clock.elapsed():.1f} s of the {tc.max_seconds:g} s budget "
                     f"(train.max_seconds)")  # fmt: skip
    if run.rank == 0:
        stopped = tc.stop_after is not None and step >= tc.stop_after and step < tc.steps  # to go on with --resume
        write_card(run.out, run.cfg, last_stats, run.init, finished=not stopped)
    return {"step": step, "out": str(run.out), "tokens": total_tokens,
            "seconds": round(clock.elapsed() - run.elapsed0, 1), **last_stats}  # fmt: skip
