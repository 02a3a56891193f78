"""The char n-gram TF-IDF baseline (``xeval.models.charngram``): its vectors against a hand computation, each side's
IDF fitted on that side alone, a stable key that hashes its configuration, and retrieval / mining through the same
code as a model's (sparse rows, the same ranking as FAISS on dense ones)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse.linalg
from scipy import sparse

from xeval.adapters.probes.mining import ratio_margin_candidates
from xeval.adapters.probes.retrieval import search, tatoeba_layers
from xeval.models.charngram import FITTED_ON, CharNgramModel


def cosine(a, b) -> float:
    return float((a @ b.T).toarray()[0, 0])


def test_vectors_match_a_hand_computation():
    """Query side ["ab"], candidate side ["ab", "ac"]. ``char_wb`` pads each word with one space, so "ab" has the
    1- to 4-grams ' ' (twice), a, b, ' a', ab, 'b ', ' ab', 'ab ', ' ab ' and "ac" the same with c for b.
    Sublinear tf: 1 + ln 2 for ' '. Smooth IDF, ln((1 + n) / (1 + df)) + 1: on the query side (n = 1) every
    n-gram has IDF 1; on the candidate side (n = 2) the shared ' ', a, ' a' have IDF 1, the other six ln(3/2) + 1."""
    model = CharNgramModel()
    q, c = model.side_vectors([["ab"], ["ab", "ac"]])
    space, rare = 1 + math.log(2), math.log(3 / 2) + 1
    q_norm = math.sqrt(space ** 2 + 8)  # ' ' and the 8 n-grams seen once, all IDF 1
    c_norm = math.sqrt(space ** 2 + 2 + 6 * rare ** 2)  # ' ', a, ' a' at IDF 1; six at ln(3/2) + 1
    same = (space ** 2 + 2 + 6 * rare) / (q_norm * c_norm)
    other = (space ** 2 + 2) / (q_norm * c_norm)  # "ab" and "ac" share ' ', a and ' a' only
    assert cosine(q[0], c[0]) == pytest.approx(same, rel=1e-5)
    assert cosine(q[0], c[1]) == pytest.approx(other, rel=1e-5)
    assert same == pytest.approx(0.9867, abs=1e-4) and other == pytest.approx(0.3611, abs=1e-4)
    for matrix in (q, c):  # rows L2-normalised, float32 sparse
        assert sparse.issparse(matrix) and matrix.dtype == np.float32
        assert np.allclose(scipy.sparse.linalg.norm(matrix, axis=1), 1.0)


def test_each_side_is_fitted_on_its_own_sentences_only():
    model = CharNgramModel()
    xx = ["Guten Morgen", "Danke schön", "Berlin 2024"]
    a = model.side_vectors([xx, ["good morning", "thanks"]])[0]
    b = model.side_vectors([xx, ["something entirely different", "Berlin", "Morgen Morgen"]])[0]
    assert (a != b).nnz == 0  # the other side's sentences do not change this side's vectors
    alone = model.side_vectors([xx + ["Morgen"]])[0][:3]
    assert (alone != a).nnz > 0  # ... its own side's do (the IDF is fitted on them)


def test_top1_of_a_tiny_retrieval_worked_out_by_hand():
    """Line i of one side translates line i of the other. xx: "Tokio", "Kowalska Maria", "Berlin, 2024"; en:
    "Tokyo", "Maria Kowalski", "Berlin 2024". "Tokyo" shares ' t', ' to', ' tok', 'tok', 'to', 'ok' with "Tokio" and
    at most single letters and ' k'-like pieces with the others; the names share ' mari', 'kowa', 'alsk' ...; the
    city and year share all but the comma. So en→xx = xx→en = [0, 1, 2]: 100 % both ways, and xsim's error 0."""
    xx, en = ["Tokio", "Kowalska Maria", "Berlin, 2024"], ["Tokyo", "Maria Kowalski", "Berlin 2024"]
    [got] = list(tatoeba_layers(CharNgramModel(), xx, en, [None], {"center": True, "xsim": True}))
    assert got.layer is None
    assert got.en2xx.tolist() == [0, 1, 2] and got.xx2en.tolist() == [0, 1, 2]
    assert got.metrics["accuracy"] == 100.0 and got.metrics["accuracy_xx_en"] == 100.0
    assert got.metrics["xsim"] == 0.0  # the margin search scores the sparse rows too
    assert not any(k.startswith("centered_") for k in got.metrics)  # centring dense 2**20 features: not run
    # the same sentences, the English side in another order: every query now finds a line that is not its gold
    [shuffled] = list(tatoeba_layers(CharNgramModel(), xx, en[1:] + en[:1], [None], {}))
    assert shuffled.en2xx.tolist() == [1, 2, 0] and shuffled.metrics["accuracy"] == 0.0


def test_a_wrong_answer_is_found_wrong():
    # "Tokyo" is the English of both; the xx side has one unrelated sentence: one of the two queries must miss
    xx, en = ["Tokio", "xyz"], ["Tokyo", "Tokyo!"]
    [got] = list(tatoeba_layers(CharNgramModel(), xx, en, [None], {}))
    assert got.en2xx.tolist() == [0, 0] and got.metrics["accuracy"] == 50.0


def test_sparse_search_ranks_as_faiss_does_on_dense_rows():
    rng = np.random.default_rng(0)
    q, d = rng.random((37, 20)) * (rng.random((37, 20)) > 0.6), rng.random((53, 20)) * (rng.random((53, 20)) > 0.6)
    dense_sims, dense_idx = search(q, d, k=4)
    sparse_sims, sparse_idx = search(sparse.csr_matrix(q), sparse.csr_matrix(d), k=4)
    assert np.array_equal(dense_idx, sparse_idx)
    assert np.allclose(dense_sims, sparse_sims, atol=1e-5)
    candidates = ratio_margin_candidates(q, d)
    again = ratio_margin_candidates(sparse.csr_matrix(q), sparse.csr_matrix(d))
    assert [(s, t) for s, t, _ in candidates] == [(s, t) for s, t, _ in again]
    assert np.allclose([m for *_, m in candidates], [m for *_, m in again], atol=1e-5)


def test_key_is_stable_and_hashes_the_configuration():
    a, b = CharNgramModel(), CharNgramModel()
    assert a.key == b.key and a.key.startswith("charngram@") and len(a.key.split("@")[1]) == 12
    for other in (CharNgramModel(ngram_range=(1, 3)), CharNgramModel(analyzer="char"),
                  CharNgramModel(sublinear_tf=False), CharNgramModel(norm="l1")):
        assert other.key != a.key
    ident = a.identity()
    assert ident["control"] == "charngram" and ident["fitted_on"] == FITTED_ON and ident["num_layers"] is None
    assert ident["charngram"]["ngram_range"] == [1, 4] and ident["charngram"]["analyzer"] == "char_wb"
    assert not a.layered and "parent" not in ident
