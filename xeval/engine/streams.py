"""Batches for the objectives, deterministic and resumable: ``MonoStream`` (packed monolingual rows), ``PairStream``
(translation pairs) and ``pad``.

Every random choice comes from a numpy ``Generator`` whose state is JSON (saved in checkpoints), each language's
line order is a permutation derived from (seed, language, epoch), and a stream's position is a few integers per
language, so ``--resume`` continues with exactly the batches an uninterrupted run would see. Languages (pair keys)
are drawn with p_j ∝ m_j^alpha (``corpus.sampling_probs``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import torch

from xeval.engine.corpus import sampling_probs


class _Cursor:
    """Walks one language's lines in a permutation fixed by (seed, key, epoch); state = (epoch, pos)."""

    def __init__(self, n: int, seed: int, key: str, epoch: int = 0, pos: int = 0):
        self.n, self.seed, self.key, self.epoch, self.pos = n, seed, key, epoch, pos
        self._perm = self._permutation()

    def _permutation(self) -> np.ndarray:
        return np.random.default_rng([self.seed, zlib.crc32(self.key.encode()), self.epoch]).permutation(self.n)

    def next(self) -> int:
        if self.pos >= self.n:
            self.epoch, self.pos = self.epoch + 1, 0
            self._perm = self._permutation()
        i = int(self._perm[self.pos])
        self.pos += 1
        return i


class MonoStream:
    """Packed monolingual sequences: each row ``<s> line </s> line </s> ... </s>`` of exactly ``seq_len`` ids from
    one language drawn with p_j ∝ m_j^alpha; a line that does not fit continues in that language's next row."""

    def __init__(self, texts: dict[str, list[str]], tokenizer, seq_len: int, alpha: float = 0.7, seed: int = 0):
        self.texts, self.tok, self.seq_len, self.seed = texts, tokenizer, seq_len, seed
        self.probs = sampling_probs({k: len(v) for k, v in texts.items()}, alpha)
        self.langs = list(self.probs)
        self.p = np.array([self.probs[k] for k in self.langs])
        self.rng = np.random.default_rng(seed)
        self.cursors = {k: _Cursor(len(texts[k]), seed, "mono:" + k) for k in self.langs}
        self.offset = dict.fromkeys(self.langs, 0)  # tokens of the current line already used
        self.current = dict.fromkeys(self.langs, -1)  # index of the current line (-1: none)
        self.bos, self.eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")

    def _line_ids(self, lang: str, index: int) -> list[int]:
        return self.tok.encode(self.texts[lang][index], add_special_tokens=False).ids + [self.eos]

    def _row(self, lang: str) -> list[int]:
        need, out = self.seq_len - 2, []
        while len(out) < need:
            if self.current[lang] < 0:
                self.current[lang], self.offset[lang] = self.cursors[lang].next(), 0
            full = self._line_ids(lang, self.current[lang])
            take = full[self.offset[lang] : self.offset[lang] + need - len(out)]
            out += take
            self.offset[lang] += len(take)
            if self.offset[lang] >= len(full):
                self.current[lang] = -1
        return [self.bos] + out + [self.eos]

    def next_batch(self, batch_size: int) -> tuple[torch.Tensor, list[str]]:
        """(B, T) ids and the language of each row."""
        langs = [self.langs[i] for i in self.rng.choice(len(self.langs), size=batch_size, p=self.p)]
        rows = [self._row(lang) for lang in langs]
        return torch.tensor(rows, dtype=torch.long), langs

    def state_dict(self) -> dict:
        return {
            "rng": self.rng.bit_generator.state,
            "cursors": {k: [c.epoch, c.pos] for k, c in self.cursors.items()},
            "current": dict(self.current),
            "offset": dict(self.offset),
        }

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for k, (epoch, pos) in state["cursors"].items():
            self.cursors[k] = _Cursor(len(self.texts[k]), self.seed, "mono:" + k, epoch, pos)
        self.current.update(state["current"])
        self.offset.update(state["offset"])


@dataclass
class PairBatch:
    src: list[list[int]]  # token ids without specials
    tgt: list[list[int]]
    keys: list[str]  # "en-de" ...
    swapped: list[bool]  # True when src is the key's second language
    texts: list[tuple[str, str]]  # (src text, tgt text), in src/tgt order


class PairStream:
    """Translation pairs: key j drawn with p_j ∝ m_j^alpha, direction flipped with probability 1/2, each side
    truncated to ``max_side`` tokens."""

    def __init__(self, pairs: dict[str, list[tuple[str, str]]], tokenizer, max_side: int, alpha=0.7, seed=0):
        self.pairs, self.tok, self.max_side, self.seed = pairs, tokenizer, max_side, seed
        self.probs = sampling_probs({k: len(v) for k, v in pairs.items()}, alpha)
        self.keys = list(self.probs)
        self.p = np.array([self.probs[k] for k in self.keys])
        self.rng = np.random.default_rng([seed, 1])
        self.cursors = {k: _Cursor(len(pairs[k]), seed, "pairs:" + k) for k in self.keys}

    def next_batch(self, batch_size: int) -> PairBatch:
        keys = [self.keys[i] for i in self.rng.choice(len(self.keys), size=batch_size, p=self.p)]
        flips = self.rng.random(batch_size) < 0.5
        texts = []
        for key, flip in zip(keys, flips):
            a, b = self.pairs[key][self.cursors[key].next()]
            texts.append((b, a) if flip else (a, b))
        enc_a = self.tok.encode_batch([t[0] for t in texts], add_special_tokens=False)
        enc_b = self.tok.encode_batch([t[1] for t in texts], add_special_tokens=False)
        return PairBatch(
            [e.ids[: self.max_side] for e in enc_a], [e.ids[: self.max_side] for e in enc_b],
            keys, [bool(f) for f in flips], texts,
        )  # fmt: skip

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "cursors": {k: [c.epoch, c.pos] for k, c in self.cursors.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for k, (epoch, pos) in state["cursors"].items():
            self.cursors[k] = _Cursor(len(self.pairs[k]), self.seed, "pairs:" + k, epoch, pos)


def pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest row: ids (B, T) and attention mask (B, T)."""
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask
