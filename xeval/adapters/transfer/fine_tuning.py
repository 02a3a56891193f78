"""The one fine-tuning loop shared by tagging, pair classification and QA.

What it does, as XTREME's ``run_tag.py`` / ``run_classify.py`` / ``run_squad.py`` do:

- AdamW (no weight decay on biases and LayerNorm weights), linear warm-up then linear decay to zero,
  gradient clipping at ``max_grad_norm``, optional gradient accumulation;
- fixed seeds (``random``, ``numpy``, ``torch``) and a seeded shuffle per epoch: the same seed on the CPU gives
  the same weights bit for bit;
- model selection: evaluate on the English dev set every ``eval_every`` optimiser steps and at the end of every
  epoch, keep the weights with the best dev score (XTREME's ``--save_only_best_checkpoint``), or keep the last
  weights (``select="last"``, XTREME's QA recipe);
- a tqdm progress bar on a terminal, heartbeat lines in a log (``xeval.base.console``).

Also the batching it trains on (and the families predict with): padding (``collate``), length-grouped seeded
batches (``batches``), pass trimming (``trimmed``). The hyper-parameters come as a ``Recipe``
(``xeval.adapters.transfer.recipe``); the families build their own features and heads
(``xeval.adapters.transfer.backbone``), so this module only needs a model whose ``forward(**batch)`` returns
``(loss, logits...)`` when the batch carries labels, and takes ``loss_group`` (rows per micro-batch mean,
``xeval.adapters.transfer.passes``) when a pass holds several micro-batches.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from xeval.adapters.transfer.lazy_rows import LazyRowsAdamW, lazy_embedding
from xeval.adapters.transfer.passes import plan
from xeval.adapters.transfer.recipe import Recipe
from xeval.adapters.transfer.training_state import TrainingState, load_optimizer_state, optimizer_state
from xeval.base import collectives, console
from xeval.base.bf16_support import warn_slow_bf16
from xeval.base.errors import ConfigError
from xeval.base.heartbeat import Activity

IGNORE_INDEX = -100  # label of positions that carry no loss (padding, special tokens, non-first subwords)


def set_seed(seed: int) -> None:
    """Seed every generator a fine-tuning run draws from."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def collate(features: Sequence[dict], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Pad a list of feature dicts to one batch. ``input_ids`` pad with the tokenizer's pad id, masks and segment
    ids with 0, per-token ``labels`` with IGNORE_INDEX; scalar fields (a class label, an answer position) stack."""
    width = max(len(f["input_ids"]) for f in features)
    batch: dict[str, torch.Tensor] = {}
    for key in features[0]:
        values = [f[key] for f in features]
        if isinstance(values[0], (list, tuple)):
            pad = {"input_ids": pad_token_id, "labels": IGNORE_INDEX}.get(key, 0)
            batch[key] = torch.tensor([list(v) + [pad] * (width - len(v)) for v in values], dtype=torch.long)
        else:
            batch[key] = torch.tensor(values, dtype=torch.long)
    return batch


MEGA_BATCH = 50  # length grouping sorts within windows of 50 batches (Hugging Face's LengthGroupedSampler)


def length_grouped_order(lengths: Sequence[int], batch_size: int, generator: torch.Generator) -> list[int]:
    """A seeded shuffle in which each batch holds examples of similar length, so dynamic padding pads little.

    As Hugging Face's ``group_by_length``: shuffle, cut into windows of ``MEGA_BATCH`` batches, sort each window by
    length (longest first, ties in shuffled order), cut it into batches; the batch holding the longest example
    goes first (an out-of-memory shows at once). Then the batches are shuffled among themselves (same generator),
    so short and long steps alternate through the epoch instead of sweeping from long to short in every window.
    Deterministic given the generator's state."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    window = MEGA_BATCH * batch_size
    grouped: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda i: -lengths[i])  # stable: ties keep the shuffle
        grouped += [chunk[k : k + batch_size] for k in range(0, len(chunk), batch_size)]
    shuffled = [grouped[k] for k in torch.randperm(len(grouped), generator=generator).tolist()]
    longest = max(range(len(shuffled)), key=lambda k: lengths[shuffled[k][0]])
    shuffled[0], shuffled[longest] = shuffled[longest], shuffled[0]
    return [i for batch in shuffled for i in batch]


