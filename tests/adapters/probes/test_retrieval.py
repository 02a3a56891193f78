"""Retrieval core (FAISS vs brute force, directions), Tatoeba probe end to end, BUCC margin mining."""

from __future__ import annotations

import numpy as np
import pytest

from xeval.adapters.probes.mining import (
    best_threshold,
    held_out_threshold_scores,
    pair_scores,
    ratio_margin_candidates,
    unify,
)
from xeval.adapters.probes.retrieval import bidirectional_scores, l2_normalize, search, top1
from xeval.metrics.bucc import bucc_scores


def test_faiss_top1_equals_numpy_argmax():
    rng = np.random.default_rng(0)
    q, d = rng.normal(size=(300, 24)), rng.normal(size=(500, 24)) * rng.uniform(0.1, 5, size=(500, 1))
    brute = (l2_normalize(q) @ l2_normalize(d).T).argmax(axis=1)
    assert np.array_equal(top1(q, d), brute)
    sims, ids = search(q, d, k=3)
    full = l2_normalize(q) @ l2_normalize(d).T
    assert np.array_equal(ids[:, 0], brute)
    assert np.allclose(sims, np.take_along_axis(full, ids, axis=1), atol=1e-5)
    assert (np.diff(sims, axis=1) <= 1e-6).all()  # best first


def test_directions_are_not_swapped():
    # Two xx and two English sentences. Hand-built so that the directions disagree:
    #   en0 -> xx0 (right), en1 -> xx0 (wrong): en->xx accuracy 50
    #   xx0 -> en0 (right), xx1 -> en1 (right): xx->en accuracy 100
    xx = np.array([[1.0, 0.0], [0.0, 1.0]])
    en = np.array([[1.0, 0.1], [0.8, 0.6]])  # en1 is closer to xx0 (cos .8) than to xx1 (cos .6)
    # xx1's nearest English: en1 (cos .6) beats en0 (cos .0995); xx0's: en0 (.995) beats en1 (.8)
    metrics, en2xx = bidirectional_scores(xx, en)
    assert en2xx.tolist() == [0, 0]  # one predicted xx line per English line
    assert metrics["accuracy_en_xx"] == 50.0 and metrics["accuracy"] == 50.0  # official = en->xx
    assert metrics["accuracy_xx_en"] == 100.0
    assert metrics["accuracy_mean"] == 75.0


def test_normalisation_makes_it_cosine():
    # Inner product without normalisation would pick the long vector.
    assert top1(np.array([[1.0, 0.0]]), np.array([[10.0, 10.0], [1.0, 0.01]])).tolist() == [1]


def test_margin_mining_hand_built():
    # Three sources, four targets; source k translates target k (target 3 is a distractor near everything).
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    y = np.array([[0.9, 0.1, 0.0], [0.1, 0.9, 0.1], [0.0, 0.1, 0.9], [0.5, 0.5, 0.5]])
    mined = ratio_margin_candidates(x, y, k=2)
    pairs = {(s, t) for s, t, _ in mined}
    assert pairs == {(0, 0), (1, 1), (2, 2)}  # the distractor (target 3) loses on margin: it is near everything
    scores = [score for _, _, score in mined]
    assert scores == sorted(scores, reverse=True)
    assert len({s for s, _, _ in mined}) == len(mined) == len({t for _, t, _ in mined})  # one-to-one


def test_ratio_margin_value():
    # k = 1: the margin of a mutual nearest pair is cos / ((cos + cos) / 2) = 1
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([[1.0, 0.2], [0.1, 1.0]])
    mined = ratio_margin_candidates(x, y, k=1)
    assert [(s, t) for s, t, _ in mined] and all(score == pytest.approx(1.0) for _, _, score in mined)


def test_threshold_and_f1():
    gold = {("a", "1"), ("b", "2"), ("c", "3")}
    cands = [("a", "1", 1.5), ("b", "2", 1.4), ("x", "9", 1.3), ("c", "3", 1.2), ("y", "8", 1.1)]
    th = best_threshold(cands, gold)
    # F1 after 1, 2, 3, 4, 5 candidates: .5, .8, .667, .857, .75 -> keep 4, threshold between 1.2 and 1.1
    assert th == pytest.approx(1.15)
    predicted = [(s, t) for s, t, score in cands if score >= th]
    assert pair_scores(predicted, gold) == pytest.approx(bucc_scores(gold, predicted))
    assert pair_scores(predicted, gold)["f1"] == pytest.approx(100 * 6 / 7)


