"""Layer sweeps: language-averaged score per layer and the "universal layer" (the figure: ``xeval.report.plots``).

Works on result records (``xeval.results.store.Record``) of probes, one per (model, probe, language, layer), so report
code can reuse it on a run folder (``load_records``).

The score of a record is its headline metric: ``aer`` (lower is better) for word alignment, else ``accuracy``
(Tatoeba en→xx), ``f1`` (BUCC) or ``precision_at_1`` (lexicon induction). A layer's score is the unweighted mean over
the languages that have a record at every layer of the sweep (so a half-finished sweep does not compare
different language sets). A curve's best layer is its argmax (argmin for AER; the lowest layer on ties).

The layer a probe is reported at (``choose_layers``) is never chosen on the reported split, which would be
optimistic: it is the best layer of the **selection split** (``dev``: BUCC's dev corpus, FLORES-200 dev retrieval for
Tatoeba), when one ran and is not the split reported; else the card's fixed layer for this depth (XTREME's protocol:
``hidden_states[8]`` of a 12-layer model), when it ran; else the last layer. Every table names the rule it used.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xeval.cards.catalog import known_card
from xeval.results.controls import control_parents
from xeval.results.store import PROBE_MODE

# (metric, higher is better), tried in order
HEADLINES = (("aer", False), ("accuracy", True), ("f1", True), ("precision_at_1", True), ("cka", True))


SELECTION_SPLIT = "dev"


@dataclass
class LayerCurve:
    model: str
    task: str
    metric: str
    higher_is_better: bool
    scores: dict[int, float]  # layer -> mean over languages
    languages: list[str]
    split: str = "test"

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


def layer_curves(records, metric: str | None = None, split: str | None = None) -> list[LayerCurve]:
    """One curve per (model, task) of the probe records (records without a layer are ignored), on ``split``; by
    default on the reported split of each (model, task): ``test`` where it ran, else its only split."""
    groups: dict[tuple[str, str, str], list] = {}
    for (model, task), splits in _layer_records(records).items():
        chosen = split if split is not None else reported_split(splits)
        scored = [r for r in splits.get(chosen, []) if r.metrics]  # label-free units have no score to sweep
        if scored:
            groups[(model, task, chosen)] = scored
    curves = []
    for (model, task, split_name), group in sorted(groups.items()):
        # over every record's metrics: a probe may store some metrics in one record only (neutrality's language ID)
        name, higher = headline(set().union(*(r.metrics for r in group)), metric)
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
        curves.append(LayerCurve(model, task, name, higher, scores, langs, split_name))
    return curves


def _layer_records(records) -> dict[tuple[str, str], dict[str, list]]:
    """{(model, task): {split: records with a layer}}."""
    out: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.unit.layer is not None:
            out[(r.unit.model, r.unit.task)][r.unit.split].append(r)
    return out


def reported_split(splits) -> str:
    """The split a probe's tables report: ``test`` where it ran, else a split other than the selection split
    (FLORES-200 reports ``devtest`` and selects on ``dev``: sorted first, ``dev`` would be reported), else the one
    split there is."""
    splits = sorted(splits)
    if "test" in splits:
        return "test"
    reportable = [s for s in splits if s != SELECTION_SPLIT]
    return reportable[0] if reportable else splits[0]


def universal_layer(records, metric: str | None = None) -> dict[tuple[str, str], tuple[int, float]]:
    """{(model, task): (best layer, its language-averaged score)} of each reported curve (the test set's own best:
    for analysis only; the layer tables report is ``choose_layers``')."""
    return {(c.model, c.task): (c.universal_layer, c.best_score) for c in layer_curves(records, metric)}


@dataclass
class LayerChoice:
    """The layer a probe is reported at, and the rule that chose it (never the reported split's own scores)."""

    layer: int
    rule: str  # "dev" | "card default" | "last layer" | "given"
    selection_score: float | None = None  # the selection split's language mean at ``layer`` (rule "dev")
    n_languages: int = 0  # languages behind that mean
    selection_source: str | None = None  # the selection split's dataset where it is another (Tatoeba: FLORES-200)

    def describe(self) -> str:
        if self.rule.startswith("chosen on "):  # --mode probe: chosen on its own selection set
            return self.rule
        if self.rule == SELECTION_SPLIT:
            source = f"{self.selection_source}; " if self.selection_source else ""
            langs = f"{self.n_languages} language{'s' * (self.n_languages != 1)}"
            return f"chosen on {SELECTION_SPLIT} ({source}mean over {langs})"
        if self.rule == "card default":
            return "the task card's fixed layer for this depth (no selection split ran)"
        if self.rule == "given":
            return "given on the command line"
        return "the last layer (no selection split ran and the card names no layer for this depth)"


def choose_layer(layers, selection: LayerCurve | None, default: int | None,
                 source: str | None = None) -> LayerChoice:
    """The rule of the module docstring over the reported curve's ``layers``; ``source``: the selection split's
    dataset where it is another than the task's (``selection_source``)."""
    layers = sorted(layers)
    if selection is not None:
        usable = {k: v for k, v in selection.scores.items() if k in layers}
        if usable:
            sign = 1 if selection.higher_is_better else -1
            best = max(sorted(usable), key=lambda k: (sign * usable[k], -k))
            return LayerChoice(best, SELECTION_SPLIT, usable[best], len(selection.languages), source)
    if default is not None and default in layers:
        return LayerChoice(default, "card default")
    return LayerChoice(layers[-1], "last layer")


def default_layers(records) -> dict[tuple[str, str], int]:
    """{(model, task): the card's fixed layer} from the probe records' ``config["default_layer"]``."""
    out = {}
    for r in records:
        layer = (r.config or {}).get("default_layer") if r.unit.layer is not None else None
        if isinstance(layer, int):
            out[(r.unit.model, r.unit.task)] = layer
    return out


def choose_layers(records, metric: str | None = None) -> dict[tuple[str, str], tuple[LayerChoice, LayerCurve | None]]:
    """{(model, task): (the chosen layer, the reported curve or None when the reported split is label-free)} for
    every probe in ``records``."""
    records = list(records)
    defaults = default_layers(records)
    selection = {(c.model, c.task): c for c in layer_curves(records, metric, split=SELECTION_SPLIT)}
    reported = {(c.model, c.task): c for c in layer_curves(records, metric)}
    out = {}
    for key, splits in _layer_records(records).items():
        split = reported_split(splits)
        layers = {r.unit.layer for r in splits[split]}
        curve = reported.get(key)
        if curve is not None:
            layers &= set(curve.scores)
        sel = selection.get(key) if split != SELECTION_SPLIT else None
        card = (splits[split][0].card or {}).get("name") if splits[split] else None
        out[key] = (choose_layer(layers, sel, defaults.get(key), selection_source(card or key[1])), curve)
    return out


def selection_source(task: str) -> str | None:
    """The dataset of ``task``'s selection split where it is another than the task's own (the card's
    ``split_sources``: FLORES-200 for Tatoeba), else None."""
    card = known_card(task)
    return card.split_sources.get(SELECTION_SPLIT) if card else None


def probe_mode_chosen(records: list) -> list:
    """The records with each probe-mode sweep narrowed to its chosen layer (``probe_mode.chosen_layers``: best on
    the selection set, never on a reported one). A control keeps the layer chosen for its model, so the two
    columns compare like with like."""
    from xeval.results.layers import chosen_layers


    chosen = chosen_layers(records)
    if not chosen:
        return records
    parents = control_parents(records)
    out = []
    for r in records:
        u = r.unit
        if u.mode != PROBE_MODE:
            out.append(r)
            continue
        model = parents[u.model][0] if u.model in parents else u.model
        pick = chosen.get((model, u.task, u.setting)) or chosen.get((u.model, u.task, u.setting))
        if pick is not None and u.layer == pick[0]:
            out.append(r)
    return out


def chosen_layers(records) -> dict[tuple[str, str, str], tuple[int, float, str]]:
    """{(model, task, setting): (layer, selection score, selection set)} for probe-mode records: the layer whose
    head scored best on the selection set (English dev or held-out English training data; never a reported
    set); the lowest layer on ties."""
    best: dict[tuple[str, str, str], tuple[int, float, str]] = {}
    for r in records:
        u = r.unit
        sel = (r.extra or {}).get("probe_selection")
        if u.mode != PROBE_MODE or not sel:
            continue
        key = (u.model, u.task, u.setting)
        candidate = (int(u.layer), float(sel["score"]), str(sel["on"]))
        held = best.get(key)
        if held is None or candidate[1] > held[1] or (candidate[1] == held[1] and candidate[0] < held[0]):
            best[key] = candidate
    return best
