"""What ``--export-predictions DIR`` / ``--export-labels DIR`` write besides XTREME's fixed files.

- **File names** follow the split: ``<task>/test-<lang>.<tsv|json>`` for a test split, as XTREME's submission layout
  wants, and ``<task>/<split>-<lang>...`` for any other split, so a language scored on dev (xtreme-mini's
  substitutions) is never passed off as a test submission (``xeval score`` reads ``test-`` files only).
- **A JSON-lines sidecar** beside each prediction file, ``<task>/<split>-<lang>.jsonl``: one line per example,
  ``{"id", "gold", "prediction", "correct"}`` from the unit's stored per-example outcomes (``xeval.outcomes``),
  where XTREME's own layout has only predictions in a fixed order. ``correct`` is the example's headline outcome:
  the label (classification), exact match (QA), every tag (tagging), the top-1 en→xx retrieval (Tatoeba). Units
  without outcomes (label-free test files, BUCC) get no sidecar.
"""

from __future__ import annotations

import json
from pathlib import Path

# the per-example statistic that says "this example is right", per headline metric ("mean" aggregates: 100 or 0)
_CORRECT = ("exact_match", "accuracy", "accuracy_en_xx")


def export_name(split: str, lang: str, suffix: str) -> str:
    """``test-de.tsv`` for the test split, ``dev-de.tsv`` for dev (XTREME's layout names test files only)."""
    from xeval.results import _slug

    return f"{_slug(split)}-{_slug(lang)}.{suffix}"


def renamed_for_split(name: str, split: str) -> str:
    """An adapter's ``test-<lang>...`` file name under the split it really holds."""
    return f"{split}-{name[len('test-'):]}" if name.startswith("test-") and split != "test" else name


def sidecar_text(outcomes) -> str | None:
    """The JSON-lines sidecar of a unit's outcomes (None without outcomes)."""
    if outcomes is None:
        return None
    correct = _correct(outcomes)
    lines = []
    for i, (ident, gold, prediction) in enumerate(zip(outcomes.ids, outcomes.gold, outcomes.prediction)):
        lines.append(json.dumps({"id": ident, "gold": gold, "prediction": prediction,
                                 "correct": None if correct is None else bool(correct[i])}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def _correct(outcomes) -> list[bool] | None:
    for name in _CORRECT:
        metric = outcomes.metrics.get(name)
        if metric is not None and metric.aggregate == "mean":
            return [float(v) >= 100.0 - 1e-9 for v in metric.stats["score"]]
    if any(m.aggregate == "f1" for m in outcomes.metrics.values()):  # tagging: the whole sentence right
        return [list(g) == list(p) for g, p in zip(outcomes.gold, outcomes.prediction)]
    return None


def write_sidecar(path: str | Path, outcomes) -> Path | None:
    """``<path without suffix>.jsonl`` beside an exported prediction file."""
    from xeval.atomic import write_text

    text = sidecar_text(outcomes)
    if text is None:
        return None
    target = Path(path).with_suffix(".jsonl")
    write_text(target, text)
    return target
