"""BUCC 2018 bitext mining by ratio margin (Artetxe & Schwenk 2019), as XTREME's ``third_party/utils_retrieve.py``.

For L2-normalised sentence vectors x (source) and y (target), with the k = 4 nearest neighbours searched in both
directions (FAISS, exact cosine),

    margin(x, y) = cos(x, y) / ((mean cos(x, NN_k(x) in y) + mean cos(y, NN_k(y) in x)) / 2)

Every source sentence proposes its best-margin target among its k neighbours, and every target its best source;
these candidates are taken greedily by decreasing margin, each sentence at most once ("max" retrieval). The
threshold is the one that maximises F1 against the gold (midpoint between the scores of the last kept and the
next candidate), pairs scoring at least the threshold are predicted, and F1 counts predicted (src id, tgt id)
pairs in the gold. Like XTREME, identical sentences are encoded and mined once, and a sentence that occurs under
several ids maps to none (its pairs are dropped): ``text_load_unify`` + ``read_sent2id``.

The threshold follows XTREME's protocol (``scripts/run_bucc2018.sh``): it is tuned on the **dev** gold (the F1 of a
dev record is therefore the tuned, optimistic one, as XTREME prints it) and the test corpus of the same language is
mined with that dev threshold, at the same layer. A test record stores the threshold it used and where it came from
(``extra.threshold`` / ``extra.threshold_from``); it is scored when the test gold is there, else (the official test
gold is not public) it is label-free: the mined pairs are exported as ``bucc2018/test-<lang>.tsv``, never scored.

Because the test gold is withheld, the tuned dev F1 is usually the only BUCC number one can compute, and it is
optimistic by construction. A dev record therefore also carries ``f1_held_out``: the source sentences are split in
two halves (alternately, in sorted id order), each half's candidates are cut at the threshold tuned on the *other*
half's gold, and the pooled predictions are scored against the whole gold. It estimates what XTREME's protocol
(a threshold carried from dev to an unseen corpus) gives, without tuning on the pairs it scores; the gap to ``f1``
is (usually) the tuning's optimism. Not part of XTREME: xeval's addition, stored beside the official number. It is
left out where a half has no mined gold pair (nothing to tune a threshold on).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from xeval.adapters.probes import base as probes
from xeval.adapters.probes.retrieval import l2_normalize, search
from xeval.base.errors import ConfigError
from xeval.cards import label_free as unscored

K = 4


def ratio_margin_candidates(x: np.ndarray, y: np.ndarray, k: int = K) -> list[tuple[int, int, float]]:
    """Mined (source row, target row, margin) candidates, best first, one-to-one. x [Nx, H], y [Ny, H]."""
    x, y = l2_normalize(x), l2_normalize(y)
    x2y_sim, x2y_ind = search(x, y, k, normalize=False)  # [Nx, k]
    y2x_sim, y2x_ind = search(y, x, k, normalize=False)  # [Ny, k]
    x2y_mean, y2x_mean = x2y_sim.mean(axis=1), y2x_sim.mean(axis=1)
    fwd = x2y_sim / ((x2y_mean[:, None] + y2x_mean[x2y_ind]) / 2)  # margins of each source's k candidates
    bwd = y2x_sim / ((y2x_mean[:, None] + x2y_mean[y2x_ind]) / 2)
    fwd_best = x2y_ind[np.arange(x.shape[0]), fwd.argmax(axis=1)]
    bwd_best = y2x_ind[np.arange(y.shape[0]), bwd.argmax(axis=1)]
    src = np.concatenate([np.arange(x.shape[0]), bwd_best])
    tgt = np.concatenate([fwd_best, np.arange(y.shape[0])])
    scores = np.concatenate([fwd.max(axis=1), bwd.max(axis=1)])
    seen_src, seen_tgt, out = set(), set(), []
    for i in np.argsort(-scores, kind="stable"):
        s, t = int(src[i]), int(tgt[i])
        if s not in seen_src and t not in seen_tgt:
            seen_src.add(s)
            seen_tgt.add(t)
            out.append((s, t, float(scores[i])))
    return out


def best_threshold(candidates: list[tuple[str, str, float]], gold: set[tuple[str, str]]) -> float:
    """The margin threshold with the best F1 on ``gold`` (XTREME's ``bucc_optimize``), candidates best first."""
    best_f1, threshold, correct = 0.0, 0.0, 0
    for n, (s, t, score) in enumerate(candidates, start=1):
        correct += (s, t) in gold
        if correct:
            precision, recall = correct / n, correct / len(gold)
            f1 = 2 * precision * recall / (precision + recall)
            if f1 > best_f1:
                best_f1 = f1
                following = candidates[n][2] if n < len(candidates) else score
                threshold = (score + following) / 2
    return threshold


def held_out_threshold_scores(candidates: list[tuple[str, str, float]], gold: set[tuple[str, str]],
                               source_ids) -> dict[str, float] | None:
    """Scores of the two-fold threshold (module docstring): ``f1_held_out`` with its precision and recall, and the
    two thresholds; None when a half has no correct candidate, so no threshold can be tuned on it (its gold is
    empty, or no gold pair was mined: ``best_threshold`` would fall back to 0 and keep everything)."""
    fold = {sid: i % 2 for i, sid in enumerate(sorted(source_ids))}
    halves = [[c for c in candidates if fold.get(c[0]) == f] for f in (0, 1)]
    gold_halves = [{g for g in gold if fold.get(g[0]) == f} for f in (0, 1)]
    if not all(any((s, t) in gold_halves[f] for s, t, _ in halves[f]) for f in (0, 1)):
        return None
    thresholds = [best_threshold(halves[f], gold_halves[f]) for f in (0, 1)]
    predicted = [(s, t) for f in (0, 1) for s, t, score in halves[1 - f] if score >= thresholds[f]]
    scores = pair_scores(predicted, gold)
    return {"f1_held_out": scores["f1"], "precision_held_out": scores["precision"],
            "recall_held_out": scores["recall"], "thresholds_held_out": thresholds}


def pair_scores(predicted: list[tuple[str, str]], gold: set[tuple[str, str]]) -> dict[str, float]:
    """Precision, recall and F1 (percentages) of predicted id pairs against the gold pairs."""
    # Same definition as XTREME's evaluate.py ``bucc_f1`` (sets of pairs); 0 when nothing is correct.
    correct = len(gold & set(predicted))
    if not correct:
        return {"f1": 0.0, "precision": 0.0, "recall": 0.0}
    precision, recall = correct / len(set(predicted)), correct / len(gold)
    return {"f1": 100 * 2 * precision * recall / (precision + recall), "precision": 100 * precision,
            "recall": 100 * recall}


def unify(sentences: dict[str, str]) -> tuple[list[str], list[str | None]]:
    """Unique texts (first-seen order) and, per unique text, its id, or None when several ids share the text."""
    counts = Counter(sentences.values())
    texts, ids, seen = [], [], set()
    for sid, text in sentences.items():
        if text not in seen:
            seen.add(text)
            texts.append(text)
            ids.append(sid if counts[text] == 1 else None)
    return texts, ids


def mine_layers(encoder, corpus, layers: list[int], options: dict, k: int = K, thresholds: dict | None = None):
    """Yield (layer, metrics, predicted id pairs, threshold, held-out) per layer, from one encoding of both sides. The
    threshold is tuned on the corpus gold unless ``thresholds`` gives it per layer (test: the dev threshold); metrics
    are empty when the corpus has no gold. Held-out: ``held_out_threshold_scores`` where the threshold is tuned
    here, else None."""
    src_texts, src_ids = unify(corpus.src)
    tgt_texts, tgt_ids = unify(corpus.tgt)
    gold = {(s, t) for s, t in corpus.gold}
    sides = probes.side_vectors(encoder, [src_texts, tgt_texts], layers, options)  # per layer [source, target]
    for layer, (src, tgt) in zip(layers, sides):
        mined = ratio_margin_candidates(src, tgt, k)
        candidates = [(src_ids[s], tgt_ids[t], score) for s, t, score in mined
                      if src_ids[s] is not None and tgt_ids[t] is not None]
        threshold = thresholds[layer] if thresholds is not None else best_threshold(candidates, gold)
        predicted = [(s, t) for s, t, score in candidates if score >= threshold]
        held_out = held_out_threshold_scores(candidates, gold, corpus.src) if thresholds is None and gold else None
        yield layer, (pair_scores(predicted, gold) if gold else {}), predicted, threshold, held_out


def run(card, langs, ctx) -> list:
    options = probes.probe_options(card, ctx)
    config = {
        "probe": "bucc2018",
        **probes.sentence_config(options, ctx.encoder),
        "margin": "ratio",
        "k": K,
        "retrieval": "max (both directions, greedy one-to-one)",
        "index": "faiss.IndexFlatIP (exact cosine)" if getattr(ctx.encoder, "layered", True) else
                 "exact sparse inner product (the same ranking)",
        "threshold": "tuned on the dev gold, applied to test at the same layer (XTREME's protocol)",
        "held_out_threshold": "dev: f1_held_out, each half of the source sentences cut at the other half's tuned "
                              "threshold (alternate ids in sorted order; none where a half has no mined gold pair; "
                              "xeval's addition)",
    }
    tuned: dict[tuple[str, int], float] = {}  # (language, layer) -> dev threshold, from this run

    def dev_threshold(lang: str, layer: int) -> float:
        if (lang, layer) not in tuned:  # a dev record stored by an earlier run
            stored = ctx.store.get(probes.unit_for(card, lang, "dev", ctx, layer))
            if stored is None or "threshold" not in (stored.extra or {}):
                raise ConfigError(f"{card.name} {lang}: mining the {card.split_for(lang)} corpus needs the dev "
                                  f"threshold (XTREME's protocol), but this data has no {lang} dev corpus")
            tuned[(lang, layer)] = float(stored.extra["threshold"])
        return tuned[(lang, layer)]

    def evaluate(lang, loaded, layers):
        corpus = loaded[0]  # the data layer returns the BuccCorpus in a one-element list
        on_dev = corpus.split == "dev"
        given = None if on_dev else {layer: dev_threshold(lang, layer) for layer in layers}
        for layer, metrics, predicted, threshold, held_out in mine_layers(ctx.encoder, corpus, layers, options,
                                                                          thresholds=given):
            tsv = "".join(f"{s}\t{t}\n" for s, t in predicted)  # XTREME's bucc2018/test-<lang>.tsv
            if on_dev:
                tuned[(lang, layer)] = threshold
            extra = {"threshold": threshold, "threshold_from": "dev gold (this corpus)" if on_dev else
                     "dev (same language and layer)", "n_predicted": len(predicted), "n_src": len(corpus.src),
                     "n_tgt": len(corpus.tgt)}
            if held_out is not None:  # the F1 beside the official one; its precision, recall, thresholds in extra
                metrics = {**metrics, "f1_held_out": held_out.pop("f1_held_out")}
                extra.update(held_out)
            if not corpus.gold:
                extra.update(unscored.extra("no gold pairs for this corpus (XTREME withholds the test gold)"))
            yield probes.LayerResult(layer, metrics, len(corpus.gold) or len(corpus.src),
                                     files={f"test-{lang}.tsv": tsv}, extra=extra)

    return probes.sweep(card, langs, ctx, config, evaluate, always_select=True)
