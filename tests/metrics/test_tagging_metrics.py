"""Chunk F1 (seqeval-style), token accuracy, accuracy, BUCC F1, mAP: hand-computed cases, and equality with the
seqeval library on real UD-POS / PAN-X sentences with perturbed predictions."""

import random
import warnings

import pytest

from tests.conftest import require_file
from xeval.metrics import accuracy, bucc_scores, chunk_scores, get_chunks, map_at_k, token_accuracy
from xeval.submission.scorer import read_tags


def test_pos_runs_of_equal_tags_form_one_chunk():
    gold = [["PRON", "VERB", "DET", "ADJ", "ADJ", "NOUN", "PUNCT"]]
    # chunks: PRON | VERB | DET | ADJ ADJ | NOUN | PUNCT = 6
    assert len(get_chunks(gold[0])) == 6
    # predicting the second ADJ as NOUN turns "ADJ ADJ" + "NOUN" into "ADJ" + "NOUN NOUN": 4 of 6 chunks match
    pred = [["PRON", "VERB", "DET", "ADJ", "NOUN", "NOUN", "PUNCT"]]
    scores = chunk_scores(gold, pred)
    assert scores["precision"] == pytest.approx(4 / 6 * 100)
    assert scores["recall"] == pytest.approx(4 / 6 * 100)
    assert scores["f1"] == pytest.approx(4 / 6 * 100)
    # ... while token accuracy sees one wrong token of 7
    assert token_accuracy(gold, pred)["token_accuracy"] == pytest.approx(6 / 7 * 100)


def test_pos_sconj_and_sym_are_single_token_chunks():
    assert get_chunks(["SCONJ", "SCONJ", "SYM", "SYM"]) == [
        ("CONJ", 0, 0),
        ("CONJ", 1, 1),
        ("YM", 2, 2),
        ("YM", 3, 3),
    ]
    # INTJ starts with "I" (like an I- tag) and still forms one run
    assert get_chunks(["INTJ", "INTJ"]) == [("NTJ", 0, 1)]


def test_cconj_sconj_confusion_counts_only_with_seqeval_1_types():
    gold, pred = [["NOUN", "CCONJ", "NOUN"]], [["NOUN", "SCONJ", "NOUN"]]
    # seqeval 1.x types CCONJ and SCONJ both as "CONJ": all 3 chunks match
    assert chunk_scores(gold, pred)["f1"] == 100.0
    # seqeval 0.0.x (XTREME's 2020 numbers) keeps the full tag as type: 2 of 3 match
    assert chunk_scores(gold, pred, legacy_types=True)["f1"] == pytest.approx(2 / 3 * 100)


def test_iob2_vs_stray_i_tags():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O"]]
    # a stray I-PER after O still starts a chunk (conlleval): "I-PER I-PER" == "B-PER I-PER" as a chunk
    assert chunk_scores(gold, [["I-PER", "I-PER", "O", "B-LOC", "O"]])["f1"] == 100.0
    # I-LOC after B-PER: type change closes PER (0,0) and opens LOC (1,1): 1 of 2 gold found, 1 of 3 predicted
    scores = chunk_scores(gold, [["B-PER", "I-LOC", "O", "B-LOC", "O"]])
    assert scores["precision"] == pytest.approx(100 / 3)
    assert scores["recall"] == 50.0
    assert scores["f1"] == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5) * 100)
    # chunks never cross sentence boundaries
    assert get_chunks(["B-PER", "I-PER"]) == [("PER", 0, 1)]
    assert chunk_scores([["B-PER"], ["I-PER"]], [["B-PER"], ["I-PER"]])["f1"] == 100.0


def test_no_chunks_at_all_scores_zero():
    assert chunk_scores([["O", "O"]], [["O", "O"]]) == {"f1": 0.0, "precision": 0.0, "recall": 0.0}


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="sentence 0"):
        chunk_scores([["B-PER", "O"]], [["B-PER"]])


def _perturb(sentences: list[list[str]], tagset: list[str], rate: float, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(tagset) if rng.random() < rate else t for t in s] for s in sentences]


@pytest.mark.parametrize(
    "relative",
    ["udpos_xtreme/test_labeled/test-ar.tsv", "udpos_xtreme/dev-de.tsv", "panx_xtreme/test-de.tsv"],
)
def test_equal_to_seqeval_library_on_real_sentences(data_root, relative):
    seqeval_metrics = pytest.importorskip("seqeval.metrics")
    gold = [tags for _, tags in read_tags(require_file(data_root, relative))][:100]
    tagset = sorted({t for s in gold for t in s})
    for seed, rate in [(0, 0.05), (1, 0.3)]:
        pred = _perturb(gold, tagset, rate, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seqeval warns "NOUN seems not to be NE tag" for every POS tag
            expected = {
                "f1": seqeval_metrics.f1_score(gold, pred) * 100,
                "precision": seqeval_metrics.precision_score(gold, pred) * 100,
                "recall": seqeval_metrics.recall_score(gold, pred) * 100,
            }
        assert chunk_scores(gold, pred) == expected  # bit-identical, not approximately


def test_accuracy_and_bucc_and_map():
    assert accuracy(list("0110"), list("0111")) == {"accuracy": 75.0}
    gold = [("zh-1", "en-5"), ("zh-2", "en-9")]
    assert bucc_scores(gold, gold + [("zh-3", "en-1"), ("zh-1", "en-5")]) == {
        "f1": pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1) * 100),
        "precision": pytest.approx(200 / 3),
        "recall": 100.0,
    }
    # AP@20: q1 relevant at rank 2 -> 1/2; q2 at rank 1 -> 1; q3 missing -> 0
    assert map_at_k({"q1": ["x", "a"], "q2": ["b"]}, {"q1": ["a"], "q2": ["b"], "q3": ["c"]}) == {
        "map_at_20": pytest.approx(50.0)
    }
