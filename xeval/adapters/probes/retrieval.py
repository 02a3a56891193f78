"""Tatoeba sentence retrieval, every layer from one forward pass, and the retrieval core the other probes share.

Conventions (docs/conventions.md "Probes", XTREME's ``third_party/evaluate_retrieval.py``):

- a sentence vector is the mean of one layer's token states, over all tokens including the special ones (XTREME)
  or over word tokens only (``include_special: false``); the choice is recorded;
- cosine similarity = inner product of L2-normalised float32 vectors, searched exactly with FAISS ``IndexFlatIP``
  (XTREME searches ``IndexFlatL2`` on normalised vectors: the same ranking);
- top-1 accuracy in both directions; a direction names its query side. en→xx is XTREME's official score: the xx
  sentences are indexed and each English sentence queries them, so the prediction file has one predicted xx
  line index (0-based) per English line, ``<task>/test-<lang>.tsv``. Line i of one side translates line i of
  the other, so the gold index of query i is i. XTREME's download sorts the English side (the gold order is
  withheld there): those pairs are predicted and exported, never scored (``gold_order_known``).

Metrics (percentages): ``accuracy`` = en→xx (the official number), ``accuracy_en_xx``, ``accuracy_xx_en``,
``accuracy_mean`` (their mean).

Layers: ``hidden_states[k]``. XTREME's script probes ``--specific_layer 7`` of the last 12 states, i.e.
``hidden_states[8]`` of a 12-layer model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from xeval.adapters.probes import base as probes
from xeval.cards import label_free as unscored
from xeval.data.tatoeba import gold_order_known
from xeval.results.outcomes import Outcomes

# options beyond probes.DEFAULTS (xeval.run.checks checks --set keys against them): --set center=true also scores
# after mean-centring each language (raw and centred both stored); --set xsim=true adds LASER's margin-based
# error rates (xsim_*, lower is better; the flores card turns it on)
EXTRA_OPTIONS = {"center": False, "xsim": False}

# --------------------------------------------------------------------------- retrieval core (plain arrays)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Row-wise L2-normalised float32 copy of x [N, H] (zero rows stay zero); a scipy sparse x stays sparse (CSR:
    the char n-gram baseline's TF-IDF rows, ``xeval.models.charngram``)."""
    if sparse.issparse(x):
        from sklearn.preprocessing import normalize

        return normalize(x.astype(np.float32).tocsr(), norm="l2", axis=1, copy=True)
    x = np.array(x, dtype=np.float32, copy=True, order="C")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


