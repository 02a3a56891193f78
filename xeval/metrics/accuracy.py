"""Accuracy as XTREME's ``evaluate.py`` computes it for XNLI, PAWS-X and Tatoeba (exact string/label equality)."""

from __future__ import annotations

from collections.abc import Sequence


def accuracy(gold: Sequence, predicted: Sequence) -> dict[str, float]:
    """Percentage of positions where the prediction equals the gold label.

    Computed as ``correct / n * 100`` in that order, as XTREME does, so the float is bit-identical.

    >>> accuracy(["entailment", "neutral", "contradiction", "neutral"],
    ...          ["entailment", "neutral", "neutral", "neutral"])
    {'accuracy': 75.0}
    >>> accuracy(["1", "0"], ["1"])
    Traceback (most recent call last):
    ...
    ValueError: accuracy needs as many predictions as gold labels: 2 gold, 1 predicted
    """
    if len(gold) != len(predicted):
        raise ValueError(
            f"accuracy needs as many predictions as gold labels: {len(gold)} gold, {len(predicted)} predicted"
        )
    if not gold:
        raise ValueError("accuracy of an empty set is undefined")
    correct = sum(int(p == g) for p, g in zip(predicted, gold))
    return {"accuracy": float(correct) / len(predicted) * 100}
