"""Bilingual lexicon induction (word translation retrieval) with MUSE dictionaries: a word-level probe.

A word's vector at a layer is the mean of its subword states, the word encoded alone (special tokens left out
of the mean). Every source word of the dictionary queries the target words of the dictionary (cosine nearest
neighbour, FAISS ``IndexFlatIP``, the retrieval core of ``xeval.adapters.probes.retrieval``); precision@1 counts a
source word as correct when its nearest target word is one of its gold translations (MUSE's rule for words with
several translations); precision@5 likewise among the 5 nearest.

Differences from MUSE's own evaluation, which retrieves from a 200k-word target vocabulary with static
embeddings and CSLS: the candidates here are the dictionary's target words (no vocabulary file exists for a
contextual encoder), and retrieval is plain nearest neighbour. Recorded in ``config``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from xeval.adapters.probes import base as probes
from xeval.adapters.probes.retrieval import search
from xeval.results.outcomes import Outcomes


def word_vectors(encoder, words: list[str], layers: list[int], batch_size: int = 64) -> np.ndarray:
    """float32 [len(layers), len(words), H]: mean of each word's subword states, from one forward pass per batch."""
    out = np.zeros((len(layers), len(words), encoder.hidden_size), dtype=np.float32)
    states = encoder.word_piece_states([[w] for w in words], layers=layers, batch_size=batch_size)
    for k, (s, _) in enumerate(states):  # s [L, n_subwords, H]
        if s.shape[1]:
            out[:, k] = s.mean(axis=1)
    return out


def word_hits(src_vectors: np.ndarray, tgt_vectors: np.ndarray, src_words: list[str], tgt_words: list[str],
              gold: dict[str, set[str]], ks=(1, 5)) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """({k: bool [N_src], whether a gold translation is among the word's k nearest targets}, nearest [N_src, k])."""
    _, nearest = search(src_vectors, tgt_vectors, k=max(ks))  # [N_src, k]
    hits = {k: np.array([any(tgt_words[j] in gold[w] for j in row[:k] if j >= 0) for w, row in zip(src_words, nearest)],
                        dtype=bool) for k in ks}
    return hits, nearest


def precision_at_k(src_vectors: np.ndarray, tgt_vectors: np.ndarray, src_words: list[str], tgt_words: list[str],
                   gold: dict[str, set[str]], ks=(1, 5)) -> dict[str, float]:
    """{"precision_at_<k>": percent of source words with a gold translation among their k nearest targets}."""
    hits, _ = word_hits(src_vectors, tgt_vectors, src_words, tgt_words, gold, ks)
    return {f"precision_at_{k}": 100.0 * int(h.sum()) / max(1, len(src_words)) for k, h in hits.items()}


def lexicon_outcomes(src_words, tgt_words, gold, hits, nearest):
    """Per source word: gold translations, the nearest target, 0/100 per precision@k."""
    out = Outcomes(list(src_words), [sorted(gold[w]) for w in src_words],
                   [tgt_words[row[0]] if len(row) and row[0] >= 0 else "" for row in nearest])
    for k, h in hits.items():
        out.add(f"precision_at_{k}", "mean", score=100.0 * h)
    return out


def _pairs(examples) -> list[tuple[str, str]]:
    out = []
    for e in examples:
        out.append((e.src, e.tgt) if hasattr(e, "src") else (e[0], e[1]))
    return out


def lexicon_layers(encoder, pairs: list[tuple[str, str]], layers: list[int], batch_size: int = 64):
    """Yield (layer, metrics, source words, candidates, per-word outcomes) per layer from one encoding of the
    dictionary's words."""
    gold: dict[str, set[str]] = defaultdict(set)
    for s, t in pairs:
        gold[s].add(t)
    src_words = list(dict.fromkeys(s for s, _ in pairs))
    tgt_words = list(dict.fromkeys(t for _, t in pairs))
    vectors = word_vectors(encoder, src_words + tgt_words, layers, batch_size)
    n = len(src_words)
    for row, layer in enumerate(layers):
        hits, nearest = word_hits(vectors[row, :n], vectors[row, n:], src_words, tgt_words, gold)
        metrics = {f"precision_at_{k}": 100.0 * int(h.sum()) / max(1, n) for k, h in hits.items()}
        yield layer, metrics, len(src_words), len(tgt_words), lexicon_outcomes(src_words, tgt_words, gold, hits,
                                                                               nearest)


def run(card, langs, ctx) -> list:
    options = probes.probe_options(card, ctx)
    config = {
        "probe": "lexicon_induction",
        "word_vector": "mean of the word's subword states, word encoded alone, special tokens left out",
        "retrieval": "nearest neighbour by cosine (faiss.IndexFlatIP); MUSE uses CSLS",
        "candidates": "target words of the dictionary (MUSE: 200k-word vocabulary)",
    }

    def evaluate(lang, examples, layers):
        pairs = _pairs(examples)
        for layer, metrics, n_src, n_tgt, outcomes in lexicon_layers(ctx.encoder, pairs, layers,
                                                                     int(options["batch_size"])):
            yield probes.LayerResult(layer, metrics, n_src, outcomes=outcomes,
                                     extra={"n_source_words": n_src, "n_candidates": n_tgt, "n_pairs": len(pairs)})

    return probes.sweep(card, langs, ctx, config, evaluate)
