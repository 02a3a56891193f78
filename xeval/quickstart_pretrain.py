"""Pre-train a tiny encoder on a synthetic world within a wall-clock budget, from the engine's parts.

Why not ``xeval.engine.train.pretrain``: it reads the shared corpora layout (gettext, Multi30k, WMT, man pages) and
stops after a number of steps. The quickstart must finish in a stated time on whatever CPU it meets, so it stops
on a *time* budget, and it reads the world's own corpora (``monolingual/<lang>.txt.gz``,
``parallel/<base>-<lang>.tsv.gz``). Everything else is the engine's: tokenizer training (``build_tokenizer``),
language sampling (p_j ∝ m_j^0.7) and streams, the model and objectives (``PretrainModel``), AdamW groups and the
checkpoint export, so the checkpoint loads through xeval's Encoder and ``AutoModel.from_pretrained``.

Schedule: the learning rate warms up over the first ``warmup`` of the run and decays linearly to 0 at its end,
where "progress" is the larger of elapsed/seconds and step/max_steps; with ``seconds=None`` it is a plain step
schedule (deterministic, used by the tests).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from xeval.atomic import write_json
from xeval.errors import UserError

# Objectives that give cross-lingual transfer quickly at this scale: masked LM on monolingual rows, plus a
# sequence-level contrast of translation pairs (VECO 2.0's, in-batch negatives, mean pooling). Measured on the
# quickstart world (2 shared CPU cores, ~250 steps): MLM+TLM stays on the unigram plateau (retrieval at the level
# of shared word forms) while MLM+contrast reaches ~99 % retrieval and ~80 % lexicon induction.
DEFAULT_OBJECTIVES = {"mlm": {"weight": 1.0, "mask_prob": 0.15},
                      "seqcl": {"weight": 1.0, "temperature": 0.05, "pooling": "mean"}}  # fmt: skip


@dataclass
class PretrainPlan:
    """What decides the checkpoint (hashed into the quickstart's resume key)."""

    objectives: dict = field(default_factory=lambda: {k: dict(v) for k, v in DEFAULT_OBJECTIVES.items()})
    model: dict = field(default_factory=lambda: {
        "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 128,
        "max_position_embeddings": 256, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
    })  # fmt: skip  (no dropout: a few hundred steps do not overfit, and attention dropout is ~25 % slower on CPU)
    vocab_size: int = 800  # ~ the words of the quickstart world's 4 languages: near word-level pieces
    tokenizer_lines: int = 20000
    seq_len: int = 64
    pair_max_side: int = 40
    mono_batch: int = 16
    pair_batch: int = 32  # in-batch negatives of the contrast
    lr: float = 5e-3
    warmup: float = 0.06  # share of the run
    weight_decay: float = 0.01
    clip: float = 1.0
    alpha: float = 0.7
    seconds: float | None = 120.0  # wall-clock budget of the training loop (None: steps only)
    max_steps: int = 100_000  # 0: no training (a random-init control of the same shape)
    seed: int = 0

    def as_json(self) -> dict:
        return asdict(self)


def read_world_corpora(world: str | Path) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, str]]]]:
    """(monolingual lines per language, translation pairs per ``base-lang`` key) of a synthetic world.

    The sides of pairs also count as monolingual text of their language (as the engine's ``pairs_as_mono``)."""
    from xeval.data.corpora import iter_monolingual, iter_parallel_tsv

    world = Path(world)
    mono = {p.name.split(".")[0]: list(iter_monolingual(p)) for p in sorted((world / "monolingual").glob("*.txt.gz"))}
    pairs = {}
    for path in sorted((world / "parallel").glob("*-*.tsv.gz")):
        pairs[path.name.split(".")[0]] = [(p.src, p.tgt) for p in iter_parallel_tsv(path)]
    if not mono:
        raise UserError(f"{world}: expected monolingual/<lang>.txt.gz corpora of a synthetic world, found none")
    for key, rows in pairs.items():
        for side, lang in enumerate(key.split("-")):
            mono.setdefault(lang, []).extend(r[side] for r in rows)
    return mono, pairs


def lr_factor(progress: float, warmup: float) -> float:
    """Linear warm-up over ``warmup`` of the run, then linear decay to 0 at progress 1."""
    if progress < warmup:
        return max(progress / warmup, 0.01)
    return max(0.0, (1.0 - progress) / max(1e-9, 1.0 - warmup))