def batches(features: Sequence[dict], batch_size: int, pad_token_id: int, generator: torch.Generator | None = None,
            group_by_length: bool = False, skip: int = 0):
    """Batches in a shuffled (when ``generator`` is given; length-grouped with ``group_by_length``) or the
    original order, each padded to its own longest example; the first ``skip`` batches are left out (a resumed
    epoch: the order is drawn all the same, so the generator ends where it would have)."""
    if generator is None:
        order = list(range(len(features)))
    elif group_by_length:
        order = length_grouped_order([len(f["input_ids"]) for f in features], batch_size, generator)
    else:
        order = torch.randperm(len(features), generator=generator).tolist()
    for start in range(skip * batch_size, len(order), batch_size):
        yield collate([features[i] for i in order[start : start + batch_size]], pad_token_id)


def _optimizer(model: nn.Module, recipe: Recipe, lazy_rows: bool = True) -> torch.optim.Optimizer:
    """AdamW without weight decay on biases and norm weights (XTREME: ``no_decay = ["bias", "LayerNorm.weight"]``).
    Norms are found by module type, so models that name them otherwise (the engine's ``ln_attn``) are covered.
    On a CPU the input embedding's untouched rows are skipped (``lazy_rows``: the same weights bit for bit,
    ``xeval.adapters.transfer.lazy_rows``)."""
    norms = {id(p) for m in model.modules() if isinstance(m, (nn.LayerNorm, nn.RMSNorm)) for p in m.parameters()}
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        exempt = name.endswith("bias") or id(param) in norms or "LayerNorm" in name or "layer_norm" in name
        (no_decay if exempt else decay).append(param)
    groups = [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # fused: one kernel over every parameter instead of ~10 elementwise passes each. On a 12-layer encoder with
    # XLM-R's 250k x 384 embedding the unfused step took 0.52 s of a ~3.5 s UD-POS step at 2 threads, fused 0.08 s
    # (docs/measurements.md); the same update up to rounding (test_fine_tuning: fused vs foreach on one step)
    device = (decay or no_decay)[0].device.type if decay or no_decay else "cpu"
    embedding = lazy_embedding(model, groups, recipe.learning_rate) if lazy_rows and device == "cpu" else None
    if embedding is not None:  # e5-small: stepping all its 250k x 384 rows took ~0.05 s of a 0.3-1.9 s step
        return LazyRowsAdamW(groups, embedding, lr=recipe.learning_rate, eps=recipe.adam_epsilon, fused=True)
    return torch.optim.AdamW(groups, lr=recipe.learning_rate, eps=recipe.adam_epsilon,
                             fused=device in {"cpu", "cuda"})  # fmt: skip


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up from 0 over ``warmup`` steps, then linear decay to 0 at ``total`` (HF's linear schedule)."""

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@dataclass
class TrainReport:
    steps: int
    epochs: float
    examples: int  # training features seen (windows count separately)
    best_step: int | None
    best_dev: float | None
    dev_curve: list[tuple[int, float]]
    final_loss: float | None  # the last step's last pass (micro-batches sharing it: their means weighted by rows)
    duration_s: float
    micro_batch: int | None = None  # examples per loss mean (the card's micro-batch; --batch-size auto: the size it found)
    passes: int | None = None  # forward/backward passes run (xeval.adapters.transfer.passes: micro-batches share them)
    batch_search: str | None = None  # how --batch-size auto found it (None: the recipe's, no search)
    dropout_masks: str | None = None  # what drew the dropout masks (xeval.adapters.transfer.dropout_masks)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class _Loop:
    """What the training loop carries from step to step besides the model, AdamW and the schedule: what a saved
    training state holds (``xeval.adapters.transfer.training_state``)."""

    step: int = 0
    seen: int = 0
    passes: int = 0  # this rank's forward/backward passes
    loss_value: float | None = None
    done_in_epoch: int = 0  # batches of the current epoch done
    epoch_order: torch.Tensor | None = None  # the batch-order generator's state when the epoch began
    best_score: float | None = None
    best_step: int | None = None
    best_state: dict | None = None
    curve: list = field(default_factory=list)
    duration_before: float = 0.0  # training seconds before this process (a resumed run)

    def save(self, state: TrainingState, model: nn.Module, optimizer, scheduler, duration: float,
             extra: dict) -> None:
        tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
        tensors.update({f"best.{k}": v for k, v in (self.best_state or {}).items()})
        optim_tensors, optim_meta = optimizer_state(optimizer)
        tensors.update(optim_tensors)
        tensors["epoch_order"] = self.epoch_order
        state.save(tensors, {
            "phase": "training", "step": self.step, "seen": self.seen, "passes": self.passes,
            "loss_value": self.loss_value, "done_in_epoch": self.done_in_epoch, "best_score": self.best_score,
            "best_step": self.best_step, "curve": self.curve, "duration_s": duration,
            "scheduler": scheduler.state_dict(),  # its position (the factor is a plain function: not saved)
            "optimizer": optim_meta, **extra})

    def restore(self, saved: tuple[dict, dict], model: nn.Module, optimizer, scheduler, generator, device) -> None:
        tensors, meta = saved
        model.load_state_dict(_prefixed(tensors, "model."))
        best = _prefixed(tensors, "best.")
        self.best_state = {k: v.to(device) for k, v in best.items()} if best else None
        load_optimizer_state(optimizer, tensors, meta["optimizer"])  # torch puts the moments on each weight's device
        scheduler.load_state_dict(meta["scheduler"])
        generator.set_state(tensors["epoch_order"])
        self.step, self.seen, self.passes = meta["step"], meta["seen"], meta["passes"]
        self.loss_value, self.done_in_epoch = meta["loss_value"], meta["done_in_epoch"]
        self.best_score, self.best_step = meta["best_score"], meta["best_step"]
        self.curve = [tuple(point) for point in meta["curve"]]
        self.duration_before = meta["duration_s"]


def _prefixed(tensors: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


def _finished(model: nn.Module, saved: tuple[dict, dict], desc: str) -> TrainReport:
    """A fine-tune whose training ended in an earlier run: its selected weights and report."""
    tensors, meta = saved
    model.load_state_dict(_prefixed(tensors, "model."))
    model.eval()
    report = meta["report"]
    report["dev_curve"] = [tuple(point) for point in report["dev_curve"]]
    console.log.info(f"{desc}: trained in an earlier run ({report['steps']} steps); its selected weights reused")
    return TrainReport(**report)


def fine_tune(
    model: nn.Module,
    features: Sequence[dict],
    recipe: Recipe,
    seed: int,
    pad_token_id: int,
    evaluate: Callable[[nn.Module], float] | None = None,
    device: torch.device | str = "cpu",
    desc: str = "fine-tune",
    data_parallel: bool = False,
    auto_batch: bool = False,
    state: TrainingState | None = None,
) -> TrainReport:
    """Train ``model`` on ``features`` (dicts of lists, see ``collate``) and leave it holding the selected weights
    (best dev score under ``select="dev"`` when ``evaluate`` is given, else the last), in eval mode.

    ``data_parallel`` (``xeval run --ddp-finetune`` under torchrun): every rank runs this with the same arguments;
    each step's micro-batches are dealt round-robin over the ranks (one micro-batch a pass) and their gradients
    summed (``all_reduce``), so a step computes the same gradient as one process would with ``pass_tokens`` 0, up
    to float summation order. Dropout masks are drawn from a generator seeded per (seed, step, micro-batch), so
    they too do not depend on which rank computes a micro-batch. Rank 0 scores the dev set and tells the others.

    ``auto_batch`` (``--batch-size auto``): the micro-batch is the largest that fits the accelerator
    (``xeval.adapters.transfer.batch_search``), the optimiser step unchanged, one micro-batch a pass.

    On a CPU in one process, consecutive micro-batches share a forward/backward pass up to ``recipe.pass_tokens``
    padded tokens, each keeping its own loss mean (``xeval.adapters.transfer.passes``); on an accelerator the
    card's micro-batch stays the pass (it is what bounds the device's memory).

    ``state`` (one process only): save the loop's state every ``state.every_s`` seconds and continue from a saved
    one -- the same weights, bit for bit on a CPU, as a run never stopped (``xeval.adapters.transfer.training_state``);
    a state saved when training ended gives back the selected weights and the report without training."""
    if not features:
        raise ConfigError(f"{desc}: no training examples")
    model.to(device).train()
    rank, world = collectives.rank_world() if data_parallel else (0, 1)
    state = state if world == 1 else None
    saved = state.load() if state is not None else None
    if saved is not None and saved[1]["phase"] == "done":  # trained already: the selected weights and the report
        return _finished(model, saved, desc)
    micro, search = recipe.micro_batch_size, None
    if saved is not None and "micro_batch" in saved[1]:  # the micro-batch decides the loss means: the saved one
        micro, search = saved[1]["micro_batch"], saved[1]["batch_search"]
    elif auto_batch:  # before the seed: the trial passes draw dropout masks
        from xeval.adapters.transfer.batch_search import micro_batch

        micro, search = micro_batch(model, features, recipe, pad_token_id, device, collate)
    # merged passes only where main memory holds them and one process computes the step (ranks share its passes)
    budget = recipe.pass_tokens if torch.device(device).type == "cpu" and world == 1 else 0
    set_seed(seed)
    steps_per_epoch = math.ceil(len(features) / recipe.batch_size)
    total = recipe.max_steps or max(1, math.ceil(steps_per_epoch * recipe.epochs))
    warmup = recipe.warmup_steps or int(recipe.warmup_ratio * total)
    optimizer = _optimizer(model, recipe, lazy_rows=not data_parallel)  # another rank's lookups are not seen here
    scheduler = linear_schedule(optimizer, warmup, total)
    generator = torch.Generator().manual_seed(seed)
    select = recipe.select == "dev" and evaluate is not None
    autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=recipe.precision == "bf16")
    if recipe.precision == "bf16" and torch.device(device).type == "cpu":
        warn_slow_bf16("recipe precision=bf16")
    loop = _Loop()
    if saved is not None:
        loop.restore(saved, model, optimizer, scheduler, generator, device)
        console.log.info(f"{desc}: continuing from step {loop.step}/{total} (training state {state.meta_path})")

    def checkpoint(step: int) -> None:
        # data parallel: the weights are the same on every rank; rank 0 scores and every rank takes its score
        score = float(evaluate(model)) if rank == 0 else None  # type: ignore[misc]
        if world > 1:
            score = collectives.broadcast(score)
        model.train()
        loop.curve.append((step, round(score, 4)))
        better = loop.best_score is None or score > loop.best_score
        if better:
            loop.best_score, loop.best_step = score, step
            loop.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if rank == 0:
            console.log.info(f"{desc}: step {step}/{total} dev {score:.2f}{' (best)' if better else ''}")

    start = last_save = time.perf_counter()
    step, loss_value = loop.step, loop.loss_value
    # data parallel: rank 0 draws the one bar (or writes the heartbeat); the others count silently
    bar = console.progress(total=total, desc=desc, unit="step", initial=step) if rank == 0 \
        else Activity(desc, total, "step")
    try:  # an exception (a stop, a bad batch) still ends the activity: the heartbeat must not report it
        while step < total:
            loop.epoch_order = generator.get_state()  # what draws this epoch's order (saved: a resume redraws it)
            for batch in batches(features, recipe.batch_size, pad_token_id, generator,  # collated lazily
                                 group_by_length=recipe.group_by_length, skip=loop.done_in_epoch):
                n = len(batch["input_ids"])
                mask = batch.get("attention_mask")
                lengths = mask.sum(dim=1).tolist() if mask is not None else [batch["input_ids"].shape[1]] * n
                ranges = plan(lengths, micro, budget)
                chunks = [{k: v[a:b] for k, v in batch.items()} for a, b in ranges]
                for index in range(rank, len(chunks), world):  # one process: every pass
                    chunk = {k: v.to(device) for k, v in trimmed(chunks[index]).items()}
                    # dropout masks independent of the rank; seeded by the pass's first micro-batch, so that with
                    # one micro-batch a pass (pass_tokens 0) they are those of xeval before passes
                    torch.manual_seed(_micro_batch_seed(seed, step, ranges[index][0] // micro))
                    rows = len(chunk["input_ids"])
                    group = {"loss_group": micro} if rows > micro else {}  # each micro-batch's own mean
                    with autocast:
                        loss = model(**chunk, **group)[0].float()
                    (loss * rows / n).backward()  # mean over the whole step's examples
                    loop.passes += 1  # this rank's
                if world > 1:
                    collectives.all_reduce_gradients(model.parameters())
                torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                loop.seen += n
                loop.done_in_epoch += 1
                if rank < len(chunks):  # this rank computed a pass (the last one it computed)
                    loss_value = float(loss.detach())
                    bar.set_postfix(loss=f"{loss_value:.3f}")
                bar.update(1)
                if select and recipe.eval_every and step % recipe.eval_every == 0 and (
                        step < total or not recipe.epoch_end_selection):  # the last step: epoch end's check, unless off
                    checkpoint(step)
                if step >= total:
                    break
                # an epoch's last step is never saved: its end-of-epoch selection has not run yet
                if state is not None and time.perf_counter() - last_save >= state.every_s \
                        and loop.done_in_epoch < steps_per_epoch:
                    save_started = time.perf_counter()
                    loop.step, loop.loss_value = step, loss_value
                    loop.save(state, model, optimizer, scheduler, loop.duration_before + time.perf_counter() - start,
                              {"micro_batch": micro, "batch_search": search})
                    console.log.info(f"{desc}: training state saved at step {step} "
                                     f"({state.tensors_path.stat().st_size / 1e9:.2f} GB in "
                                     f"{time.perf_counter() - save_started:.1f} s; a rerun continues from it)")
                    last_save = time.perf_counter()
            loop.done_in_epoch = 0
            if select and recipe.epoch_end_selection and (not loop.curve or loop.curve[-1][0] != step):  # epoch end
                checkpoint(step)
        if select and not recipe.epoch_end_selection and (not loop.curve or loop.curve[-1][0] != step):
            # XTREME's train_*.sh pass --eval_all_checkpoints: the final model is scored on English dev beside every
            # saved checkpoint, and its step count is rarely a multiple of --save_steps (PAN-X 6,250 vs 6,000)
            checkpoint(step)  # a tie keeps the earlier checkpoint (strictly better only), as XTREME's sort does
    finally:
        bar.close()
    if world > 1:  # the loss of the step's last pass, as one process reports it
        loss_value = collectives.broadcast(loss_value, src=(len(chunks) - 1) % world)
    if isinstance(optimizer, LazyRowsAdamW):
        optimizer.close()  # the model outlives its fine-tune
    if select and loop.best_state is not None:
        model.load_state_dict(loop.best_state)
    model.eval()
    report = TrainReport(
        steps=step,
        epochs=round(loop.seen / len(features), 4),
        examples=loop.seen,
        best_step=loop.best_step,
        best_dev=None if loop.best_score is None else round(loop.best_score, 4),
        dev_curve=loop.curve,
        final_loss=None if loss_value is None else round(loss_value, 6),
        duration_s=round(loop.duration_before + time.perf_counter() - start, 3),
        micro_batch=micro,
        passes=collectives.total(loop.passes) if world > 1 else loop.passes,  # every rank's
        batch_search=search,
    )
    if state is not None and report.duration_s >= state.every_s:  # kept until every unit is stored (the caller)
        state.save({f"model.{k}": v for k, v in model.state_dict().items()}, {"phase": "done",
                                                                              "report": report.to_json()})
    return report


def trimmed(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A pass without the padding columns none of its examples uses (a step's batch is padded to its longest
    example; each pass of it needs only its own longest). Masked positions carry no attention and
    no loss, so the result is the same up to float rounding -- except QA's span softmax, which runs over the
    padding positions too (as ``BertForQuestionAnswering``'s; XTREME pads every window to 384): there a window's
    loss depends on its batch's width, and a pass keeps each micro-batch's own (``SpanExtractor``)."""
    mask = batch.get("attention_mask")
    if mask is None or mask.dim() != 2:
        return batch
    width = int(mask.sum(dim=1).max())
    if width == mask.shape[1]:
        return batch
    return {k: v[:, :width] if v.dim() == 2 and v.shape[1] == mask.shape[1] else v for k, v in batch.items()}


def _micro_batch_seed(seed: int, step: int, index: int) -> int:
    """The torch seed of micro-batch ``index`` of optimiser step ``step`` (a well-mixed 63-bit integer)."""
    return int(np.random.SeedSequence([seed, step, index]).generate_state(2, dtype=np.uint64)[0] >> np.uint64(1))
