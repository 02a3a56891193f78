"""Everything a pre-training run needs before its first step, built in one fixed order by ``setup``: the config
(the saved one on ``--resume``), the corpora, the tokenizer, the data streams, the model, AdamW and its schedule
(``lr_at``), the restored state, the precision wrapper, and the devices (``torchrun``: one process a device, DDP).

The order is part of the run: ``torch.manual_seed(train.seed)`` comes right before the model is built, and
everything random after it (masking, dropout) is reseeded from (seed, step), so the same config gives the same
weights bit for bit (``engine/train_loop.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.distributed as dist

from xeval.base import allocator
from xeval.base.atomic import write_json
from xeval.base.bf16_support import warn_slow_bf16
from xeval.base.errors import ConfigError, UserError
from xeval.engine import checkpoint as ckpt
from xeval.engine.cleaning import CleanConfig
from xeval.engine.config import PretrainConfig, config_diff
from xeval.engine.corpus import (
    Corpora,
    balanced_sample,
    corpus_diff,
    corpus_identity,
    data_root,
    load_corpora,
    load_dictionaries,
)
from xeval.engine.dropout import use_sfc64
from xeval.engine.hf_init import (
    InitModel,
    apply_init,
    check_lengths,
    check_resumed_init,
    load_init_weights,
    read_init,
)
from xeval.engine.model import XevalConfig
from xeval.engine.objectives import OBJECTIVES, PretrainModel, TokenInfo
from xeval.engine.objectives.base import resolve_layer
from xeval.engine.precision import BF16Weights
from xeval.engine.runlog import Logger, measure_peak, write_card
from xeval.engine.streams import MonoStream, PairStream
from xeval.engine.tokenizer import coverage, load_tokenizer, save_tokenizer, train_tokenizer

# What --resume may change: the step / time budget and how often to log and save (none of them changes a number).
RESUME_MAY_CHANGE = ("steps", "stop_after", "threads", "log_every", "max_seconds", "save_every", "keep",
                     "export_every")


@dataclass
class Run:
    """A run ready to train: what ``setup`` built, as the loop reads it."""

    cfg: PretrainConfig  # the saved config on --resume (with the budget and logging changes allowed)
    out: Path
    rank: int
    world: int
    device: torch.device
    log: Logger
    model: PretrainModel  # the encoder and the objectives' heads
    net: torch.nn.Module  # what the forward runs through: the model, or its DDP wrapper under torchrun
    optimizer: torch.optim.Optimizer
    weights: BF16Weights | None  # train.bf16_weights: bf16 weights, fp32 masters in the optimiser
    as_saved: Callable[[], contextlib.AbstractContextManager]  # inside it, the model holds what checkpoints save
    mono: MonoStream | None
    pairs: PairStream | None
    start: int  # the first step (the saved one on --resume)
    elapsed0: float  # loop seconds of the run before this resume (time budgets)
    amp_dtype: torch.dtype
    peak: float  # the best matmul FLOP/s measured so far: utilisation is measured against it
    corpus: dict  # the corpus files' identities (corpus.corpus_identity), saved with each state for --resume
    init: dict | None = None  # model.init: the init folder and its weights' SHA-256 (InitModel.provenance)


def setup(cfg: PretrainConfig, out: Path, resume: bool, rank: int, world: int, device: torch.device,
          echo=None) -> Run:  # fmt: skip
    """Build the run; writes the log, the tokenizer and the run card into ``out``."""
    if cfg.train.accumulate < 1:
        raise ConfigError(f"train.accumulate must be at least 1, got {cfg.train.accumulate}")
    init, init_lines = None, []
    if cfg.model.get("init"):  # continued pre-training: the init model's shape, checked before anything is written
        init = read_init(cfg.model["init"])
        cfg, init_lines = apply_init(cfg, init)
        check_lengths(cfg, streams_needed(cfg))
    cfg, state_path, elapsed0 = resumed_config(cfg, out, resume)
    provenance = init.provenance() if init is not None else None  # the folder and its weights' SHA-256
    if provenance is not None and state_path is not None:
        check_resumed_init(out, provenance)
    tc, dc = cfg.train, cfg.data
    check_layers(cfg)  # before anything is written
    if world > 1 and tc.head_warmup:  # DDP's reducer is built over the weights that train at its construction
        raise ConfigError(f"train.head_warmup is single-process only; found {tc.head_warmup} under {world} processes")
    root = data_root(dc)
    corpus = corpus_identity(root, dc)
    unchecked = state_path is not None and check_corpus(state_path, corpus, out)
    out.mkdir(parents=True, exist_ok=True)
    log = Logger(out, rank, echo)
    # first line: what is trained (after null / weight-0 removals), so an ablation's log shows what it left out
    log.line(f"pretrain {cfg.name} size {cfg.size}: objectives "
             + ", ".join(f"{n} (weight {float(o.get('weight', 1.0)):g})" for n, o in cfg.objectives.items()))
    if rank == 0:
        for stale in ckpt.clean_partial_states(out):
            log.line(f"removed {stale}: a checkpoint write that never finished")
    for line in init_lines:
        log.line(line)
    if unchecked:
        log.line(f"note: {state_path} records no corpus identities (saved by an older xeval): the corpora are not "
                 "checked against the ones it was trained on")
    t0 = time.time()
    needs = streams_needed(cfg)
    corpora = load_corpora(root, dc.parallel, dc.monolingual, dc.languages, CleanConfig(**dc.clean),
                           max_lines=dc.max_lines, seed=tc.seed, pairs_as_mono=dc.pairs_as_mono,
                           layout=dc.layout)  # fmt: skip
    log.line(f"{world} process(es) on {device}; data {root} "
             f"({len(corpora.mono)} monolingual languages, {len(corpora.pairs)} pair keys, {time.time() - t0:.0f}s)")  # fmt: skip
    for line in corpora.log_lines():
        log.line(line)
    log.line(f"allocator: {allocator.describe()}")  # changes no number, only memory and speed (xeval.base.allocator)
    tok = prepare_tokenizer(cfg, out, root, corpora, log, rank, world, init)
    tokens = TokenInfo.from_tokenizer(tok)
    if "mono" in needs:
        for line in corpora.mix_lines(tok):
            log.line(line)
    mono, pairs = build_streams(cfg, corpora, tok, needs, log)

    model_cfg = model_config(cfg, corpora, tok, tokens)
    # tell tokenizer users the model's length limit (an init model's tokenizer files stay as they were)
    if rank == 0 and model_cfg.position_embedding == "absolute" and init is None:
        save_tokenizer(tok, out, model_max_length=model_cfg.max_position_embeddings)
    model = build_model(cfg, model_cfg, root, corpora, tok, tokens, device, log, init)
    optimizer = build_optimizer(model, tc, device)
    start = 0
    if state_path is not None:
        start = restore_state(state_path, model, optimizer, mono, pairs, log)
    # bf16_weights: the trained weights themselves in bf16, fp32 masters in the optimiser (engine/precision.py);
    # after the resume, so the masters carry the restored weights and moments
    weights = BF16Weights(model, optimizer) if tc.bf16_weights else None
    as_saved = weights.masters_in_model if weights else contextlib.nullcontext  # checkpoints hold the fp32 masters
    if tc.compile:
        model.encoder.compile()
    net = wrap_ddp(model, world, device)
    n_params = sum(p.numel() for p in model.encoder.parameters())
    amp_dtype = torch.bfloat16 if tc.bf16 else torch.float32
    if tc.bf16 and torch.device(device).type == "cpu":
        warn_slow_bf16("train.bf16")
    peak = measure_peak(device, amp_dtype)
    log.line(f"encoder {n_params / 1e6:.2f}M parameters ({model_cfg.num_hidden_layers} x {model_cfg.hidden_size}, "
             f"vocab {model_cfg.vocab_size}); objectives {', '.join(cfg.objectives)}; matmul peak "
             f"{peak / 1e9:.1f} GFLOP/s ({'bf16' if tc.bf16 else 'fp32'}, {torch.get_num_threads()} threads)")  # fmt: skip
    if rank == 0:
        write_card(out, cfg, init=provenance)
    return Run(cfg, out, rank, world, device, log, model, net, optimizer, weights, as_saved, mono, pairs, start,
               elapsed0, amp_dtype, peak, corpus, provenance)  # fmt: skip


# --------------------------------------------------------------------------------------------------- config
def resumed_config(cfg: PretrainConfig, out: Path, resume: bool) -> tuple[PretrainConfig, Path | None, float]:
    """(the config to train, the state to resume from or None, the loop seconds already spent). On ``--resume``:
    the saved config, with only the budget and logging/saving settings (``RESUME_MAY_CHANGE``) taken from ``cfg``."""
    state_path = ckpt.latest_state(out) if resume else None
    if state_path is None and (out / "state" / "latest").is_file():
        raise UserError(f"{out}: holds a training run already; pass --resume to continue it or choose a new --out")
    if state_path is None:
        return cfg, None, 0.0
    state_json = ckpt.read_state_json(state_path)
    saved = state_json.get("config")
    if not isinstance(saved, dict) or not isinstance(saved.get("train"), dict):
        raise UserError(f"{state_path / 'state.json'}: expected the run's 'config' object, found none")
    changes = {k: getattr(cfg.train, k) for k in RESUME_MAY_CHANGE}
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
    return cfg, state_path, float(state_json.get("elapsed_s", 0.0))


def check_corpus(state_path: Path, corpus: dict, out: Path) -> bool:
    """Refuse a resume whose corpus files differ from the ones the saved run read (one line, like a changed config);
    True when the state records none (an older xeval saved it)."""
    saved = ckpt.read_state_json(state_path).get("corpus")
    if not isinstance(saved, dict):
        return True
    diff = corpus_diff(saved, corpus)
    if diff:
        raise UserError(f"{out}: --resume with corpora that differ from the saved run's ({diff}); the data it was "
                        "reading must stay as it was: resume with the same files or choose a new --out")
    return False


def streams_needed(cfg: PretrainConfig) -> set[str]:
    """The data the objectives read: "mono" and/or "pairs"."""
    unknown = sorted(set(cfg.objectives) - set(OBJECTIVES))
    if unknown:
        raise ConfigError(f"unknown objective(s) {unknown}; expected some of {sorted(OBJECTIVES)}")
    if not cfg.objectives:
        raise ConfigError("no objectives configured")
    return {OBJECTIVES[name].data for name in cfg.objectives}


def check_layers(cfg: PretrainConfig) -> None:
    """Contrast layers against the model's depth before any data is read (the objectives check again)."""
    depth = int(cfg.model.get("num_hidden_layers", XevalConfig().num_hidden_layers))
    for name, default in (("xlco", "2/3"), ("seqcl", depth), ("tokcl", depth)):
        if name in cfg.objectives:
            resolve_layer(cfg.objectives[name].get("layer", default), depth, f"objectives.{name}.layer")


