"""The pre-training loop: ``pretrain(config, out, resume=False)``.

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
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.utils.flop_counter import FlopCounterMode

from xeval.base.atomic import write_json
from xeval.base.errors import ConfigError, UserError
from xeval.engine import checkpoint as ckpt
from xeval.engine.config import PretrainConfig
from xeval.engine.data import CleanConfig, MonoStream, PairStream, balanced_sample, load_corpora
from xeval.engine.model import XevalConfig
from xeval.engine.objectives import PretrainModel, StepContext, TokenInfo, slice_inputs
from xeval.engine.precision import BF16Weights
from xeval.engine.tokenizer import coverage, load_tokenizer, save_tokenizer, train_tokenizer


def default_data_root() -> Path:
    env = os.environ.get("XEVAL_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


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


def lr_at(step: int, cfg, elapsed: float = 0.0) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``steps``. ``step`` counts from 0.

    With ``max_seconds`` (a time budget: the number of steps is not known in advance) the decay runs over the run's
    progress, the larger of ``elapsed / max_seconds`` and ``step / steps``: lr * warm-up ramp * (1 - progress),
    so the rate reaches 0 when the budget is spent, whatever the machine's speed."""
    if cfg.max_seconds is not None:
        progress = max(elapsed / cfg.max_seconds if cfg.max_seconds > 0 else 1.0, step / max(1, cfg.steps))
        return cfg.lr * min(1.0, (step + 1) / max(1, cfg.warmup)) * max(0.0, 1.0 - progress)
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cfg.lr * max(0.0, (cfg.steps - step) / max(1, cfg.steps - cfg.warmup))


def data_root(dc) -> Path:
    """The corpora's folder: ``data.root``, else (shared layout) $XEVAL_DATA or ../shared/data."""
    if dc.root:
        return Path(dc.root)
    if dc.layout != "shared":
        raise ConfigError(f"data.layout {dc.layout}: data.root (--data) must name the corpora's folder")
    return default_data_root()


