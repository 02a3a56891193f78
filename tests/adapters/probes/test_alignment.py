"""Word alignment probe: OT (exact and entropic) on hand-built similarity matrices with known optimal plans, the
argmax baseline, subword→word links, and the probe end to end on a tiny model."""

from __future__ import annotations

import numpy as np
import pytest

from xeval.adapters.probes.alignment import argmax_inter, extract, ot_plan, plan_links, word_links
from xeval.data.examples import AlignedPair


def links_of(mask: np.ndarray) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(mask))}


def test_emd_permutation():
    # Each source word is most similar to one target word (a permutation): the optimal plan moves 1/3 along it.
    perm = [1, 2, 0]
    sim = np.full((3, 3), 0.2)
    sim[range(3), perm] = 0.9
    plan = ot_plan(sim, "emd")
    expected = np.zeros((3, 3))
    expected[range(3), perm] = 1 / 3
    assert np.allclose(plan, expected)
    assert links_of(extract(sim, "ot-emd")) == {(0, 1), (1, 2), (2, 0)}


def test_sinkhorn_approaches_emd_and_uniform():
    perm = [1, 2, 0]
    sim = np.full((3, 3), 0.2)
    sim[range(3), perm] = 0.9
    sharp = ot_plan(sim, "sinkhorn", epsilon=0.01)
    assert np.allclose(sharp, ot_plan(sim, "emd"), atol=1e-3)
    assert np.allclose(sharp.sum(axis=1), 1 / 3) and np.allclose(sharp.sum(axis=0), 1 / 3)  # uniform marginals
    assert links_of(extract(sim, "ot-sinkhorn", epsilon=0.01)) == {(0, 1), (1, 2), (2, 0)}
    flat = ot_plan(sim, "sinkhorn", epsilon=100.0)  # huge ε: the independent coupling a bᵀ
    assert np.allclose(flat, 1 / 9, atol=2e-3)


def test_ot_differs_from_argmax():
    # Both sources prefer target 0; the globally optimal (cost 1 - sim) matching is the anti-diagonal.
    sim = np.array([[0.9, 0.8], [0.85, 0.1]])
    assert np.allclose(ot_plan(sim, "emd"), [[0.0, 0.5], [0.5, 0.0]])
    assert links_of(extract(sim, "ot-emd")) == {(0, 1), (1, 0)}
    assert links_of(extract(sim, "ot-sinkhorn", epsilon=0.01)) == {(0, 1), (1, 0)}
    # SimAlign's inter: 0->0 and 1->0 forward, 0<-0 and 0<-1 backward: only 0-0 is mutual
    assert links_of(argmax_inter(sim)) == {(0, 0)}


def test_one_to_many_with_unequal_lengths():
    # Two source words, four targets: each source word's mass (1/2) splits over its two targets (1/4 each).
    sim = np.array([[0.9, 0.9, 0.1, 0.1], [0.1, 0.1, 0.9, 0.9]])
    expected = np.array([[0.25, 0.25, 0, 0], [0, 0, 0.25, 0.25]])
    assert np.allclose(ot_plan(sim, "emd"), expected)
    assert np.allclose(ot_plan(sim, "sinkhorn", epsilon=0.01), expected, atol=1e-3)
    want = {(0, 0), (0, 1), (1, 2), (1, 3)}
    assert links_of(extract(sim, "ot-emd")) == want == links_of(extract(sim, "ot-sinkhorn", epsilon=0.01))


def test_plan_threshold_relative_to_mass():
    # A 3x4 plan (rows 1/3, columns 1/4) with small fragments: pi_ij / min(a_i, b_j) >= 0.5 keeps the big parts.
    plan = np.array([[1 / 4, 1 / 12, 0, 0], [0, 1 / 6, 1 / 6, 0], [0, 0, 1 / 12, 1 / 4]])
    assert links_of(plan_links(plan, 0.5)) == {(0, 0), (1, 1), (1, 2), (2, 3)}
    assert links_of(plan_links(plan, 0.3)) == {(0, 0), (0, 1), (1, 1), (1, 2), (2, 2), (2, 3)}


def test_subword_links_to_word_links():
    links = np.zeros((3, 3), dtype=bool)
    links[1, 2] = links[2, 0] = links[0, 1] = True
    # source subwords 0,1 belong to word 0, subword 2 to word 1; target subword 0 -> word 0, 1,2 -> word 1
    assert word_links(links, [0, 0, 1], [0, 1, 1]) == {(0, 1), (1, 0)}


def test_empty_sides():
    assert extract(np.zeros((0, 0)), "ot-emd").shape == (0, 0)


# --------------------------------------------------------------------------- end to end on a tiny model


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    from tests.helpers.tiny import make_tiny_bert
    from xeval.models.encoder import Encoder

    folder = tmp_path_factory.mktemp("align") / "model"
    return Encoder(make_tiny_bert(folder, vocab_size=200))


def test_identical_sentences_align_perfectly(tiny_encoder):
    """A sentence aligned with itself: every method finds the diagonal (AER 0), at every layer."""
    from xeval.adapters.probes.alignment import ALIGN_DEFAULTS, align_layers, score_layers

    words = ["the", "cat", "sat", "on", "the", "mat"]
    pairs = [AlignedPair(words, words, {(i, i) for i in range(6)}, set(), "en-en")]
    for joint in (False, True):
        options = {**ALIGN_DEFAULTS, "joint": joint}
        predicted = align_layers(tiny_encoder, pairs, [0, 1, 2], options)
        if joint:  # both sentences in one sequence: positions differ, so only check it runs and links every word
            assert all(len(predicted[k]["ot-emd"][0]) >= 6 for k in (0, 1, 2))
            continue
        scores = score_layers(pairs, predicted)
        for layer in (0, 1, 2):
            assert scores[layer]["aer"] == 0.0
            assert scores[layer]["argmax_inter_aer"] == 0.0 and scores[layer]["ot_sinkhorn_aer"] == 0.0


