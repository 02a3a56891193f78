"""What ``xeval run --mode probe`` reads out of the frozen encoder (``xeval.adapters.transfer.probe_mode``): every
requested layer's hidden states from one forward pass (``hidden_rows``), through the run's encoding cache
(``cached_rows``), and per task type the rows a head is fitted on (``WordReadout``: each word's first subword;
``PairReadout``: the pooled pair) with their labels, and how a head's predictions map back to the examples."""

from __future__ import annotations

import numpy as np
import torch

from xeval.adapters.transfer.backbone import accepts_token_types
from xeval.adapters.transfer.fine_tuning import collate
from xeval.base.bf16_support import warn_slow_bf16
from xeval.base.errors import ConfigError
from xeval.base.hashing import hash_json
from xeval.models.encoding_cache import EncodingCache

# ----------------------------------------------------------------------------------------------------- encoding


@torch.inference_mode()
def hidden_rows(encoder, feats: list[dict], layers: list[int], readout, batch_size: int = 64,
                dtype=np.float32, precision: str = "fp32") -> np.ndarray:
    """[len(layers), rows, H] read out of every layer from ONE forward pass per batch (length-sorted batches).

    readout: "mean" (mean over the attention mask, special tokens included), "cls" (the first token), or a list
    with the token positions to keep for each input (rows = those positions, inputs in order). precision "bf16":
    the forward pass under bf16 autocast (``encoding_autocast``), the rows read out in float32 as always."""
    positions = None if isinstance(readout, str) else readout
    counts = [1] * len(feats) if positions is None else [len(p) for p in positions]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    out = np.zeros((len(layers), int(starts[-1]), encoder.hidden_size), dtype=dtype)
    order = sorted(range(len(feats)), key=lambda i: len(feats[i]["input_ids"]))
    pad = encoder.tokenizer.pad_token_id or 0
    token_types = accepts_token_types(encoder.model)
    for begin in range(0, len(order), batch_size):
        idx = order[begin : begin + batch_size]
        batch = collate([{k: v for k, v in feats[i].items() if k in ("input_ids", "attention_mask", "token_type_ids")}
                         for i in idx], pad)
        extra = {"token_type_ids": batch["token_type_ids"].to(encoder.device)} \
            if token_types and "token_type_ids" in batch else {}
        with encoding_autocast(encoder, precision):
            states = encoder.model(input_ids=batch["input_ids"].to(encoder.device),
                                   attention_mask=batch["attention_mask"].to(encoder.device),
                                   output_hidden_states=True, return_dict=True, **extra).hidden_states
        stacked = torch.stack([states[k] for k in layers]).float()  # [L, B, T, H]
        mask = batch["attention_mask"].to(stacked.device).float()  # [B, T]
        for row, i in enumerate(idx):
            if positions is not None:
                picked = stacked[:, row, positions[i]]  # [L, n_i, H]
            elif readout == "cls":
                picked = stacked[:, row, :1]
            else:
                m = mask[row].unsqueeze(-1)  # [T, 1]
                picked = ((stacked[:, row] * m).sum(1) / m.sum().clamp(min=1.0)).unsqueeze(1)
            out[:, starts[i] : starts[i + 1]] = picked.cpu().numpy().astype(dtype)
    return out


def encoding_autocast(encoder, precision: str):
    """The frozen encoder's forward pass under bf16 autocast (``--set precision=bf16`` in probe mode: products in
    bf16, norms, softmax and the residual stream in float32), or as it is ("fp32")."""
    device = torch.device(encoder.device).type
    if precision == "bf16" and device == "cpu":
        warn_slow_bf16("recipe precision=bf16")
    return torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16")


