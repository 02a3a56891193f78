"""Language neutrality per layer (card type ``neutrality``; the ``neutrality`` card reads FLORES-200 devtest), from
one forward pass over the parallel sentences of every language (all layers at once):

- **language identification**: how much language identity a layer keeps. A linear classifier
  (scikit-learn ``LogisticRegression`` on standardised mean-pooled sentence vectors) predicts the language of each
  sentence, cross-validated over 5 folds grouped by sentence (a sentence is in the test fold in every language at
  once, so no fold has seen its content). ``langid_accuracy`` (%) beside ``langid_chance`` = 100 / languages.
  One record per layer under the language ``all``.
- **linear CKA** (Kornblith et al. 2019) between each language's and English's vectors of the same sentences:
  CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F) on column-centred X, Y [N, H]; 1 = the same geometry up to rotation
  and scale. Stored as ``cka`` × 100, one record per (language, layer).

Mean-centring for retrieval (Libovický et al. 2020) is the retrieval probes' ``--set center=true``.
Deterministic: seed 0.
"""

from __future__ import annotations

import time

import numpy as np

from xeval.adapters.limits import limit_config, limited
from xeval.adapters.probes import base as probes
from xeval.base.errors import ConfigError
from xeval.results.identity import config_hash

ALL = "all"
FOLDS = 5


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA of x [N, H1] and y [N, H2] (rows paired), in 0..1."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x = x - x.mean(axis=0)
    y = y - y.mean(axis=0)
    cross = np.linalg.norm(y.T @ x) ** 2
    norm = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    return float(cross / norm) if norm > 0 else 0.0


def language_id_accuracy(vectors: np.ndarray, labels: np.ndarray, groups: np.ndarray,
                         folds: int = FOLDS) -> tuple[float, list[float]]:
    """Mean cross-validated accuracy (%) of a linear language classifier, and each fold's."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    classifier = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    scores = cross_val_score(classifier, vectors, labels, groups=groups, cv=GroupKFold(n_splits=folds))
    return 100.0 * float(np.mean(scores)), [round(100.0 * float(s), 4) for s in scores]


def run(card, langs, ctx) -> list:
    options = probes.probe_options(card, ctx)
    layers = probes.probe_layers(card, ctx)
    others = [lang for lang in langs if lang != "en"]
    if not others:
        raise ConfigError(f"{card.name}: language neutrality needs at least one language besides English")
    split = card.split_for(others[0])
    classes = ["en", *others]
    config = {"probe": "neutrality", "pooling": options["pooling"], "include_special": bool(options["include_special"]),
              "max_length": probes.max_length(options, ctx.encoder), "languages": classes,
              "langid": f"LogisticRegression on standardised vectors, {FOLDS}-fold GroupKFold by sentence",
              "cka": "linear CKA with English x 100 (Kornblith et al. 2019)", **probes.prefix_config(options)}
    limit = ctx.tasks.max_eval
    used = {**({**config, "max_eval": limit} if limit else config), **limit_config(ctx)}
    # one config hash per language; the language-ID record's covers every language's data (and the set, in config)
    data = {lang: probes.data_identity(card, lang, split, ctx) for lang in others}
    hashes = {lang: probes.unit_hash(card, lang, split, ctx, config) for lang in others}
    hashes[ALL] = config_hash(card, ctx, config, list(data.values()))
    units = {(lang, layer): probes.unit_for(card, lang, split, ctx, layer, hashes[lang])
             for layer in layers for lang in [*others, ALL]}
    fresh = {key: ctx.store.get(unit) for key, unit in units.items() if ctx.store.has(unit)}
    if len(fresh) == len(units):
        return list(fresh.values())
    start = time.perf_counter()
    texts, english = [], None
    for lang in others:
        pairs = limited(probes.load_examples(card, lang, split, ctx), limit, ctx.tasks.limit)
        if english is None:
            english = [p.tgt for p in pairs]
        if [p.tgt for p in pairs] != english:
            raise ConfigError(f"{card.name}: {lang}'s English side differs from {others[0]}'s; expected multi-way "
                              "parallel sentences (FLORES-200)")
        texts.append([p.src for p in pairs])
    n = len(english)
    every = {"languages": data}  # the language-ID record reads every language's file: its data block names them all
    vectors = probes.sentence_vectors(ctx.encoder, english + [t for side in texts for t in side], layers, options)
    labels = np.repeat(np.arange(len(classes)), n)
    groups = np.tile(np.arange(n), len(classes))
    each = (time.perf_counter() - start) / len(units)
    records = []
    for row, layer in enumerate(layers):
        en = vectors[row, :n]
        for i, lang in enumerate(others):
            if (lang, layer) in fresh:
                records.append(fresh[(lang, layer)])
                continue
            block = vectors[row, (i + 1) * n:(i + 2) * n]
            records.append(probes.make_record(card, lang, split, ctx, layer, {"cka": 100.0 * linear_cka(block, en)},
                                              n, used, each, config_hash=hashes[lang]))
        if (ALL, layer) in fresh:
            records.append(fresh[(ALL, layer)])
            continue
        accuracy, per_fold = language_id_accuracy(vectors[row], labels, groups)
        records.append(probes.make_record(card, ALL, split, ctx, layer,
                                          {"langid_accuracy": accuracy, "langid_chance": 100.0 / len(classes)},
                                          len(labels), used, each, extra={"folds": per_fold}, data=every,
                                          config_hash=hashes[ALL]))
    return records
