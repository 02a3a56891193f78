"""Ranking metrics of XTREME-R: mean average precision at k (LAReQA's ``average_precision_at_k``) and Mewsli-X's
``map@20``, which XTREME's ``utils_mewslix.evaluate`` computes as the mean reciprocal rank of the single gold id.

Follows XTREME's ``average_precision_at_k`` (third_party/utils_lareqa.py): the ranked list is cut at k, a
relevant item counts once (repeats are skipped), and the sum of precisions at the hits is divided by
``min(number of relevant items, k)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def average_precision_at_k(relevant: Sequence[str], ranked: Sequence[str], k: int | None = 20) -> float:
    """AP@k of one query (0-1).

    >>> average_precision_at_k(["Q1", "Q3"], ["Q1", "Q2", "Q3", "Q4"], k=3)
    0.8333333333333333
    >>> average_precision_at_k(["Q1"], ["Q2", "Q1", "Q1"], k=20)
    0.5
    """
    if k:
        ranked = list(ranked)[:k]
    targets = set(relevant)
    score = hits = 0.0
    seen: set[str] = set()
    for i, item in enumerate(ranked):
        if item in targets and item not in seen:
            hits += 1.0
            score += hits / (i + 1.0)
        seen.add(item)
    divisor = min(len(targets), k) if k else len(targets)
    if divisor == 0:
        raise ValueError("a query needs at least one relevant item")
    return score / divisor


def map_at_k(
    predictions: Mapping[str, Sequence[str]], gold: Mapping[str, Sequence[str]], k: int = 20
) -> dict:
    """mAP@k in percent over every query of ``gold``; queries without a prediction score 0.

    >>> map_at_k({"a": ["Q1", "Q9"], "b": ["Q5", "Q2"]}, {"a": ["Q1"], "b": ["Q2"], "c": ["Q3"]})
    {'map_at_20': 50.0}
    """
    if not gold:
        raise ValueError("no queries to score")
    total = sum(average_precision_at_k(rel, predictions[q], k) for q, rel in gold.items() if q in predictions)
    return {f"map_at_{k}": 100.0 * total / len(gold)}


def mewslix_map20(predictions: Mapping[str, Sequence[str]], gold: Mapping[str, Sequence[str]], k: int = 20) -> dict:
    """XTREME-R's Mewsli-X score, as ``utils_mewslix.evaluate`` (percent, under evaluate.py's key ``map@20``): each
    gold query's first gold id (stripped) against its top-``k`` predictions, reciprocal rank of the first hit, 0
    when missing; the mean over the gold queries.

    >>> mewslix_map20({"a": ["Q2", "Q1"], "b": ["Q5"]}, {"a": ["Q1"], "b": ["Q2"], "c": ["Q3"]})
    {'map@20': 16.666666666666664}
    """
    ranks = []
    for query, ids in gold.items():
        target = ids[0].strip()
        ranked = list(predictions.get(query, []))[:k]
        ranks.append(next((1.0 / rank for rank, p in enumerate(ranked, start=1) if p == target), 0.0))
    return {"map@20": 100.0 * (sum(ranks) / len(ranks) if ranks else 0.0)}