def cached_rows(ctx, feats: list[dict], layers: list[int], readout, dtype, precision: str = "fp32") -> np.ndarray:
    """``hidden_rows`` through the run's encoding cache, keyed by the model and everything the rows depend on
    (the exact model inputs, the readout, the dtype, the forward pass's precision where not float32)."""
    cache = getattr(ctx, "cache", None) or EncodingCache(None)
    inputs = [[f["input_ids"], f.get("token_type_ids")] for f in feats]
    spec = {"kind": "probe-rows", "inputs": hash_json(inputs), "readout": readout if isinstance(readout, str)
            else hash_json(readout), "dtype": np.dtype(dtype).name}
    if precision != "fp32":  # float32 entries keep the keys they were written under
        spec["precision"] = precision
    rows = int(len(feats) if isinstance(readout, str) else sum(len(p) for p in readout))
    out = cache.layers(ctx.encoder.cache_key, spec, layers,
                       lambda todo: hidden_rows(ctx.encoder, feats, todo, readout, dtype=dtype, precision=precision))
    return out.reshape(len(layers), rows, ctx.encoder.hidden_size)


# ------------------------------------------------------------------------------------------------ task readouts


class Readout:
    """What a task type reads out of the frozen encoder and how predictions map back to its examples."""

    dtype = np.float32
    name = ""

    def __init__(self, family):
        self.family = family

    def rows(self, examples: list, layers: list[int], ctx) -> tuple[np.ndarray, list]:
        """(features [L, rows, H], one key per row)."""
        raise NotImplementedError

    def labels(self, examples: list, keys: list) -> np.ndarray:
        raise NotImplementedError

    def predictions(self, examples: list, keys: list, predicted: np.ndarray) -> list:
        raise NotImplementedError


class WordReadout(Readout):
    """Tagging: one row per word, its first subword."""

    dtype = np.float16  # word vectors of every layer: stored half precision (read back as float32 for the head)
    name = "first subword of each word"

    def rows(self, examples, layers, ctx):
        family = self.family
        sentences = [ex.tokens for ex in examples]
        spans = family.windows(sentences)
        enc, word_ids = family.encode(sentences, spans)
        feats, positions, keys = [], [], []
        for k, (i, s, _e) in enumerate(spans):
            firsts = family.first_subwords(word_ids[k])
            feats.append({"input_ids": enc["input_ids"][k], "attention_mask": enc["attention_mask"][k]})
            positions.append(firsts)
            keys.extend((i, s + word_ids[k][t]) for t in firsts)
        return cached_rows(ctx, feats, layers, positions, self.dtype, family.recipe.precision), keys

    def labels(self, examples, keys):
        index = self.family.index
        out = []
        for i, w in keys:
            ex = examples[i]
            tag = ex.tags[w] if ex.tags is not None else None
            if tag not in index:
                raise ConfigError(f"{ex.source}:{ex.line}: tag {tag!r} is not one of {', '.join(self.family.labels)} "
                                  f"(the task's label set)")
            out.append(index[tag])
        return np.asarray(out, dtype=np.int64)

    def predictions(self, examples, keys, predicted):
        labels = self.family.labels
        fallback = "O" if "O" in self.family.index else labels[0]  # a word that kept no subword at all (rare)
        tags: list[dict[int, str]] = [{} for _ in examples]
        for (i, w), p in zip(keys, predicted):
            tags[i][w] = labels[int(p)]
        return [[tags[i].get(w, fallback) for w in range(len(ex.tokens))] for i, ex in enumerate(examples)]


class PairReadout(Readout):
    """Pair classification: one row per pair, pooled over ``[CLS] a [SEP] b [SEP]``."""

    def __init__(self, family):
        super().__init__(family)
        self.pooling = family.recipe.probe_pooling
        self.name = {"mean": "mean over all tokens of the pair (special tokens included)",
                     "cls": "first token ([CLS] / <s>)"}[self.pooling]

    def rows(self, examples, layers, ctx):
        feats = self.family.encode(examples)
        return cached_rows(ctx, feats, layers, self.pooling, self.dtype, self.family.recipe.precision), \
            list(range(len(examples)))

    def labels(self, examples, keys):
        index = self.family.index
        for ex in examples:
            if ex.label not in index:
                raise ConfigError(f"{ex.source}:{ex.line}: label {ex.label!r} is not one of "
                                  f"{', '.join(self.family.labels)}")
        return np.asarray([index[ex.label] for ex in examples], dtype=np.int64)

    def predictions(self, examples, keys, predicted):
        return [self.family.labels[int(p)] for p in predicted]


READOUTS = {"words": WordReadout, "pair": PairReadout}  # by TaskType.probe_readout ("span": probe_mode's span probe)
