"""SQuAD v1.1 exact match and F1, as the official ``evaluate-v1.1.py`` defines them (XTREME uses it for XQuAD and
TyDiQA-GoldP in every language). Written here from the definition:

- normalise: lowercase, remove ASCII ``string.punctuation``, remove the English articles a/an/the
  (``\\b`` word boundaries, Unicode-aware in Python 3), collapse whitespace;
- tokens are whitespace-separated (so a Chinese or Thai answer without spaces is one token);
- EM = normalised strings equal; F1 = bag-of-tokens overlap F1 (0 when nothing overlaps, even when both
  sides normalise to empty: then EM is 1 but F1 is 0, exactly as the official script);
- per question the maximum over the gold answers; unanswered questions score 0; corpus scores are
  ``100.0 * sum / number of questions``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation.

    >>> normalize_answer("The  Eiffel-Tower, (Paris)!")
    'eiffeltower paris'
    >>> normalize_answer("«Le Monde» ¿qué?")
    '«le monde» ¿qué'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> bool:
    """Normalised strings equal.

    >>> exact_match("the Beatles", "Beatles.")
    True
    """
    return normalize_answer(prediction) == normalize_answer(gold)


def token_f1(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    """Bag-of-tokens overlap F1 (0-1), 0 when nothing overlaps; shared by SQuAD and MLQA.

    >>> token_f1(["big", "red", "dog"], ["red", "dog"])
    0.8
    """
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(pred_tokens)
    recall = 1.0 * same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1(prediction: str, gold: str) -> float:
    """Token-overlap F1 of one prediction against one gold answer (0-1).

    >>> f1("the big red dog", "a red dog")
    0.8
    >>> f1("", "Paris")
    0
    """
    return token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def example_scores(prediction: str, golds: Sequence[str]) -> tuple[float, float]:
    """(EM, F1) of one question, each the maximum over its gold answers (0-1).

    >>> example_scores("Denver Broncos", ["Broncos", "Denver Broncos", "the Denver Broncos"])
    (1.0, 1.0)
    >>> example_scores("Broncos team", ["Broncos", "Denver Broncos"])
    (0.0, 0.6666666666666666)
    """
    if not golds:
        raise ValueError("a question needs at least one gold answer")
    em = max(float(exact_match(prediction, g)) for g in golds)
    best_f1 = max(f1(prediction, g) for g in golds)
    return em, float(best_f1)


def gold_answers(examples: Iterable) -> dict[str, list[str]]:
    """``{question id: [gold answer texts]}`` from ``QAExample``s (anything with ``.id`` and ``.answers``)."""
    return {ex.id: [a.text for a in ex.answers] for ex in examples}


def squad_scores(predictions: Mapping[str, str], gold: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Corpus EM and F1 in percent over every question of ``gold`` ({id: [answer texts]}).

    Questions without a prediction score 0; predictions for unknown ids are ignored (as the official script).

    >>> gold = {"q1": ["Denver Broncos", "Broncos"], "q2": ["1990"], "q3": ["Santa Clara"]}
    >>> squad_scores({"q1": "The Broncos", "q2": "in 1990", "q4": "ignored"}, gold)
    {'exact_match': 33.333333333333336, 'f1': 55.55555555555555}
    """
    return corpus_scores(predictions, gold, example_scores)


def corpus_scores(
    predictions: Mapping[str, str],
    gold: Mapping[str, Sequence[str]],
    score_one: Callable[[str, Sequence[str]], tuple[float, float]],
) -> dict[str, float]:
    """Sum per-question (EM, F1) over ``gold`` in its order, 0 for unanswered ones, as the official scripts."""
    em_sum = f1_sum = 0.0
    for qid, golds in gold.items():
        if qid not in predictions:
            continue
        em, f = score_one(predictions[qid], golds)
        em_sum += em
        f1_sum += f
    total = len(gold)
    if total == 0:
        raise ValueError("no questions to score")
    return {"exact_match": 100.0 * em_sum / total, "f1": 100.0 * f1_sum / total}