def search(queries: np.ndarray, database: np.ndarray, k: int = 1, normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Exact k-nearest neighbours by cosine: FAISS ``IndexFlatIP`` over (normalised) float32 vectors.

    queries [Nq, H], database [Nd, H] -> (similarities [Nq, k] float32, indices [Nq, k] int64), best first.
    Sparse rows (scipy) are searched by ``sparse_search``: the same exact cosine ranking.
    """
    if sparse.issparse(queries) or sparse.issparse(database):
        q = l2_normalize(queries) if normalize else sparse.csr_matrix(queries, dtype=np.float32)
        d = l2_normalize(database) if normalize else sparse.csr_matrix(database, dtype=np.float32)
        return sparse_search(q, d, k)
    import faiss

    q = l2_normalize(queries) if normalize else np.ascontiguousarray(queries, dtype=np.float32)
    d = l2_normalize(database) if normalize else np.ascontiguousarray(database, dtype=np.float32)
    index = faiss.IndexFlatIP(d.shape[1])
    index.add(d)
    return index.search(q, min(k, d.shape[0]))


def sparse_search(queries, database, k: int = 1, chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Exact k-nearest neighbours by inner product of sparse rows (2**20 hashed n-gram features do not fit FAISS's
    dense index): queries [Nq, F] and database [Nd, F] scipy CSR -> (similarities [Nq, k] float32, indices [Nq, k]
    int64), best first, ties to the lower index. Query rows go in chunks so only [chunk, Nd] is ever dense."""
    k = min(k, database.shape[0])
    sims = np.zeros((queries.shape[0], k), dtype=np.float32)
    idx = np.zeros((queries.shape[0], k), dtype=np.int64)
    db_t = database.T.tocsc()
    for start in range(0, queries.shape[0], chunk):
        block = np.asarray((queries[start:start + chunk] @ db_t).todense(), dtype=np.float32)  # [chunk, Nd]
        order = np.argsort(-block, axis=1, kind="stable")[:, :k]
        idx[start:start + len(block)] = order
        sims[start:start + len(block)] = np.take_along_axis(block, order, axis=1)
    return sims, idx


def dense_similarities(queries, database) -> np.ndarray:
    """All cosines [Nq, Nd] float32 of rows already L2-normalised, dense or sparse."""
    sims = queries @ database.T
    return np.asarray(sims.todense() if sparse.issparse(sims) else sims, dtype=np.float32)


def top1(queries: np.ndarray, database: np.ndarray) -> np.ndarray:
    """Index of the most similar database row for each query: int64 [Nq]."""
    return search(queries, database, k=1)[1][:, 0]


def accuracy(predicted: np.ndarray, gold: np.ndarray | None = None) -> float:
    """Top-1 accuracy in percent; gold defaults to 0..N-1 (line i translates line i)."""
    predicted = np.asarray(predicted)
    gold = np.arange(len(predicted)) if gold is None else np.asarray(gold)
    return 100.0 * float((predicted == gold).mean()) if len(predicted) else 0.0


def bidirectional_scores(xx: np.ndarray, en: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
    """Tatoeba scores of one layer. xx [N, H], en [N, H], row i of one translating row i of the other.

    Returns (metrics, en→xx predictions int64 [N]: for each English line the predicted xx line).
    """
    en2xx, xx2en = both_directions(xx, en)
    return direction_scores(en2xx, xx2en), en2xx


def both_directions(xx: np.ndarray, en: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(en→xx, xx→en) top-1 predictions, int64 [N] each."""
    return top1(en, xx), top1(xx, en)  # English queries, xx indexed: XTREME's official direction first


def direction_scores(en2xx: np.ndarray, xx2en: np.ndarray) -> dict[str, float]:
    a_en2xx, a_xx2en = accuracy(en2xx), accuracy(xx2en)
    return {
        "accuracy": a_en2xx,
        "accuracy_en_xx": a_en2xx,
        "accuracy_xx_en": a_xx2en,
        "accuracy_mean": (a_en2xx + a_xx2en) / 2,
    }


def tatoeba_outcomes(en2xx: np.ndarray, xx2en: np.ndarray, centered: tuple | None = None):
    """Per-line outcomes: line i's gold is i in both directions; the prediction stored is en→xx (official).
    ``centered``: the (en→xx, xx→en) predictions after mean-centring, scored as ``centered_*``."""
    gold = np.arange(len(en2xx))
    out = Outcomes([str(i) for i in gold], gold.tolist(), np.asarray(en2xx).tolist())
    for prefix, (a, b) in (("", (en2xx, xx2en)), ("centered_", centered or (None, None))):
        if a is None:
            continue
        en_xx, xx_en = 100.0 * (a == gold), 100.0 * (b == gold)
        for name, score in (("accuracy", en_xx), ("accuracy_en_xx", en_xx), ("accuracy_xx_en", xx_en),
                            ("accuracy_mean", (en_xx + xx_en) / 2)):
            out.add(prefix + name, "mean", score=score)
    return out


def margin_predictions(queries: np.ndarray, database: np.ndarray, k: int = 4) -> np.ndarray:
    """Nearest database row of each query by LASER's ratio margin (Artetxe & Schwenk 2019, "Margin-based Parallel
    Corpus Mining"; LASER's xsim): margin(x, y) = cos(x, y) / ((mean cos of x to its k nearest database rows +
    mean cos of y to its k nearest query rows) / 2), k = 4 as xsim's default. queries [Nq, H], database [Nd, H] ->
    int64 [Nq]. Dense: FLORES/Tatoeba sides are ~1,000 sentences."""
    q, d = l2_normalize(queries), l2_normalize(database)
    sims = dense_similarities(q, d)  # [Nq, Nd] cosine
    kq, kd = min(k, sims.shape[1]), min(k, sims.shape[0])
    knn_q = -np.sort(-sims, axis=1)[:, :kq].mean(axis=1)  # [Nq] each query's k nearest database rows
    knn_d = -np.sort(-sims, axis=0)[:kd, :].mean(axis=0)  # [Nd] each database row's k nearest queries
    margin = sims / ((knn_q[:, None] + knn_d[None, :]) / 2)
    return margin.argmax(axis=1).astype(np.int64)


def xsim_scores(xx: np.ndarray, en: np.ndarray, k: int = 4) -> dict[str, float]:
    """xsim-style error rates (percent of queries whose margin-nearest neighbour is not their translation), both
    directions and their mean; ``xsim`` = en→xx like ``accuracy``."""
    gold = np.arange(xx.shape[0])
    en_xx = 100.0 - accuracy(margin_predictions(en, xx, k), gold)
    xx_en = 100.0 - accuracy(margin_predictions(xx, en, k), gold)
    return {"xsim": en_xx, "xsim_en_xx": en_xx, "xsim_xx_en": xx_en, "xsim_mean": (en_xx + xx_en) / 2}


def center(x: np.ndarray) -> np.ndarray:
    """x [N, H] minus its mean vector: one language's sentences centred on their own mean (Libovický et al.
    2020, "On the Language Neutrality of Pre-trained Multilingual Representations"), which removes what the
    language adds to every sentence vector alike."""
    return x - x.mean(axis=0, keepdims=True)


# --------------------------------------------------------------------------- the probe


@dataclass
class Retrieved:
    """One layer's retrieval: metrics (with ``centered_*`` when asked), predictions of both directions, outcomes."""

    layer: int
    metrics: dict[str, float]
    en2xx: np.ndarray
    xx2en: np.ndarray
    outcomes: object