def pretrain_world(world: str | Path, out: str | Path, plan: PretrainPlan,
                   progress: Callable[[int, float, dict], None] | None = None, log=print) -> dict:  # fmt: skip
    """Train the tokenizer and the encoder into ``out`` (tokenizer files, config.json, model.safetensors) and
    return a summary (steps, seconds, tokens, last losses). ``progress(step, fraction, stats)`` after each step."""
    from xeval.engine.data import MonoStream, PairStream
    from xeval.engine.model import XevalConfig
    from xeval.engine.objectives import PretrainModel, StepContext, TokenInfo
    from xeval.engine.tokenizer import build_tokenizer, load_tokenizer
    from xeval.engine.train import param_groups

    world, out = Path(world), Path(out)
    t_start = time.perf_counter()
    mono_files = sorted(str(p) for p in (world / "monolingual").glob("*.txt.gz"))
    build_tokenizer(mono_files, out, vocab_size=plan.vocab_size, sample_lines=plan.tokenizer_lines,
                    alpha=plan.alpha, seed=plan.seed, log=lambda text: log(f"  {text}"))  # fmt: skip
    tok = load_tokenizer(out)
    tokens = TokenInfo.from_tokenizer(tok)
    mono, pairs = read_world_corpora(world)
    needs = {"mono": False, "pairs": False}
    from xeval.engine.objectives import OBJECTIVES

    for name in plan.objectives:
        if name not in OBJECTIVES:
            raise UserError(f"unknown objective {name!r}; expected some of {sorted(OBJECTIVES)}")
        needs[OBJECTIVES[name].data] = True
    if needs["pairs"] and not pairs:
        raise UserError(f"{world}: the objectives {sorted(plan.objectives)} need translation pairs; the world has none")
    mono_stream = MonoStream(mono, tok, plan.seq_len, plan.alpha, plan.seed) if needs["mono"] else None
    pair_stream = PairStream(pairs, tok, plan.pair_max_side, plan.alpha, plan.seed) if needs["pairs"] else None

    config = XevalConfig(**{**plan.model, "vocab_size": tok.get_vocab_size(), "pad_token_id": tokens.pad,
                            "bos_token_id": tokens.bos, "eos_token_id": tokens.eos})  # fmt: skip
    torch.manual_seed(plan.seed)
    model = PretrainModel(config, plan.objectives, tokens, [tok.id_to_token(i) for i in range(tok.get_vocab_size())])
    optimizer = torch.optim.AdamW(param_groups(model, plan.weight_decay), lr=plan.lr, betas=(0.9, 0.98), eps=1e-6)
    model.train()

    t_loop = time.perf_counter()
    step, n_tokens, stats_sum, last = 0, 0, {}, {}

    def done_fraction() -> float:
        by_time = (time.perf_counter() - t_loop) / plan.seconds if plan.seconds else 0.0
        return min(1.0, max(by_time, step / plan.max_steps if plan.max_steps > 0 else 1.0))

    while done_fraction() < 1.0:
        batches = {"mono": mono_stream.next_batch(plan.mono_batch) if mono_stream else None,
                   "pairs": pair_stream.next_batch(plan.pair_batch) if pair_stream else None}  # fmt: skip
        seed = plan.seed * 1_000_003 + step * 7919
        inputs = model.prepare(batches, lambda name, s=seed: torch.Generator().manual_seed(s + _salt(name)))
        factor = lr_factor(done_fraction(), plan.warmup)
        for group in optimizer.param_groups:
            group["lr"] = plan.lr * factor
        torch.manual_seed(seed + 17)  # dropout stream of this step
        loss, stats = model(inputs, StepContext(step=step, seed=plan.seed))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), plan.clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        loss = loss.detach()
        if not math.isfinite(float(loss)):
            raise UserError(f"pre-training loss became {float(loss)} at step {step}; lower the learning rate")
        n_tokens += int(stats.pop("tokens", 0))
        stats = {"loss": float(loss), **{k: float(v) for k, v in stats.items()}}
        for k, v in stats.items():
            stats_sum[k] = stats_sum.get(k, 0.0) + v
        if step % 20 == 0:
            last = {k: v / 20 for k, v in stats_sum.items()}
            stats_sum = {}
        if progress is not None:
            progress(step, done_fraction(), last or stats)
    from xeval.engine.checkpoint import export_model

    model.eval()
    export_model(model.encoder, out)
    summary = {
        "steps": step, "tokens": n_tokens, "train_seconds": round(time.perf_counter() - t_loop, 1),
        "total_seconds": round(time.perf_counter() - t_start, 1), "last": last or stats_sum,
        "parameters": sum(p.numel() for p in model.encoder.parameters()), "vocab_size": tok.get_vocab_size(),
        "objectives": sorted(plan.objectives), "threads": torch.get_num_threads(),
    }  # fmt: skip
    write_json(out / "pretrain_summary.json", summary)
    return summary


def _salt(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode()) % 1_000_000