def param_groups(model, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def measure_peak(device: torch.device, dtype: torch.dtype, n: int = 1024, reps: int = 5) -> float:
    """Matmul FLOP/s of an n x n x n product on this device, dtype and thread count (best of ``reps``)."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    best = math.inf
    for _ in range(reps + 2):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        (a @ b).sum().item()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def setup_distributed(device_pref: str):
    world = int(os.environ.get("WORLD_SIZE", "1"))
    use_cuda = torch.cuda.is_available() and device_pref in ("auto", "cuda")
    if device_pref == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device is cuda but no CUDA device is available")
    rank = 0
    if world > 1:
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
        rank = dist.get_rank()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}") if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    return rank, world, device


def barrier(world: int) -> None:
    if world > 1:
        dist.barrier()


def prepare_tokenizer(cfg: PretrainConfig, out: Path, root: Path, corpora, log: Logger, rank: int, world: int):
    """Use ``tokenizer.path``, else the tokenizer already in ``out``, else train one (rank 0) into ``out``."""
    if cfg.tokenizer.path:
        src = Path(cfg.tokenizer.path)
        if not (src / "tokenizer.json").is_file():
            raise ConfigError(f"tokenizer.path {src}: expected a directory with tokenizer.json")
        if rank == 0 and src.resolve() != out.resolve():
            save_tokenizer(load_tokenizer(src), out)
    elif rank == 0 and not _reusable_tokenizer(cfg, out, log):
        t0 = time.time()
        sample = balanced_sample(corpora, cfg.tokenizer.sample_lines, cfg.data.alpha, cfg.train.seed)
        texts = [t for lines in sample.values() for t in lines]
        try:
            tok = train_tokenizer(texts, cfg.tokenizer.vocab_size, cfg.tokenizer.model, cfg.tokenizer.alphabet)
        except ValueError as err:
            raise ConfigError(f"tokenizer: {err}") from None
        save_tokenizer(tok, out)
        write_json(out / TOKENIZER_SETTINGS, tokenizer_settings(cfg))
        log.line(f"tokenizer: {cfg.tokenizer.model} {tok.get_vocab_size()} ids from {len(texts)} lines "
                 f"({len(sample)} languages) in {time.time() - t0:.0f}s")  # fmt: skip
        report_coverage(tok, root, cfg, log)
    barrier(world)
    return load_tokenizer(out)


TOKENIZER_SETTINGS = "xeval_tokenizer.json"  # beside tokenizer.json: the settings it was trained with


def tokenizer_settings(cfg: PretrainConfig) -> dict:
    """Everything that decides the tokenizer xeval trains: its own section, the corpora and the sampling seed."""
    data = cfg.to_dict()["data"]
    return {"tokenizer": cfg.to_dict()["tokenizer"], "seed": cfg.train.seed,
            "data": {k: data[k] for k in ("root", "layout", "parallel", "monolingual", "languages", "alpha",
                                          "max_lines", "clean", "pairs_as_mono")}}


def _reusable_tokenizer(cfg: PretrainConfig, out: Path, log: Logger) -> bool:
    """Whether ``out`` holds the tokenizer ``cfg`` would train. One left by a failed run with other settings (say
    vocab 2000 while the config now asks for 4000) is retrained, never silently reused."""
    if not (out / "tokenizer.json").is_file():
        return False
    settings = out / TOKENIZER_SETTINGS
    if settings.is_file():
        try:
            before = json.loads(settings.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            before = {}
        diff = config_diff(before, json.loads(json.dumps(tokenizer_settings(cfg))))
    else:  # written by an older xeval: the vocabulary size is all there is to compare
        size = load_tokenizer(out).get_vocab_size()
        diff = "" if size == cfg.tokenizer.vocab_size else f"vocab_size {size} -> {cfg.tokenizer.vocab_size}"
    if diff:
        log.line(f"tokenizer: {out / 'tokenizer.json'} was left by an earlier run with other settings ({diff}); "
                 f"training a new one")
    return not diff


def report_coverage(tok, root: Path, cfg: PretrainConfig, log: Logger, n: int = 200) -> dict:
    """unk / byte-fallback rates per language on held-out lines of the corpora."""
    held = load_corpora(root, cfg.data.parallel, cfg.data.monolingual, cfg.data.languages,
                        CleanConfig(**cfg.data.clean), max_lines=n, split="heldout", seed=cfg.train.seed,
                        layout=cfg.data.layout)  # fmt: skip
    by_lang: dict[str, list[str]] = {}
    for key, rows in held.pairs.items():
        a, b = key.split("-")
        by_lang.setdefault(a, []).extend(r[0] for r in rows)
        by_lang.setdefault(b, []).extend(r[1] for r in rows)
    for lang, rows in held.mono.items():
        by_lang.setdefault(lang, []).extend(rows)
    report = {lang: coverage(tok, rows[: 4 * n]) for lang, rows in sorted(by_lang.items())}
    for lang, r in report.items():
        log.line(f"tokenizer heldout {lang:3s} unk {r['unk_rate']:5.2f} % byte {r['byte_rate']:5.2f} % "
                 f"tokens/char {r['tokens_per_char']:.3f}")  # fmt: skip
    return report


def load_dictionaries(cfg: PretrainConfig, root: Path, keys: list[str]) -> dict[str, dict[str, set[str]]]:
    """MUSE en-xx dictionaries for the pair keys, minus every pair of MUSE's 5000-6500 *test* splits (those are
    evaluation data for lexicon induction). A synthetic world: its ``dictionaries/<a>-<b>.train.txt`` (the
    ``.test`` split is the lexicon-induction task's)."""
    from xeval.engine.data import read_dictionary_pairs

    if cfg.data.layout == "synthetic":
        folder = Path(cfg.data.dictionaries) if cfg.data.dictionaries else root / "dictionaries"
        found = {}
        for key in keys:
            f = folder / f"{key}.train.txt"
            if f.is_file():
                table: dict[str, set[str]] = {}
                for a, b in read_dictionary_pairs(f):
                    table.setdefault(a.casefold(), set()).add(b.casefold())
                found[key] = table
        return found
    folder = Path(cfg.data.dictionaries) if cfg.data.dictionaries else root / "muse_dictionaries" / "full"
    test_folder = root / "muse_dictionaries" / "test_5000-6500_annotated"
    test_pairs = set()
    if test_folder.is_dir():
        for f in test_folder.glob("*.txt"):
            a, b = f.name.split(".")[0].split("-")
            for x, y in read_dictionary_pairs(f):
                test_pairs.add((x, y) if a == "en" else (y, x))
    out = {}
    for key in keys:
        f = folder / f"{key}.txt"
        if not key.startswith("en-") or not f.is_file():
            continue
        table: dict[str, set[str]] = {}
        for en, xx in read_dictionary_pairs(f):
            if (en, xx) not in test_pairs:
                table.setdefault(en.casefold(), set()).add(xx.casefold())
        out[key] = table
    return out


def pretrain(cfg: PretrainConfig, out: str | Path, resume: bool = False, echo=None) -> dict:
    """Train; returns a summary (steps, tokens, loop seconds, last logged losses, tokens/s). Writes the model into
    ``out``. ``echo(text)`` receives the log lines (default: printed)."""
    out = Path(out)
    tc = cfg.train
    if tc.threads:
        torch.set_num_threads(tc.threads)
    rank, world, device = setup_distributed(tc.device)
    try:
        summary = _pretrain(cfg, out, resume, rank, world, device, echo)
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


# What --resume may change: the step / time budget and how often to log and save (none of them changes a number).
RESUME_MAY_CHANGE = ("steps", "stop_after", "threads", "log_every", "max_seconds", "save_every", "keep",
                     "export_every")


def config_diff(before: dict, after: dict, prefix: str = "") -> str:
    """``train.lr 0.0005 -> 0.001; tokenizer.vocab_size 2000 -> 4000``: what differs between two config dicts."""
    parts = []
    for key in sorted(set(before) | set(after), key=str):
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            inner = config_diff(a, b, f"{prefix}{key}.")
            parts += [inner] if inner else []
        elif a != b:
            parts.append(f"{prefix}{key} {a!r} -> {b!r}")
    return "; ".join(parts)


def _pretrain(cfg: PretrainConfig, out: Path, resume: bool, rank: int, world: int, device: torch.device,
              echo=None) -> dict:  # fmt: skip
    tc, dc = cfg.train, cfg.data
    if tc.accumulate < 1:
        raise ConfigError(f"train.accumulate must be at least 1, got {tc.accumulate}")
    state_path = ckpt.latest_state(out) if resume else None
    if state_path is None and (out / "state" / "latest").is_file():
        raise UserError(f"{out}: holds a training run already; pass --resume to continue it or choose a new --out")
    elapsed0 = 0.0  # loop seconds of the run before this resume (time budgets)
    if state_path is not None:  # the saved config, with only the budget and logging/saving settings changed
        state_json = ckpt.read_state_json(state_path)
        saved = state_json.get("config")
        if not isinstance(saved, dict) or not isinstance(saved.get("train"), dict):
            raise UserError(f"{state_path / 'state.json'}: expected the run's 'config' object, found none")
        changes = {k: getattr(tc, k) for k in RESUME_MAY_CHANGE}
        # through from_dict: a key this xeval added since the run started compares as its default, not as a change
        saved = json.loads(json.dumps(PretrainConfig.from_dict(saved, str(state_path / "state.json")).to_dict()))
        now = json.loads(json.dumps(cfg.to_dict()))
        diff = config_diff(saved, {**now, "train": {**now["train"], **{k: saved["train"].get(k) for k in changes}}})
        if diff:
            raise UserError(f"{out}: --resume with a config that differs from the saved run's ({diff}); only "
                            f"train.{', train.'.join(RESUME_MAY_CHANGE)} may change; resume with the saved config "
                            f"or choose a new --out")
        saved["train"].update(changes)
        cfg = PretrainConfig.from_dict(saved, str(state_path / "state.json"))
        tc, dc = cfg.train, cfg.data
        elapsed0 = float(state_json.get("elapsed_s", 0.0))
    _check_layers(cfg)  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    log = Logger(out, rank, echo)
    # first line: what is trained (after null / weight-0 removals), so an ablation's log shows what it left out
    log.line(f"pretrain {cfg.name} size {cfg.size}: objectives "
             + ", ".join(f"{n} (weight {float(o.get('weight', 1.0)):g})" for n, o in cfg.objectives.items()))
    if rank == 0:
        for stale in ckpt.clean_partial_states(out):
            log.line(f"removed {stale}: a checkpoint write that never finished")
    root = data_root(dc)
    t0 = time.time()
    needs = _streams_needed(cfg)
    corpora = load_corpora(root, dc.parallel, dc.monolingual, dc.languages, CleanConfig(**dc.clean),
                           max_lines=dc.max_lines, seed=tc.seed, pairs_as_mono=dc.pairs_as_mono,
                           layout=dc.layout)  # fmt: skip
    log.line(f"{world} process(es) on {device}; data {root} "
             f"({len(corpora.mono)} monolingual languages, {len(corpora.pairs)} pair keys, {time.time() - t0:.0f}s)")  # fmt: skip
    for line in corpora.log_lines():
        log.line(line)
    tok = prepare_tokenizer(cfg, out, root, corpora, log, rank, world)
    tokens = TokenInfo.from_tokenizer(tok)
    if "mono" in needs:
        for line in corpora.mix_lines(tok):
            log.line(line)

    mono = MonoStream(corpora.mono, tok, dc.seq_len, dc.alpha, tc.seed) if "mono" in needs else None
    pairs = PairStream(corpora.pairs, tok, dc.pair_max_side, dc.alpha, tc.seed) if "pairs" in needs else None
    if ("mono" in needs and not corpora.mono) or ("pairs" in needs and not corpora.pairs):
        raise ConfigError(f"the objectives need {sorted(needs)} data but the corpora selected give none of some")
    for name, stream in (("mono", mono), ("pairs", pairs)):
        if stream is not None:
            probs = " ".join(f"{k}:{p:.3f}" for k, p in stream.probs.items())
            log.line(f"sampling {name} (alpha {dc.alpha}): {probs}")

    model_opts = dict(cfg.model)
    if model_opts.pop("language_embeddings", False):  # XLM: one embedding per language of the corpora
        model_opts["languages"] = sorted(set(corpora.mono) | {x for key in corpora.pairs for x in key.split("-")})
    model_cfg = XevalConfig(**{**model_opts, "vocab_size": tok.get_vocab_size(), "pad_token_id": tokens.pad,
                               "bos_token_id": tokens.bos, "eos_token_id": tokens.eos})  # fmt: skip
    try:
        model_cfg.check()
    except ValueError as err:
        raise ConfigError(f"model: {err}") from None
    if rank == 0 and model_cfg.position_embedding == "absolute":  # tell tokenizer users the model's length limit
        save_tokenizer(tok, out, model_max_length=model_cfg.max_position_embeddings)
    dictionaries = {}
    if "tokcl" in cfg.objectives:
        dictionaries = load_dictionaries(cfg, root, list(corpora.pairs))
        log.line(f"token contrast dictionaries: {', '.join(f'{k} ({len(v)})' for k, v in dictionaries.items())}")
    pieces = [tok.id_to_token(i) for i in range(tok.get_vocab_size())]
    torch.manual_seed(tc.seed)
    model = PretrainModel(model_cfg, cfg.objectives, tokens, pieces, dictionaries, tc.loss_norm).to(device)
    if "tokcl" in model.objectives:  # how much of the text the dictionaries can supervise, per language pair
        cover = model.objectives["tokcl"].coverage(corpora.pairs, tok)
        log.line("token contrast coverage (first 200 pairs): " + ", ".join(
            f"{k} {c['links_per_pair']:.2f} links/pair, {100 * c['linked']:.0f} % linked" for k, c in cover.items()))
    # fused: one kernel over all parameters instead of ~10 elementwise passes each (on the CPU the unfused step
    # was ~25 % of an MLM step at 4 x 256, 16k vocabulary; fused runs 5x faster); same maths up to rounding
    optimizer = torch.optim.AdamW(param_groups(model, tc.weight_decay), lr=tc.lr, betas=(tc.beta1, tc.beta2),
                                  eps=tc.eps, fused=device.type in {"cpu", "cuda"})  # fmt: skip
    start = 0
    if state_path is not None:
        state = ckpt.load_state(state_path, model, optimizer)
        start = state["step"]
        if mono is not None:
            mono.load_state_dict(state["data"]["mono"])
        if pairs is not None:
            pairs.load_state_dict(state["data"]["pairs"])
        log.line(f"resumed from {state_path} at step {start}")
    # bf16_weights: the trained weights themselves in bf16, fp32 masters in the optimiser (engine/precision.py);
    # after the resume, so the masters carry the restored weights and moments
    weights = BF16Weights(model, optimizer) if tc.bf16_weights else None
    as_saved = weights.masters_in_model if weights else contextlib.nullcontext  # checkpoints hold the fp32 masters
    if tc.compile:
        model.encoder.compile()
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None,
            broadcast_buffers=False, find_unused_parameters=True,
        )  # fmt: skip
    n_params = sum(p.numel() for p in model.encoder.parameters())
    amp_dtype = torch.bfloat16 if tc.bf16 else torch.float32
    peak = measure_peak(device, amp_dtype)
    log.line(f"encoder {n_params / 1e6:.2f}M parameters ({model_cfg.num_hidden_layers} x {model_cfg.hidden_size}, "
             f"vocab {model_cfg.vocab_size}); objectives {', '.join(cfg.objectives)}; matmul peak "
             f"{peak / 1e9:.1f} GFLOP/s ({'bf16' if tc.bf16 else 'fp32'}, {torch.get_num_threads()} threads)")  # fmt: skip
    if rank == 0:
        _write_card(out, cfg)

    timed = tc.max_seconds is not None
    t_loop = time.perf_counter()

    def elapsed() -> float:  # seconds of the training loop, over resumes
        return elapsed0 + time.perf_counter() - t_loop

    def save(step: int) -> None:
        if rank == 0:
            with as_saved():
                ckpt.export_model(model.encoder, out)
                extra = {"config": cfg.to_dict(), "world": world, "elapsed_s": elapsed(),
                         "data": {"mono": mono.state_dict() if mono else None,
                                  "pairs": pairs.state_dict() if pairs else None}}  # fmt: skip
                ckpt.save_state(out, step, model, optimizer, extra, keep=tc.keep)
        barrier(world)

    def budget_spent() -> bool:  # under DDP every rank must agree: rank 0's clock decides
        if not timed:
            return False
        flag = torch.tensor([float(elapsed() >= tc.max_seconds)], device=device)
        if world > 1:
            dist.broadcast(flag, src=0)
        return bool(flag.item())

    def export_series(step: int) -> None:  # train.export_every: the checkpoint series for curves over training
        if rank == 0:
            card = {"config": cfg.to_dict(), "elapsed_s": round(elapsed(), 1),
                    "note": "a step of the checkpoint series (train.export_every); step 0 = the initial weights"}
            with as_saved():
                path = ckpt.export_step(model.encoder, out, step, card)
            log.line(f"exported step {step} to {path}")

    if tc.export_every and start == 0:
        export_series(0)
    flops_per_token = None
    window = {"t": time.perf_counter(), "tokens": 0, "steps": 0, "stats": {}}
    last_stats: dict = {}
    total_tokens = 0
    bar = _progress(tc, start, elapsed0, rank)
    log.bar = bar
    step = start
    done = step >= tc.steps or budget_spent()
    while not done:
        lr = lr_at(step, tc, elapsed())
        for group in optimizer.param_groups:
            group["lr"] = lr
        count_flops = window["steps"] == 0 and not tc.compile  # first step of each log window (the mix changes)
        loss, stats = None, {}
        for micro in range(tc.accumulate):  # train.accumulate batches, one optimizer step (gradients summed)
            batches = {
                "mono": mono.next_batch(dc.mono_batch) if mono else None,
                "pairs": pairs.next_batch(dc.pair_batch) if pairs else None,
            }
            # micro 0's seeds are those of a run without accumulation
            gen_seed = tc.seed * 1_000_003 + step * 7919 + micro * 104_651
            inputs = model.prepare(batches, lambda name, s=gen_seed: torch.Generator().manual_seed(s + _salt(name)))
            inputs = slice_inputs(inputs, rank, world)
            inputs = _to_device(inputs, device)
            torch.manual_seed(gen_seed + rank * 104_729 + 17)  # dropout stream of this step, micro-batch and rank
            ctx = StepContext(step=step, seed=tc.seed, rank=rank, world=world, device=device, micro=micro)
            counter = FlopCounterMode(display=False) if count_flops and micro == 0 else None
            if counter is not None:
                counter.__enter__()
            # DDP: gradients are all-reduced once, on the last micro-batch
            sync = world == 1 or micro == tc.accumulate - 1
            with (contextlib.nullcontext() if sync else net.no_sync()):
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=tc.bf16):
                    part, part_stats = net(inputs, ctx)
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
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if weights is not None:
            weights.masters_to_weights()
        step += 1
        if not math.isfinite(float(loss.detach())):
            raise UserError(f"loss became {float(loss.detach())} at step {step}; lower train.lr or check the data")
        window["tokens"] += stats["tokens"] * world
        total_tokens += stats["tokens"] * world
        window["steps"] += 1
        for k, v in stats.items():
            if k != "tokens":
                window["stats"][k] = window["stats"].get(k, 0.0) + float(v)
        window["stats"]["loss"] = window["stats"].get("loss", 0.0) + float(loss.detach())
        if grad_norm is not None:
            window["stats"]["grad_norm"] = window["stats"].get("grad_norm", 0.0) + float(grad_norm)
        done = step >= tc.steps or budget_spent()
        if bar is not None:
            bar.update(min(bar.total, int(elapsed())) - bar.n if timed else 1)
            if timed:
                bar.set_postfix_str(f"step {step}", refresh=False)
        if step % tc.log_every == 0 or done:
            if device.type == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - window["t"]
            peak = max(peak, measure_peak(device, amp_dtype, reps=1))  # best rate seen: the CPU may be shared
            avg = {k: v / window["steps"] for k, v in window["stats"].items()}
            if world > 1:  # each rank's loss is its share of the global mean: average over ranks; counts: sum
                keys = sorted(avg)
                vec = torch.tensor([avg[k] for k in keys], dtype=torch.float64, device=device)
                dist.all_reduce(vec)
                avg = {k: float(v) / (1 if k in model.summed_stats else world) for k, v in zip(keys, vec.tolist())}
                if "grad_norm" in window["stats"]:
                    avg["grad_norm"] = window["stats"]["grad_norm"] / window["steps"]  # identical on every rank
            tok_s = window["tokens"] / dt
            flops_s = (flops_per_token or 0.0) * window["tokens"] / world / dt
            last_stats = {"step": step, **avg, "lr": lr, "tokens_per_s": tok_s,
                          "flops_per_s": flops_s, "mfu": flops_s / peak, "s_per_step": dt / window["steps"]}  # fmt: skip
            if timed:
                last_stats["elapsed_s"] = elapsed()
            log.record(last_stats)
            parts = " ".join(f"{k} {v:.3f}" for k, v in avg.items() if k not in ("loss", "grad_norm"))
            where = f"{step} ({elapsed():.0f}/{tc.max_seconds:.0f} s)" if timed else f"{step}/{tc.steps}"
            msg = (f"step {where} | loss {avg['loss']:.4f} | {parts} | lr {last_stats['lr']:.2e} | "
                   f"{tok_s:,.0f} tok/s | {flops_s / 1e9:.1f} GFLOP/s = {100 * flops_s / peak:.0f} % of peak | "
                   f"{dt / window['steps']:.2f} s/step")  # fmt: skip
            log.line(msg)
            window = {"t": time.perf_counter(), "tokens": 0, "steps": 0, "stats": {}}
        if tc.export_every and (step % tc.export_every == 0 or done):
            export_series(step)
        if step % tc.save_every == 0 or done or step == tc.stop_after:
            save(step)
        if tc.stop_after is not None and step >= tc.stop_after:
            log.line(f"stopped after step {step} (train.stop_after); continue with --resume")
            break
    if bar is not None:
        bar.close()
    log.bar = None
    if step == 0 and rank == 0:  # no step at all: the initial weights (a random-init control)
        with as_saved():
            ckpt.export_model(model.encoder, out)
        log.line("no training steps: exported the initial (random) weights")
    if timed and step > start:
        log.line(f"stopped after step {step}: {elapsed():.1f} s of the {tc.max_seconds:g} s budget (train.max_seconds)")
    if rank == 0:
        _write_card(out, cfg, last_stats)
    return {"step": step, "out": str(out), "tokens": total_tokens, "seconds": round(elapsed() - elapsed0, 1),
            **last_stats}  # fmt: skip


