"""Per-token tag accuracy for POS. Named ``token_accuracy`` on purpose: XTREME's reported POS number is the
seqeval chunk F1 (``chunk_f1.chunk_scores``), not this."""

from __future__ import annotations

from collections.abc import Sequence


def token_accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict[str, float]:
    """Share of tokens (over all sentences) whose predicted tag equals the gold tag, in percent.

    >>> token_accuracy([["DET", "NOUN", "VERB"], ["PRON", "AUX"]],
    ...                [["DET", "NOUN", "NOUN"], ["PRON", "AUX"]])
    {'token_accuracy': 80.0}
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    correct = total = 0
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
        correct += sum(int(a == b) for a, b in zip(g, p))
        total += len(g)
    if total == 0:
        raise ValueError("token accuracy of zero tokens is undefined")
    return {"token_accuracy": float(correct) / total * 100}