# --------------------------------------------------------------------------------------------------- tokenizer
TOKENIZER_SETTINGS = "xeval_tokenizer.json"  # beside tokenizer.json: the settings it was trained with


def prepare_tokenizer(cfg: PretrainConfig, out: Path, root: Path, corpora: Corpora, log: Logger, rank: int,
                      world: int, init: InitModel | None = None):  # fmt: skip
    """The init model's tokenizer (``model.init``), else ``tokenizer.path``, else the tokenizer already in ``out``,
    else train one (rank 0) into ``out``."""
    if init is not None:
        if rank == 0:
            init.copy_tokenizer(out)
            log.line(f"tokenizer: the init model's, from {init.tokenizer_dir} (the tokenizer section is not used)")
    elif cfg.tokenizer.path:
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


# --------------------------------------------------------------------------------------------------- data, model
def build_streams(cfg: PretrainConfig, corpora: Corpora, tok, needs: set[str], log: Logger):
    """(MonoStream or None, PairStream or None): the streams the objectives read, seeded by ``train.seed``."""
    tc, dc = cfg.train, cfg.data
    mono = MonoStream(corpora.mono, tok, dc.seq_len, dc.alpha, tc.seed) if "mono" in needs else None
    pairs = PairStream(corpora.pairs, tok, dc.pair_max_side, dc.alpha, tc.seed) if "pairs" in needs else None
    if ("mono" in needs and not corpora.mono) or ("pairs" in needs and not corpora.pairs):
        raise ConfigError(f"the objectives need {sorted(needs)} data but the corpora selected give none of some")
    for name, stream in (("mono", mono), ("pairs", pairs)):
        if stream is not None:
            probs = " ".join(f"{k}:{p:.3f}" for k, p in stream.probs.items())
            log.line(f"sampling {name} (alpha {dc.alpha}): {probs}")
    return mono, pairs


