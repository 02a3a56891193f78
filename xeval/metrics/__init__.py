"""Faithful re-implementations of the metrics XTREME reports (docs/conventions.md).

One small module per metric; every public function has doctest examples that run as tests
(``tests/metrics/test_doctests.py``). Scores are percentages (0-100), as XTREME prints them.

    accuracy.accuracy            XNLI, PAWS-X, XCOPA, Tatoeba
    chunk_f1.chunk_scores        seqeval-style chunk F1/precision/recall: PAN-X (IOB2) and UD-POS as XTREME scores it
    token_accuracy.token_accuracy   POS tag accuracy per token (NOT what XTREME reports for POS)
    squad.squad_scores           SQuAD v1.1 EM/F1: XQuAD, TyDiQA-GoldP
    mlqa.mlqa_scores             MLQA EM/F1 with its per-language normalisation
    bucc.bucc_scores             BUCC mining F1 over (src id, tgt id) pairs
    ranking.map_at_k             mAP@k (XTREME-R Mewsli-X, LAReQA)
    xtreme                       task/language lists, per-task averages, group and overall scores
"""

from xeval.metrics.accuracy import accuracy
from xeval.metrics.bucc import bucc_scores
from xeval.metrics.chunk_f1 import chunk_scores, get_chunks
from xeval.metrics.mlqa import mlqa_scores
from xeval.metrics.ranking import map_at_k, mewslix_map20
from xeval.metrics.squad import gold_answers, squad_scores
from xeval.metrics.token_accuracy import token_accuracy

__all__ = [
    "accuracy",
    "bucc_scores",
    "chunk_scores",
    "get_chunks",
    "gold_answers",
    "map_at_k",
    "mewslix_map20",
    "mlqa_scores",
    "squad_scores",
    "token_accuracy",
]
