"""The floor a score is read against: the chance and majority-class baselines of a record, where its task has one.

A score near its baseline says the model learnt nothing (the quickstart's PAWS-X at 51.0 in every language is the
majority class of its test sets). Computed from the record's own per-example outcomes (``xeval.results.outcomes``),
so each baseline is on exactly the examples the score is on, in the record's headline metric:

- classification (accuracy): **chance** = 100 / number of labels (a uniform guess); **majority** = the share of the
  most frequent gold label, the best any constant prediction can score on these examples;
- tagging (chunk F1, POS and NER): **majority** = the F1 of tagging every token with the most frequent gold tag
  (for NER that tag is ``O``: no chunk, F1 0); no chance level (a random tagger's chunk F1 has no closed form);
- retrieval (top-1 accuracy): **chance** = 100 / number of candidates (one per query);
- QA, word alignment, lexicon induction: none (no constant or uniform predictor defines one).
"""

from __future__ import annotations

from collections import Counter

from xeval.metrics.chunk_f1 import chunk_scores

TAGGING_FORMATS = ("tagging", "conllu")
CLASSIFICATION_FORMATS = ("pairs", "mnli_json")


def baselines(record) -> dict[str, float]:
    """{"chance": points, "majority": points}, each where the record's task has it (an empty dict where none)."""
    out: dict[str, float] = {}
    config, metrics = record.config or {}, record.metrics or {}
    fmt = (record.data or {}).get("format")
    if fmt == "tatoeba" and record.n_examples and "accuracy" in metrics:
        out["chance"] = 100.0 / record.n_examples
        return out
    if fmt not in TAGGING_FORMATS + CLASSIFICATION_FORMATS:
        return out
    outcomes = record.outcomes()
    gold = list(outcomes.gold) if outcomes is not None else []
    if not gold:
        return out
    if fmt in TAGGING_FORMATS:
        tags = Counter(t for sentence in gold for t in sentence)
        if tags and "f1" in metrics:
            common = tags.most_common(1)[0][0]
            constant = [[common] * len(sentence) for sentence in gold]
            legacy = str(config.get("chunk_types", "")).startswith("seqeval 0.0.x")
            out["majority"] = float(chunk_scores(gold, constant, legacy_types=legacy)["f1"])
        return out
    if "accuracy" in metrics:
        labels = config.get("labels")
        if isinstance(labels, list) and labels:
            out["chance"] = 100.0 / len(labels)
        out["majority"] = 100.0 * Counter(map(str, gold)).most_common(1)[0][1] / len(gold)
    return out