def model_config(cfg: PretrainConfig, corpora: Corpora, tok, tokens: TokenInfo) -> XevalConfig:
    """The encoder's config: the ``model`` section, with the tokenizer's vocabulary and special ids."""
    model_opts = dict(cfg.model)
    # an init model's embedding may have more rows than its tokenizer has ids (e5: 250,037 rows, 250,002 ids)
    vocab = int(model_opts.pop("vocab_size")) if model_opts.pop("init", None) else tok.get_vocab_size()
    if model_opts.pop("language_embeddings", False):  # XLM: one embedding per language of the corpora
        model_opts["languages"] = sorted(set(corpora.mono) | {x for key in corpora.pairs for x in key.split("-")})
    model_cfg = XevalConfig(**{**model_opts, "vocab_size": vocab, "pad_token_id": tokens.pad,
                               "bos_token_id": tokens.bos, "eos_token_id": tokens.eos})  # fmt: skip
    try:
        model_cfg.check()
    except ValueError as err:
        raise ConfigError(f"model: {err}") from None
    return model_cfg


def build_model(cfg: PretrainConfig, model_cfg: XevalConfig, root: Path, corpora: Corpora, tok, tokens: TokenInfo,
                device: torch.device, log: Logger, init: InitModel | None = None) -> PretrainModel:  # fmt: skip
    """The encoder and the objectives' heads, initialised from ``train.seed`` (the encoder, and the MLM head where
    the folder has one, then from ``model.init``), on ``device``."""
    dictionaries = {}
    if "tokcl" in cfg.objectives:
        dictionaries = load_dictionaries(cfg.data, root, list(corpora.pairs))
        log.line(f"token contrast dictionaries: {', '.join(f'{k} ({len(v)})' for k, v in dictionaries.items())}")
    pieces = [tok.id_to_token(i) for i in range(tok.get_vocab_size())]
    torch.manual_seed(cfg.train.seed)
    model = PretrainModel(model_cfg, cfg.objectives, tokens, pieces, dictionaries, cfg.train.loss_norm)
    if init is not None:  # after the seeded initialisation: heads the folder lacks keep theirs
        for line in load_init_weights(model, init):
            log.line(line)
    if cfg.train.dropout_rng == "sfc64":
        swapped, layers = use_sfc64(model)
        log.line(f"dropout masks: sfc64 ({swapped} dropout modules, {layers} attention layers)")
    model = model.to(device)
    if "tokcl" in model.objectives:  # how much of the text the dictionaries can supervise, per language pair
        cover = model.objectives["tokcl"].coverage(corpora.pairs, tok)
        log.line("token contrast coverage (first 200 pairs): " + ", ".join(
            f"{k} {c['links_per_pair']:.2f} links/pair, {100 * c['linked']:.0f} % linked" for k, c in cover.items()))
    return model