def test_held_out_threshold_cuts_each_half_at_the_other_halfs_threshold():
    # Sources in sorted order a b c d x y alternate halves: a c x in half 0, b d y in half 1.
    gold = {("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")}
    cands = [("a", "1", 1.9), ("x", "7", 1.8), ("b", "2", 1.7), ("c", "3", 1.6), ("y", "8", 1.5), ("d", "4", 1.4)]
    # tuned on the whole gold: F1 after 1..6 candidates .4, .333, .571, .75, .667, .8 -> keep all six, F1 80
    assert best_threshold(cands, gold) == pytest.approx(1.4)
    # half 0 (a ok, x wrong, c ok): F1 .667, .5, .8 -> threshold 1.6; half 1 (b ok, y wrong, d ok): the same -> 1.4.
    # Half 1 cut at 1.6 keeps b; half 0 cut at 1.4 keeps a, x, c: 3 of 4 predictions right, 3 of 4 gold found.
    scores = held_out_threshold_scores(cands, gold, ["y", "x", "d", "c", "b", "a"])
    assert scores["thresholds_held_out"] == pytest.approx([1.6, 1.4])
    assert scores["f1_held_out"] == pytest.approx(75.0)
    assert scores["precision_held_out"] == pytest.approx(75.0) and scores["recall_held_out"] == pytest.approx(75.0)
    # a half without a gold pair, or whose gold pairs were not mined, has no threshold to tune: no held-out score
    assert held_out_threshold_scores(cands, {("a", "1"), ("c", "3")}, list("abcdxy")) is None
    assert held_out_threshold_scores(cands, gold | {("z", "5")}, list("abcdxyz")) is not None  # z: half 0, unmined
    assert held_out_threshold_scores(cands, {("a", "1"), ("b", "9")}, list("abcdxy")) is None  # b's pair not mined


def test_unify_drops_ambiguous_ids():
    texts, ids = unify({"s1": "hello", "s2": "world", "s3": "hello"})
    assert texts == ["hello", "world"] and ids == [None, "s2"]


# --------------------------------------------------------------------------- end to end on a tiny model


@pytest.fixture(scope="module")
def tiny_ctx(tmp_path_factory, data_root):
    import torch

    from tests.helpers.tiny import make_tiny_bert
    from xeval.adapters.context import RunContext
    from xeval.data.sources import DataRoot
    from xeval.models.encoder import Encoder
    from xeval.results.store import Store

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("probe")
    lines = []
    for name in ("deu-eng.deu", "deu-eng.eng", "afr-eng.afr"):
        lines += (data_root / "tatoeba" / f"tatoeba.{name}").read_text(encoding="utf-8").splitlines()[:150]
    model = make_tiny_bert(root / "model", texts=lines, vocab_size=600)
    return RunContext(encoder=Encoder(model), data=DataRoot.resolve(str(data_root)), store=Store(root / "runs"),
                      export_dir=root / "pred", layers=None)


