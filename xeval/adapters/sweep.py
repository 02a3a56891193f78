"""Layer sweeps: language-averaged score per layer and the "universal layer" (the figure: ``xeval.report.plots``).

Works on result records (``xeval.results.Record``) of probes, one per (model, probe, language, layer), so report
code can reuse it on a run folder (``load_records``).

The score of a record is its headline metric: ``aer`` (lower is better) for word alignment, else ``accuracy``
(Tatoeba en→xx), ``f1`` (BUCC) or ``precision_at_1`` (lexicon induction). A layer's score is the unweighted mean over
the languages that have a record at every layer of the sweep (so a half-finished sweep does not compare
different language sets). The universal layer is the best layer of that curve (argmax; argmin for AER; the
lowest layer on ties).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

# (metric, higher is better), tried in order
HEADLINES = (("aer", False), ("accuracy", True), ("f1", True), ("precision_at_1", True))


@dataclass
class LayerCurve:
    model: str
    task: str
    metric: str
    higher_is_better: bool
    scores: dict[int, float]  # layer -> mean over languages
    languages: list[str]

    @property
    def universal_layer(self) -> int:
        sign = 1 if self.higher_is_better else -1
        return max(sorted(self.scores), key=lambda layer: (sign * self.scores[layer], -layer))

    @property
    def best_score(self) -> float:
        return self.scores[self.universal_layer]


def headline(metrics: dict, metric: str | None = None) -> tuple[str, bool]:
    if metric is not None:
        return metric, metric != "aer" and not metric.endswith("_aer")
    for name, higher in HEADLINES:
        if name in metrics:
            return name, higher
    raise ValueError(f"no headline metric among {sorted(metrics)}; pass metric=")


def layer_curves(records, metric: str | None = None) -> list[LayerCurve]:
    """One curve per (model, task) of the probe records (records without a layer are ignored)."""
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for r in records:
        if r.unit.layer is not None:
            groups[(r.unit.model, r.unit.task)].append(r)
    curves = []
    for (model, task), group in sorted(groups.items()):
        name, higher = headline(group[0].metrics, metric)
        table: dict[int, dict[str, float]] = defaultdict(dict)
        for r in group:
            if name in r.metrics:
                table[r.unit.layer][r.unit.lang] = r.metrics[name]
        if not table:
            continue
        common = set.intersection(*(set(v) for v in table.values()))
        if not common:
            continue
        langs = sorted(common)
        scores = {layer: sum(v[lang] for lang in langs) / len(langs) for layer, v in sorted(table.items())}
        curves.append(LayerCurve(model, task, name, higher, scores, langs))
    return curves


def universal_layer(records, metric: str | None = None) -> dict[tuple[str, str], tuple[int, float]]:
    """{(model, task): (universal layer, its language-averaged score)}."""
    return {(c.model, c.task): (c.universal_layer, c.best_score) for c in layer_curves(records, metric)}
