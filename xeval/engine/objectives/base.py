"""What every objective shares: the token ids it needs, the step context, input building and masking.

An objective is a small ``nn.Module`` with two methods:

- ``prepare(batch, gen) -> dict`` runs on the CPU over the *global* batch (all ranks build the same one) with a
  generator seeded by (seed, step): masking is therefore identical for any number of processes and needs no state
  to resume. Tensors with a leading batch dimension are later sliced per rank; 0-d tensors (global counts) are not.
- ``forward(inputs, owner, ctx) -> (loss, stats)`` runs on the device over this rank's slice. ``owner`` is the
  ``PretrainModel`` (encoder + shared heads). Losses that average over tokens divide by the *global* count times the
  world size, so DDP's gradient averaging reproduces the single-process gradient exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import torch
import torch.distributed as dist
import torch.nn as nn

from xeval.base.errors import ConfigError
from xeval.engine.streams import pad


@dataclass(frozen=True)
class TokenInfo:
    vocab_size: int
    pad: int
    bos: int
    eos: int
    unk: int
    mask: int
    first_normal: int  # ids >= first_normal (except mask) are ordinary pieces: random replacements come from them

    @classmethod
    def from_tokenizer(cls, tok) -> TokenInfo:
        ids = {t: tok.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
        return cls(tok.get_vocab_size(), ids["<pad>"], ids["<s>"], ids["</s>"], ids["<unk>"], ids["<mask>"],
                   max(ids["<s>"], ids["<pad>"], ids["</s>"], ids["<unk>"]) + 1)  # fmt: skip

    def special_mask(self, ids: torch.Tensor) -> torch.Tensor:
        return (ids < self.first_normal) | (ids == self.mask)


@dataclass
class StepContext:
    step: int
    seed: int
    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")
    micro: int = 0  # index of the micro-batch within an optimizer step (train.accumulate); once-per-step work at 0
    pair_buckets: int = 1  # data.pair_buckets: length groups a pair batch's sides are encoded in
    cache: dict = field(default_factory=dict)  # forward passes shared by objectives within this step


class Objective(nn.Module):
    data = "mono"  # which stream feeds it: "mono" (packed monolingual rows) or "pairs" (translation pairs)
    summed_stats: tuple[str, ...] = ()  # stats that are counts: summed over ranks in the log, not averaged

    def __init__(self, cfg: dict, tokens: TokenInfo):
        super().__init__()
        self.cfg, self.tokens = cfg, tokens
        self.weight = float(cfg.get("weight", 1.0))

    def build_heads(self, owner) -> None:
        """Create the shared heads this objective needs in ``owner.heads`` (if another objective has not)."""

    def prepare(self, batch, gen: torch.Generator) -> dict:
        raise NotImplementedError

    def forward(self, inputs: dict, owner, ctx: StepContext):
        raise NotImplementedError


def resolve_layer(value, depth: int, where: str) -> int:
    """A contrast layer: an int k in 1..depth (output of layer k), or a depth fraction such as ``2/3`` (YAML reads
    it as the string "2/3"; rounded, at least 1) so that one preset scales over sizes. Deeper than the model, or
    not a layer at all, is a ConfigError: silently using the last layer would make an ablation lie."""
    if isinstance(value, str) and "/" in value:
        try:
            frac = Fraction(value.replace(" ", ""))
        except (ValueError, ZeroDivisionError):
            raise ConfigError(f"{where}: expected a layer number or a fraction of the depth like 2/3, got {value!r}") from None
        if not 0 < frac <= 1:
            raise ConfigError(f"{where}: the depth fraction {value} must lie in (0, 1]")
        return max(1, round(frac * depth))
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise ConfigError(f"{where}: expected a layer number or a fraction of the depth like 2/3, got {value!r}")
    layer = int(value)
    if not 1 <= layer <= depth:
        raise ConfigError(f"{where}: layer {layer} does not exist in a model of {depth} layers (use 1..{depth} or a "
                          f"fraction of the depth like 2/3)")  # fmt: skip
    return layer


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from every rank in rank order, without gradients (identity in a single process)."""
    if not _distributed():
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """``gather`` through which gradients flow back to the rank that owns each row (the backward sums every rank's
    gradient of its slice), so in-batch negatives span the global batch as in one process."""
    if not _distributed():
        return x
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(x.contiguous()))


def mask_tokens(ids: torch.Tensor, tokens: TokenInfo, prob: float, gen: torch.Generator,
                mask_frac: float = 0.8, random_frac: float = 0.1):  # fmt: skip
    """BERT / XLM-R masking: choose ``prob`` of the non-special tokens; of those 80 % -> <mask>, 10 % -> a random
    ordinary piece, 10 % unchanged. Returns (inputs, labels) with labels = -100 where no prediction is made."""
    special = tokens.special_mask(ids)
    chosen = (torch.rand(ids.shape, generator=gen) < prob) & ~special  # (B, T)
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    r = torch.rand(ids.shape, generator=gen)
    to_mask = chosen & (r < mask_frac)
    to_random = chosen & (r >= mask_frac) & (r < mask_frac + random_frac)
    inputs = ids.masked_fill(to_mask, tokens.mask)
    random_ids = torch.randint(tokens.first_normal, tokens.vocab_size - 1, ids.shape, generator=gen)
    random_ids = random_ids + (random_ids >= tokens.mask).long()  # skip <mask> when it is not the last id
    inputs = torch.where(to_random, random_ids.clamp(max=tokens.vocab_size - 1), inputs)
    return inputs, labels


def mono_inputs(batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Packed monolingual rows have no padding: ids (B, T) and an all-ones attention mask."""
    ids, _langs = batch
    return ids, torch.ones_like(ids)


def concat_pairs(batch, tokens: TokenInfo) -> tuple[torch.Tensor, torch.Tensor]:
    """``<s> A </s></s> B </s>`` per pair (XLM-R's pair template), right-padded: ids, attention mask (B, T)."""
    rows = [[tokens.bos, *a, tokens.eos, tokens.eos, *b, tokens.eos] for a, b in zip(batch.src, batch.tgt)]
    return pad(rows, tokens.pad)


def single_side(rows, tokens: TokenInfo) -> tuple[torch.Tensor, torch.Tensor]:
    """``<s> A </s>`` per row, right-padded: ids, attention mask (B, T)."""
    return pad([[tokens.bos, *r, tokens.eos] for r in rows], tokens.pad)


def pool(h: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """Sentence vector of one layer: (B, T, C), (B, T) -> (B, C); "cls" = first token, "mean" = mean of non-pad."""
    if how == "cls":
        return h[:, 0]
    m = mask.to(h.dtype)[..., None]
    return (h * m).sum(1) / m.sum(1).clamp(min=1)