def _progress(tc, start: int, elapsed0: float, rank: int):
    """A terminal progress bar: steps, or seconds of the budget under ``max_seconds``."""
    if rank != 0 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    if tc.max_seconds is not None:
        total = max(1, round(tc.max_seconds))
        return tqdm(total=total, initial=min(total, int(elapsed0)), unit="s", dynamic_ncols=True)
    return tqdm(total=tc.steps, initial=start, unit="step", dynamic_ncols=True)


def _salt(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode()) % 1_000_000


def _streams_needed(cfg: PretrainConfig) -> set[str]:
    from xeval.engine.objectives import OBJECTIVES

    unknown = sorted(set(cfg.objectives) - set(OBJECTIVES))
    if unknown:
        raise ConfigError(f"unknown objective(s) {unknown}; expected some of {sorted(OBJECTIVES)}")
    if not cfg.objectives:
        raise ConfigError("no objectives configured")
    return {OBJECTIVES[name].data for name in cfg.objectives}


def _check_layers(cfg: PretrainConfig) -> None:
    """Contrast layers against the model's depth before any data is read (the objectives check again)."""
    from xeval.engine.objectives.base import resolve_layer

    depth = int(cfg.model.get("num_hidden_layers", XevalConfig().num_hidden_layers))
    for name, default in (("xlco", "2/3"), ("seqcl", depth), ("tokcl", depth)):
        if name in cfg.objectives:
            resolve_layer(cfg.objectives[name].get("layer", default), depth, f"objectives.{name}.layer")


def _to_device(inputs: dict, device: torch.device) -> dict:
    if device.type == "cpu":
        return inputs
    return {n: {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in d.items()}
            for n, d in inputs.items()}  # fmt: skip


def _write_card(out: Path, cfg: PretrainConfig, last: dict | None = None) -> None:
    """``xeval_pretrain.json``: what trained this checkpoint (config, corpora, last logged numbers)."""
    from xeval.base.atomic import write_json

    where = "the shared data" if cfg.data.layout == "shared" else f"the {cfg.data.layout} corpora"
    write_json(out / "xeval_pretrain.json", {"config": cfg.to_dict(), "last": last or {},
               "note": f"trained by xeval's engine on parallel/ and monolingual/ of {where} only"})  # fmt: skip
