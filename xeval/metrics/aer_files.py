"""Score word-alignment files (Pharaoh ``i-j`` / ``ipj``) against a gold standard: what ``xeval align score`` runs.

Bases are never guessed: gold files usually come 1-based (``gold_base=1``), system outputs 0-based
(``pred_base=0``); an index below the base is an error. With the sentence pairs at hand (``text``, the
``src ||| tgt`` file) every link is checked against the sentence lengths: a link outside a sentence is an error
naming ``path:line`` (a wrong base is the usual cause), or is dropped with a warning under ``skip_out_of_range``.
Reading and checking is ``xeval.data.alignment_gold``'s; scoring is ``xeval.metrics.aer``'s.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path

from xeval.base.errors import DataError, UserError
from xeval.data.alignment_gold import read_links, read_text_pairs
from xeval.metrics.aer import AERResult, score_alignment


def score_files(gold: str | Path, pred: str | Path, text: str | Path | None = None, gold_base: int = 1,
                pred_base: int = 0, skip_out_of_range: bool = False,
                warn: Callable[[str], None] | None = None) -> AERResult:
    """AER, precision and recall of the links in ``pred`` against ``gold`` (corpus-level sums)."""
    warn = warn or (lambda msg: print(f"warning: {msg}", file=sys.stderr))
    gold, pred = Path(gold), Path(pred)
    for path in (gold, pred, *([Path(text)] if text else [])):
        if not path.is_file():
            raise UserError(f"{path}: no such file")
    sizes = [(len(s), len(t)) for s, t in read_text_pairs(text)] if text else None
    mode = "skip" if skip_out_of_range else "error"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gold_links = read_links(gold, gold_base, sizes=sizes, on_out_of_range=mode)
        pred_links = read_links(pred, pred_base, sizes=sizes, on_out_of_range=mode)
    for item in caught:
        warn(str(item.message))
    if len(gold_links) != len(pred_links):
        raise DataError(pred, None, f"expected {len(gold_links)} lines, one per sentence pair of {gold}, "
                                    f"found {len(pred_links)}")
    predicted = [sure | possible for sure, possible in pred_links]  # a system's 'p' links count as links too
    return score_alignment(gold_links, predicted)