def test_tatoeba_sweep_resume_and_predictions(tiny_ctx, monkeypatch):
    import copy

    from xeval.adapters.probes import retrieval
    from xeval.cards.catalog import load_card

    card = copy.deepcopy(load_card("tatoeba"))
    card.subsample = {"test": 50, "dev": 40}
    recs = retrieval.run(card, ["de", "af"], tiny_ctx)
    # a sweep also runs the selection split where it exists (FLORES-200 dev: de, not af) to choose the layer
    dev = sorted((r.unit.lang, r.unit.layer) for r in recs if r.unit.split == "dev")
    assert dev == [("de", k) for k in range(3)] and all(r.n_examples == 40 for r in recs if r.unit.split == "dev")
    recs = [r for r in recs if r.unit.split == "test"]
    assert sorted((r.unit.lang, r.unit.layer) for r in recs) == [(lang, k) for lang in ("af", "de") for k in range(3)]
    for r in recs:
        assert r.n_examples == 50 and set(r.metrics) >= {"accuracy", "accuracy_en_xx", "accuracy_xx_en"}
        assert r.config["pooling"] == "mean" and r.config["include_special"] is True
        assert r.unit.seed == 0 and r.unit.model == tiny_ctx.encoder.key
    lines = (tiny_ctx.export_dir / "layer-2" / "tatoeba" / "test-de.tsv").read_text().splitlines()
    assert len(lines) == 50 and all(0 <= int(x) < 50 for x in lines)
    # The file is what the record scored: accuracy of those predictions = the stored en->xx accuracy.
    de2 = next(r for r in recs if r.unit.lang == "de" and r.unit.layer == 2)
    assert 100 * np.mean([int(x) == i for i, x in enumerate(lines)]) == pytest.approx(de2.metrics["accuracy"])

    # the chosen layer's file (dev's best, never test's) is also the submission's <export>/tatoeba/ file
    from xeval.results.layers import choose_layers

    chosen = choose_layers(recs + [r for r in retrieval.run(card, ["de"], tiny_ctx) if r.unit.split == "dev"])
    layer = chosen[(tiny_ctx.encoder.key, "tatoeba")][0]
    assert layer.rule == "dev"
    assert (tiny_ctx.export_dir / "tatoeba" / "test-de.tsv").read_text() == \
        (tiny_ctx.export_dir / f"layer-{layer.layer}" / "tatoeba" / "test-de.tsv").read_text()

    # resume: nothing is encoded again
    monkeypatch.setattr(retrieval, "tatoeba_layers", lambda *a, **k: pytest.fail("re-encoded a stored unit"))
    again = [r for r in retrieval.run(card, ["de", "af"], tiny_ctx) if r.unit.split == "test"]
    assert sorted((r.unit.lang, r.unit.layer, r.metrics["accuracy"]) for r in again) == \
        sorted((r.unit.lang, r.unit.layer, r.metrics["accuracy"]) for r in recs)


def test_one_layer_equals_the_sweep(tiny_ctx):
    """A single-layer probe and the all-layer sweep give the same numbers for that layer."""
    from xeval.adapters.probes.retrieval import tatoeba_layers

    options = {"pooling": "mean", "include_special": False, "batch_size": 16, "max_length": None}
    xx = ["der Hund schläft", "ich bin müde", "das Haus ist groß"]
    en = ["the dog sleeps", "I am tired", "the house is big"]
    sweep = {got.layer: got.metrics for got in tatoeba_layers(tiny_ctx.encoder, xx, en, [0, 1, 2], options)}
    (single,) = tatoeba_layers(tiny_ctx.encoder, xx, en, [1], options)
    assert single.metrics == sweep[1]


def test_representation_cache(tiny_ctx, tmp_path, monkeypatch):
    from xeval.adapters.probes import base as probes

    options = {**probes.DEFAULTS, "cache_dir": str(tmp_path)}
    texts = ["a quick test", "ein schneller Test"]
    first = probes.sentence_vectors(tiny_ctx.encoder, texts, [0, 2], options)
    assert len(list(tmp_path.rglob("*.npy"))) == 2
    monkeypatch.setattr(tiny_ctx.encoder, "sentence_embeddings", lambda *a, **k: pytest.fail("cache missed"))
    again = probes.sentence_vectors(tiny_ctx.encoder, texts, [2, 0], options)
    assert np.array_equal(again, first[::-1])
    monkeypatch.undo()
    other = probes.sentence_vectors(tiny_ctx.encoder, texts, [0], {**options, "include_special": False})
    assert not np.array_equal(other[0], first[0])  # a different pooling is a different cache entry


def test_probe_layers(tiny_ctx):
    import copy

    from xeval.adapters.probes.base import probe_layers
    from xeval.base.errors import UserError
    from xeval.cards.catalog import load_card

    card = copy.deepcopy(load_card("tatoeba"))
    ctx = copy.copy(tiny_ctx)
    assert probe_layers(card, ctx) == [0, 1, 2]  # no card default for a 2-layer model: the whole sweep
    card.recipe = {**card.recipe, "layer_for_depth": {2: 1}}
    assert probe_layers(card, ctx) == [1]
    ctx.layers = [-1, 0]
    assert probe_layers(card, ctx) == [2, 0]
    ctx.layers = "all"
    assert probe_layers(card, ctx) == [0, 1, 2]
    ctx.layers = [3]
    with pytest.raises(UserError, match="out of range"):
        probe_layers(card, ctx)
