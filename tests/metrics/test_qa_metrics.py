"""SQuAD v1.1 and MLQA EM/F1: hand-computed cases for each normalisation rule."""

import pytest

from xeval.metrics import mlqa, squad
from xeval.metrics.mlqa import mlqa_scores
from xeval.metrics.squad import squad_scores


def test_several_gold_answers_take_the_maximum():
    golds = ["Denver Broncos", "The Broncos", "Broncos defense"]
    # "broncos" vs: "denver broncos" F1 = 2*(1*0.5)/1.5 = 2/3; "broncos" EM; "broncos defense" 2/3
    assert squad.example_scores("broncos", golds) == (1.0, 1.0)
    # "denver" matches only the first: P=1, R=1/2 -> 2/3; no exact match anywhere
    em, f1 = squad.example_scores("Denver", golds)
    assert em == 0.0 and f1 == pytest.approx(2 / 3)


def test_empty_prediction_scores_zero():
    assert squad.example_scores("", ["Paris"]) == (0.0, 0.0)
    assert mlqa.example_scores("", ["Paris"], "en") == (0.0, 0.0)


def test_answer_that_normalises_to_nothing_is_em_1_but_f1_0():
    # The official scripts: both sides normalise to "" -> equal strings, but no common token -> F1 0.
    assert squad.example_scores("The", ["a"]) == (1.0, 0.0)


def test_missing_predictions_score_zero():
    gold = {"q1": ["Paris"], "q2": ["Berlin"], "q3": ["Rome"], "q4": ["Oslo"]}
    scores = squad_scores({"q1": "Paris", "q3": "in Rome"}, gold)
    # EM: q1 only -> 25; F1: q1 1 + q3 2*(1/2*1)/(3/2)=2/3 -> (1 + 2/3) / 4 * 100
    assert scores["exact_match"] == 25.0
    assert scores["f1"] == pytest.approx((1 + 2 / 3) / 4 * 100)
    assert mlqa_scores({}, gold, "en") == {"exact_match": 0.0, "f1": 0.0}


def test_squad_keeps_unicode_punctuation_and_non_english_articles():
    # SQuAD removes only ASCII punctuation and English articles.
    assert squad.normalize_answer("«Die Stadt»") == "«die stadt»"
    assert squad.normalize_answer("¿El río?") == "¿el río"
    assert squad.example_scores("«Berlin»", ["Berlin"]) == (0.0, 0.0)


def test_unicode_punctuation_removed_by_mlqa():
    assert mlqa.normalize_answer("«Berlin»", "de") == "berlin"
    assert mlqa.normalize_answer("¿Dónde?", "es") == "dónde"
    assert mlqa.normalize_answer("东京、大阪", "zh") == "东 京 大 阪"
    assert mlqa.example_scores("«Berlin»", ["Berlin"], "de") == (1.0, 1.0)
    # ASCII symbols from string.punctuation go too ($ is category Sc, not P)
    assert mlqa.normalize_answer("$100", "en") == "100"


def test_german_and_spanish_articles():
    assert mlqa.normalize_answer("Der Rhein und die Donau", "de") == "rhein und donau"
    assert mlqa.normalize_answer("dem Haus des Vaters", "de") == "haus vaters"
    assert mlqa.normalize_answer("Los Andes y las Pampas", "es") == "andes y pampas"
    # Articles are whole words only (\b): "Eine" is removed, "Einer" too, but not "Leinen" or "Elba"
    assert mlqa.normalize_answer("Einer der Leinen", "de") == "leinen"
    assert mlqa.normalize_answer("la Elba", "es") == "elba"
    # German articles are not removed for English and vice versa
    assert mlqa.normalize_answer("die the", "en") == "die"
    assert mlqa.example_scores("die Donau", ["Donau"], "de") == (1.0, 1.0)
    assert mlqa.example_scores("die Donau", ["Donau"], "en")[0] == 0.0


def test_arabic_article_rule_as_published():
    # Every "ال" is replaced by a space, also inside a word (the published regex's effective behaviour).
    assert mlqa.normalize_answer("الكتاب", "ar") == "كتاب"
    assert mlqa.normalize_answer("مالك", "ar") == "م ك"
    assert mlqa.example_scores("الكتاب", ["كتاب"], "ar") == (1.0, 1.0)
    # F1 sees the split word as two tokens: "م ك" vs "م": P=1/2, R=1 -> 2/3
    em, f1 = mlqa.example_scores("مالك", ["م"], "ar")
    assert em == 0.0 and f1 == pytest.approx(2 / 3)


def test_vietnamese_articles():
    assert mlqa.normalize_answer("những cái bàn", "vi") == "bàn"


def test_chinese_mixed_segmentation():
    # Each Han character is a token; Latin/digit runs are whitespace tokens.
    assert mlqa.mixed_segmentation("电化电池abc 12") == ["电", "化", "电", "池", "abc", "12"]
    # "北京大学" vs "北京": 2 common of 4 predicted, 2 gold -> P=1/2, R=1 -> F1=2/3
    em, f1 = mlqa.example_scores("北京大学", ["北京"], "zh")
    assert em == 0.0 and f1 == pytest.approx(2 / 3)
    # SQuAD treats the same strings as single whitespace tokens: no overlap at all
    assert squad.example_scores("北京大学", ["北京"]) == (0.0, 0.0)
    # Outside U+4E00..U+9FA5 (e.g. U+9FA6..U+9FFF, or Japanese kana) characters are not split
    assert mlqa.mixed_segmentation("ひらがな") == ["ひらがな"]


def test_hindi_has_no_articles_and_unknown_language_is_rejected():
    assert mlqa.normalize_answer("the भारत", "hi") == "the भारत"
    with pytest.raises(ValueError, match="MLQA normalisation"):
        mlqa.normalize_answer("x", "fr")


def test_corpus_scores_hand_computed():
    gold = {
        "a": ["Amazonas"],
        "b": ["el río Nilo", "Nilo"],
        "c": ["1990"],
    }
    preds = {"a": "el Amazonas", "b": "río Nilo.", "c": "1991"}
    # es: a EM (article removed); b "río nilo" == "río nilo" EM; c 0 -> EM 2/3, F1 2/3
    scores = mlqa_scores(preds, gold, "es")
    assert scores["exact_match"] == pytest.approx(200 / 3)
    assert scores["f1"] == pytest.approx(200 / 3)
    # SQuAD keeps Spanish articles: a "el amazonas" vs "amazonas" F1 2/3, no EM; b "río nilo" vs
    # "el río nilo" P=1 R=2/3 -> F1 0.8 (vs "nilo" only 2/3), no EM; c 0
    scores = squad_scores(preds, gold)
    assert scores["exact_match"] == 0.0
    assert scores["f1"] == pytest.approx((2 / 3 + 0.8) / 3 * 100)