def restore_state(state_path: Path, model, optimizer, mono: MonoStream | None, pairs: PairStream | None,
                  log: Logger) -> int:  # fmt: skip
    """Weights, moments, RNG states and stream positions of the saved step; returns that step."""
    state = ckpt.load_state(state_path, model, optimizer)
    start = state["step"]
    if mono is not None:
        mono.load_state_dict(state["data"]["mono"])
    if pairs is not None:
        pairs.load_state_dict(state["data"]["pairs"])
    log.line(f"resumed from {state_path} at step {start}")
    return start


# --------------------------------------------------------------------------------------------------- optimiser
def param_groups(model, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model, tc, device: torch.device) -> torch.optim.AdamW:
    # fused: one kernel over all parameters instead of ~10 elementwise passes each (on the CPU the unfused step
    # was ~25 % of an MLM step at 4 x 256, 16k vocabulary; fused runs 5x faster); same maths up to rounding
    return torch.optim.AdamW(param_groups(model, tc.weight_decay), lr=tc.lr, betas=(tc.beta1, tc.beta2),
                             eps=tc.eps, fused=device.type in {"cpu", "cuda"})  # fmt: skip


def lr_at(step: int, cfg, elapsed: float = 0.0) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``steps``. ``step`` counts from 0.

    With ``max_seconds`` (a time budget: the number of steps is not known in advance) the decay runs over the run's
    progress, the larger of ``elapsed / max_seconds`` and ``step / steps``: lr * warm-up ramp * (1 - progress),
    so the rate reaches 0 when the budget is spent, whatever the machine's speed.

    ``head_warmup`` steps first run at ``head_warmup_lr`` (default ``lr``), constant; the schedule above then runs
    over the steps after them (its warm-up for the encoder's first updates), counted from the first of them."""
    head = getattr(cfg, "head_warmup", 0) or 0
    if head:
        if step < head:
            return cfg.head_warmup_lr if cfg.head_warmup_lr is not None else cfg.lr
        cfg = replace(cfg, steps=cfg.steps - head, head_warmup=0)
        step -= head
    if cfg.max_seconds is not None:
        progress = max(elapsed / cfg.max_seconds if cfg.max_seconds > 0 else 1.0, step / max(1, cfg.steps))
        return cfg.lr * min(1.0, (step + 1) / max(1, cfg.warmup)) * max(0.0, 1.0 - progress)
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cfg.lr * max(0.0, (cfg.steps - step) / max(1, cfg.steps - cfg.warmup))


# --------------------------------------------------------------------------------------------------- devices
def setup_distributed(device_pref: str) -> tuple[int, int, torch.device]:
    """(rank, world size, device); under ``torchrun`` (WORLD_SIZE > 1) the process group is joined."""
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


def wrap_ddp(model, world: int, device: torch.device) -> torch.nn.Module:
    """The model itself, or (several processes) its DDP wrapper."""
    if world == 1:
        return model
    return torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None,
        broadcast_buffers=False, find_unused_parameters=True,
    )  # fmt: skip
