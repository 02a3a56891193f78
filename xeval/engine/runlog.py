"""What a pre-training run tells: its log lines (stdout and ``<out>/train.log``), its records (``<out>/log.jsonl``),
the progress bar, the run card (``<out>/xeval_pretrain.json``), and the matmul peak its utilisation is measured
against."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import torch

from xeval.base import console
from xeval.base.atomic import write_json


class Logger:
    """Lines to ``echo`` (stdout by default; rank 0 only) and to ``<out>/train.log``; records to ``<out>/log.jsonl``.
    While a progress bar is shown, lines are printed above it."""

    def __init__(self, out: Path, rank: int, echo=None):
        self.out, self.rank, self.bar = out, rank, None
        self.echo = echo or (lambda text: print(text, flush=True))

    def line(self, text: str, echo: bool = True) -> None:
        if self.rank:
            return
        if echo and self.bar is not None:
            with self.bar.external_write_mode():
                self.echo(text)
        elif echo:
            self.echo(text)
        with open(self.out / "train.log", "a", encoding="utf-8") as f:
            f.write(text + "\n")

    def record(self, rec: dict) -> None:
        if self.rank:
            return
        with open(self.out / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")


def progress_bar(tc, start: int, elapsed0: float, rank: int):
    """A terminal progress bar: steps, or seconds of the budget under ``max_seconds``. Not on a terminal (a log
    file): the heartbeat's activity (``xeval.base.console``), which writes a line every ``$XEVAL_HEARTBEAT`` s."""
    if rank != 0:
        return None
    timed = tc.max_seconds is not None
    total = max(1, round(tc.max_seconds)) if timed else tc.steps
    initial = min(total, int(elapsed0)) if timed else start
    if not sys.stderr.isatty():
        progress = console.activity("pretrain", total=total, unit="s" if timed else "step")
        progress.n = progress.initial = initial
        return progress
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="s" if timed else "step", dynamic_ncols=True)


def measure_peak(device: torch.device, dtype: torch.dtype, n: int = 1024, reps: int = 5,
                 budget_s: float = 1.0) -> float:
    """Matmul FLOP/s of an n x n x n product on this device, dtype and thread count (best of ``reps`` after two
    warm-ups). Stops once ``budget_s`` has passed: bf16 on a CPU without bf16 instructions runs ~1 GFLOP/s, where
    the seven products took ~15 s of every ``xeval pretrain`` start to say so."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    best, start = math.inf, time.perf_counter()
    for _ in range(reps + 2):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        (a @ b).sum().item()
        best = min(best, time.perf_counter() - t)
        if time.perf_counter() - start > budget_s:
            break
    return 2 * n**3 / best


def write_card(out: Path, cfg, last: dict | None = None, init: dict | None = None,
               finished: bool | None = None) -> None:
    """``xeval_pretrain.json``: what trained this checkpoint (config, corpora, last logged numbers; with
    ``model.init`` the init folder and its weights' SHA-256, ``init``). ``finished``: written at the run's end, true
    when it reached its steps or budget, false when ``train.stop_after`` stopped it; absent while it trains (the
    weights beside it are then its last save: ``xeval.models.files.unfinished_run``)."""
    write_json(out / "xeval_pretrain.json", {"config": cfg.to_dict(), "last": last or {}, "note": card_note(cfg, init),
                                             **({"init": init} if init else {}),
                                             **({"finished": finished} if finished is not None else {})})  # fmt: skip


def card_note(cfg, init: dict | None) -> str:
    """Where the weights come from: the engine's corpora only, or (``model.init``) a model trained elsewhere first."""
    where = "the shared data" if cfg.data.layout == "shared" else f"the {cfg.data.layout} corpora"
    if init:
        return (f"continued pre-training by xeval's engine on parallel/ and monolingual/ of {where}, from "
                f"{init['path']} (pre-trained elsewhere, on data xeval does not know; step 0 = its weights)")
    return f"trained by xeval's engine on parallel/ and monolingual/ of {where} only"
