"""BUCC 2018 parallel-sentence mining F1 as XTREME's ``evaluate.py: bucc_f1``: precision/recall/F1 over the
*sets* of (source id, target id) pairs (duplicates count once)."""

from __future__ import annotations

from collections.abc import Iterable


def bucc_scores(gold: Iterable[tuple[str, str]], predicted: Iterable[tuple[str, str]]) -> dict[str, float]:
    """F1 / precision / recall in percent; all 0 when no predicted pair is correct.

    >>> gold = [("de-1", "en-7"), ("de-2", "en-3"), ("de-4", "en-4"), ("de-9", "en-1")]
    >>> bucc_scores(gold, [("de-1", "en-7"), ("de-2", "en-3"), ("de-5", "en-5")])
    {'f1': 57.14285714285715, 'precision': 66.66666666666666, 'recall': 50.0}
    >>> bucc_scores(gold, [])
    {'f1': 0.0, 'precision': 0.0, 'recall': 0.0}
    """
    gold_set = {tuple(p) for p in gold}
    pred_set = {tuple(p) for p in predicted}
    correct = len(gold_set & pred_set)
    if correct > 0:
        precision = correct / len(pred_set)
        recall = correct / len(gold_set)
        f1 = 2 * precision * recall / (precision + recall)
    else:
        precision = recall = f1 = 0.0
    return {"f1": f1 * 100, "precision": precision * 100, "recall": recall * 100}
