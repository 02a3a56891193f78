"""Alignment error rate (Och & Ney 2003), with precision and recall, summed over the corpus.

With A the predicted links, S the sure gold links and P = S ∪ possible gold links, all summed over sentences
(corpus-level, not a mean of per-sentence rates):

    precision = |A∩P| / |A|        recall = |A∩S| / |S|        AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|)

Links are 0-based ``(src, tgt)`` word-index pairs; readers convert 1-based files before they get here.

>>> gold = [({(0, 0), (1, 1)}, {(1, 2)})]          # sure, possible-only
>>> r = score_alignment(gold, [{(0, 0), (1, 2), (2, 2)}])
>>> round(r.precision, 4), round(r.recall, 4), round(r.aer, 4)
(0.6667, 0.5, 0.4)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from xeval.base.errors import UserError

Link = tuple[int, int]


@dataclass(frozen=True)
class AERResult:
    """Corpus-level sums and the rates derived from them (fractions in 0..1; ``as_metrics`` gives percentages)."""

    n_sentences: int
    n_predicted: int  # |A|
    n_sure: int  # |S|
    n_predicted_sure: int  # |A∩S|
    n_predicted_possible: int  # |A∩P|, P = S ∪ possible

    @property
    def precision(self) -> float:
        # No predicted link at all: precision is undefined; 0 keeps tables numeric (awesome-align's script divides
        # by zero instead).
        return self.n_predicted_possible / self.n_predicted if self.n_predicted else 0.0

    @property
    def recall(self) -> float:
        return self.n_predicted_sure / self.n_sure if self.n_sure else 0.0

    @property
    def aer(self) -> float:
        return 1.0 - (self.n_predicted_sure + self.n_predicted_possible) / (self.n_predicted + self.n_sure)

    @property
    def f1(self) -> float:
        """Balanced F-measure of precision and recall (awesome-align's ``--fAlpha 0.5``)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        """Percentages, as result records store them: aer, precision, recall, f1 (optionally prefixed)."""
        return {
            f"{prefix}aer": 100.0 * self.aer,
            f"{prefix}precision": 100.0 * self.precision,
            f"{prefix}recall": 100.0 * self.recall,
            f"{prefix}f1": 100.0 * self.f1,
        }

    def counts(self) -> dict[str, int]:
        return asdict(self)


def score_alignment(gold: Sequence[tuple[Iterable[Link], Iterable[Link]]], predicted: Sequence[Iterable[Link]]) -> AERResult:
    """AER over a corpus. ``gold[k]`` = (sure links, possible-only links) of sentence k; ``predicted[k]`` its links.

    A gold file may list a link both as sure and possible; P is the union, so that changes nothing.
    """
    if len(gold) != len(predicted):
        raise UserError(f"expected as many predicted as gold sentences, found {len(predicted)} and {len(gold)}")
    n_a = n_s = n_as = n_ap = 0
    for (sure, possible), pred in zip(gold, predicted):
        sure = set(sure)
        every = sure | set(possible)
        pred = set(pred)
        n_a += len(pred)
        n_s += len(sure)
        n_as += len(pred & sure)
        n_ap += len(pred & every)
    if n_a + n_s == 0:
        raise UserError("nothing to score: no predicted links and no sure gold links")
    return AERResult(len(gold), n_a, n_s, n_as, n_ap)
