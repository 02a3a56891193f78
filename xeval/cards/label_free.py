"""Label-free units: XTREME's official test files carry no gold (QA dummy answers, tokens-only tagging tests,
two-column XNLI / PAWS-X tests, Tatoeba with the English side sorted). Their predictions are stored and exported in
the submission layout; the record carries no number, only ``extra["unscored"]`` saying why, and every table prints
``LABEL`` instead of a score."""

from __future__ import annotations

LABEL = "unscored (labels withheld)"


def extra(reason: str) -> dict:
    """The record's ``extra`` entry of a label-free unit."""
    return {"unscored": f"{reason}: score the exported predictions (xeval score / XTREME's evaluate.py)"}


def is_unscored(record) -> bool:
    return not record.metrics and "unscored" in (record.extra or {})
