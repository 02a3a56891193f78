"""Layer sweeps: language-averaged score per layer, the "universal layer", and the layer-sweep figure.

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
from pathlib import Path

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


def plot_layer_sweep(records, out_stem: str | Path, by: str = "probe", title: str | None = None) -> list[Path]:
    """Write ``<out_stem>.png`` and ``<out_stem>.pdf``: score vs layer.

    by="probe": one line per (model, probe), language-averaged, AER drawn as 100 − AER so that up is better for
    every line; by="language": one line per language (of every probe in ``records``). The universal layer of each
    line is marked.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from xeval.atomic import atomic_path
    from xeval.controls import control_parents

    records = list(records)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    parents = control_parents(records)  # a control (--control) is drawn dashed in its model's colour
    curves = sorted(layer_curves(records), key=lambda c: c.model in parents)  # stable: models first
    models = {c.model for c in curves}
    colors: dict = {}
    for curve in curves:
        flip = (lambda v: 100.0 - v) if not curve.higher_is_better else (lambda v: v)
        label_metric = f"100 − {curve.metric.upper()}" if not curve.higher_is_better else curve.metric
        prefix = f"{curve.model} " if len(models) > 1 else ""
        if by == "probe":
            lines = {curve.task: (f"{prefix}{curve.task} ({label_metric})", curve.scores)}
        elif by == "language":
            lines = {}
            for lang in curve.languages:
                lines[(curve.task, lang)] = (f"{prefix}{curve.task} {lang}", {
                    r.unit.layer: r.metrics[curve.metric] for r in records
                    if r.unit.model == curve.model and r.unit.task == curve.task and r.unit.lang == lang
                    and r.unit.layer is not None and curve.metric in r.metrics})
        else:
            raise ValueError(f"by must be 'probe' or 'language', found {by!r}")
        parent = parents.get(curve.model, (None,))[0]
        for sub, (label, scores) in lines.items():
            layers = sorted(scores)
            values = [flip(scores[k]) for k in layers]
            style = {"color": colors.get((parent, sub)), "linestyle": "--"} if curve.model in parents else {}
            (line,) = ax.plot(layers, values, marker="o", markersize=3, label=label, **style)
            colors.setdefault((curve.model, sub), line.get_color())
            best = max(layers, key=lambda k: (values[layers.index(k)], -k))
            ax.plot([best], [values[layers.index(best)]], marker="*", markersize=12, color=line.get_color())
    ax.set_xlabel("layer (hidden_states index; 0 = embeddings)")
    ax.set_ylabel("score (higher is better)")
    ax.set_title(title or "Layer sweep (★ = universal layer)")
    ax.grid(alpha=0.3)
    if curves:
        ax.legend(fontsize=7, loc="best")
        all_layers = sorted({k for c in curves for k in c.scores})
        ax.set_xticks(all_layers)
    fig.tight_layout()
    out = []
    for ext in ("png", "pdf"):
        path = Path(f"{out_stem}.{ext}")
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150)
        out.append(path)
    plt.close(fig)
    return out