def test_alignment_probe_run(tiny_encoder, data_root, tmp_path):
    from xeval.adapters.context import RunContext
    from xeval.adapters.probes import alignment
    from xeval.cards.catalog import load_card
    from xeval.data.sources import DataRoot
    from xeval.results.store import Store
    from xeval.run.options import task_options

    ctx = RunContext(encoder=tiny_encoder, data=DataRoot.resolve(str(data_root)), store=Store(tmp_path / "runs"),
                     layers=[0, 2], export_dir=tmp_path / "pred",
                     tasks=task_options({"methods": "ot-emd,argmax-inter"}, max_eval=12))
    recs = alignment.run(load_card("alignment"), ["ro-en"], ctx)
    assert [(r.unit.lang, r.unit.layer) for r in recs] == [("ro-en", 0), ("ro-en", 2)]
    rec = recs[0]
    assert rec.n_examples == 12 and rec.config["max_eval"] == 12
    assert rec.config["methods"] == ["ot-emd", "argmax-inter"]
    assert {"aer", "precision", "recall", "f1", "ot_emd_aer", "argmax_inter_aer"} <= set(rec.metrics)
    assert rec.metrics["aer"] == rec.metrics["ot_emd_aer"]
    out = (tmp_path / "pred" / "layer-0" / "alignment" / "ro-en.ot-emd.out").read_text().splitlines()
    assert len(out) == 12
    # the exported file scores the same through `align score`'s code path
    from xeval.metrics.aer_files import score_files

    gold = tmp_path / "gold12"
    gold.write_text("".join((data_root / "word_alignment" / "roen.gold").read_text().splitlines(True)[:12]))
    text = tmp_path / "text12"
    text.write_text("".join((data_root / "word_alignment" / "roen.src-tgt").read_text().splitlines(True)[:12]))
    again = score_files(gold, tmp_path / "pred" / "layer-0" / "alignment" / "ro-en.ot-emd.out", text=text)
    assert again.as_metrics()["aer"] == pytest.approx(rec.metrics["aer"])


# --------------------------------------------------------------------------- all layers in one call: the same links


def per_layer_links(sims, method):
    """Today's reference: POT (or argmax) on each layer's matrix on its own."""
    return [np.stack([extract(s[row], method) for row in range(len(s))]).reshape(s.shape) for s in sims]


def test_batched_sinkhorn_follows_pot_step_by_step():
    """Hand-made stacks that exercise each branch of POT's schedule: a problem that converges at the first check,
    absorptions into the potentials (tiny ε), the iteration budget running out, unequal and empty shapes."""
    from xeval.adapters.probes.sinkhorn import sinkhorn_stabilized_many

    rng = np.random.default_rng(0)
    costs = [1.0 - rng.uniform(-1, 1, size=shape) for shape in [(3, 3), (7, 4), (1, 5), (12, 9), (2, 2)]]
    costs.append(np.full((4, 4), 0.5))  # constant cost: the uniform coupling is optimal at once
    costs.append(np.zeros((0, 3)))
    import ot

    for reg, budget in [(0.05, 2000), (0.002, 2000), (0.05, 7)]:
        plans = sinkhorn_stabilized_many(costs, reg, num_iter_max=budget)
        for cost, plan in zip(costs, plans):
            assert plan.shape == cost.shape
            if not cost.size:
                continue
            n, m = cost.shape
            want = ot.sinkhorn(np.full(n, 1 / n), np.full(m, 1 / m), cost, reg, method="sinkhorn_stabilized",
                               numItermax=budget, stopThr=1e-9, warn=False)
            assert np.allclose(plan, want, rtol=1e-9, atol=1e-14, equal_nan=True)  # NaN where POT gives NaN


def test_argmax_inter_over_layers_keeps_first_maximum_on_ties():
    sims = np.array([[[0.5, 0.5], [0.5, 0.5]], [[0.9, 0.1], [0.2, 0.8]]])
    layers = [argmax_inter(s) for s in sims]
    from xeval.adapters.probes.alignment import argmax_inter_layers

    assert np.array_equal(argmax_inter_layers(sims), np.stack(layers))
    assert links_of(layers[0]) == {(0, 0)}


@pytest.mark.parametrize("method", ["ot-emd", "ot-sinkhorn", "argmax-inter"])
def test_all_layer_links_identical_to_per_layer(minilm_dir, data_root, method):
    """Every layer of MiniLM on real de-en and ro-en gold pairs: the one-call extraction gives exactly the links
    of the per-layer path, for every pair and layer."""
    from xeval.adapters.probes.alignment import cosine_matrix, extract_layers, separate_states
    from xeval.data.alignment_gold import read_alignment
    from xeval.models.encoder import Encoder

    encoder = Encoder(str(minilm_dir))
    folder = data_root / "word_alignment"
    pairs = []
    for name, lang in (("deen", "de-en"), ("roen", "ro-en")):
        pairs += read_alignment(folder / f"{name}.src-tgt", folder / f"{name}.gold", lang)[:15]
    layers = list(range(encoder.num_layers + 1))
    sims = [cosine_matrix(s, t) for s, _, t, _ in separate_states(encoder, pairs, layers)]
    batched = extract_layers(sims, method)
    reference = per_layer_links(sims, method)
    assert len(batched) == len(pairs) and all(b.shape == (len(layers),) + s.shape[1:] for b, s in zip(batched, sims))
    for b, r in zip(batched, reference):
        assert np.array_equal(b, r)
    assert sum(int(b.sum()) for b in batched) > 0