def tatoeba_layers(encoder, xx_texts: list[str], en_texts: list[str], layers: list[int], options: dict):
    """Yield a ``Retrieved`` for every layer, from one encoding of both sides. ``options["center"]``: also score
    after centring each side on its own mean (raw and centred both reported; the prediction file stays raw)."""
    sides = probes.side_vectors(encoder, [list(xx_texts), list(en_texts)], layers, options)  # per layer [xx, en]
    for layer, (xx, en) in zip(layers, sides):
        en2xx, xx2en = both_directions(xx, en)
        metrics = direction_scores(en2xx, xx2en)
        if options.get("xsim"):
            metrics.update(xsim_scores(xx, en))
        centered = None
        if options.get("center") and not sparse.issparse(xx):  # centring densifies 2**20 n-gram features: not run
            centered = both_directions(center(xx), center(en))
            metrics.update({f"centered_{k}": v for k, v in direction_scores(*centered).items()})
        # inputs: each line's English query (the official en->xx direction) and the sentence it should find
        yield Retrieved(layer, metrics, en2xx, xx2en, tatoeba_outcomes(en2xx, xx2en, centered).with_inputs(
            [[e, x] for e, x in zip(en_texts, xx_texts)]))


def run(card, langs, ctx) -> list:
    options = probes.probe_options(card, ctx, extra=EXTRA_OPTIONS)
    layered = getattr(ctx.encoder, "layered", True)
    if not layered:
        options = {**options, "center": False}  # see tatoeba_layers: no centred scores for sparse n-gram rows
    config = {
        "probe": "tatoeba",
        **probes.sentence_config(options, ctx.encoder),
        "similarity": "cosine: inner product of L2-normalised float32 vectors",
        "index": "faiss.IndexFlatIP (exact)" if layered else "exact sparse inner product (the same ranking)",
        "official_direction": "en->xx (English queries, xx indexed)",
        **({"center": "centered_* metrics: each side minus its own mean vector"} if options["center"] else {}),
        **({"xsim": "xsim_* = error rate (%) of LASER's ratio-margin nearest neighbour, k=4"} if options["xsim"] else {}),
    }

    def evaluate(lang, pairs, layers):
        xx, en = [p.src for p in pairs], [p.tgt for p in pairs]
        known = gold_order_known(pairs)
        for got in tatoeba_layers(ctx.encoder, xx, en, layers, options):
            # XTREME's submission file: one predicted xx line index (0-based) per English line
            tsv = "".join(f"{int(p)}\n" for p in got.en2xx)
            if known:
                # the gold of that file: English line i's translation is xx line i (aligned pairs)
                gold = "".join(f"{i}\n" for i in range(len(pairs)))
                yield probes.LayerResult(got.layer, got.metrics, len(pairs), files={f"test-{lang}.tsv": tsv},
                                         gold_files={f"test-{lang}.tsv": gold}, outcomes=got.outcomes)
            else:  # XTREME's download: the English side is sorted, the gold order unknown
                yield probes.LayerResult(got.layer, {}, len(pairs), files={f"test-{lang}.tsv": tsv},
                                         extra=unscored.extra("the English side is sorted (XTREME's "
                                                              "tatoeba_preprocess): the gold order is withheld"))

    # the config differs with centring, so a centred run stores units of its own beside the raw-only ones
    return probes.sweep(card, langs, ctx, config, evaluate)
