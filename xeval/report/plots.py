"""Figures for papers: layer sweeps, per-language bars, transfer gaps. Each is written as PNG and PDF.

Made to survive print: axis labels with units, a legend, colour plus marker/hatch so lines differ in grey,
``bbox_inches="tight"`` so no label is clipped, the figure widened with the number of languages.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from xeval.atomic import atomic_path  # noqa: E402
from xeval.errors import UserError  # noqa: E402
from xeval.report.frame import headline_metric, lower_is_better  # noqa: E402
from xeval.report.tables import (  # noqa: E402
    Results,
    gap_table,
    order_languages,
    sweeps,
    task_title,
    universal_layer,
)

KINDS = ("layers", "languages", "gap", "correlation", "tokenizer")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
_METRIC_LABELS = {
    "f1": "F1", "em": "exact match", "exact_match": "exact match", "accuracy": "accuracy", "aer": "AER",
    "token_accuracy": "token accuracy", "accuracy_mean": "top-1 accuracy, mean of both directions",
    "accuracy_en_xx": "top-1 accuracy, en→xx", "accuracy_xx_en": "top-1 accuracy, xx→en",
    "precision_at_1": "precision@1", "precision": "precision", "recall": "recall",
}
_TASK_METRIC_LABELS = {("tatoeba", "accuracy"): "top-1 accuracy, en→xx", ("bucc", "f1"): "mining F1"}

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
                     "axes.spines.top": False, "axes.spines.right": False})


def metric_label(metric: str, task: str = "") -> str:
    text = _TASK_METRIC_LABELS.get((task, metric)) or _METRIC_LABELS.get(metric, metric.replace("_", " "))
    return f"{text} (%{', lower is better' if lower_is_better(metric) else ''})"


def _colors(n: int):
    cmap = plt.get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def _styles(labels: list[str], controls: dict[str, str]) -> dict[str, dict]:
    """Colour and marker per row label: models get the next colour/marker; a control (``--control``) its model's,
    drawn dashed with hollow markers (distinct in grey print too)."""
    models = [x for x in labels if x not in controls]
    out = {x: {"color": c, "marker": MARKERS[i % len(MARKERS)], "linestyle": "-"}
           for i, (x, c) in enumerate(zip(models, _colors(len(models))))}
    extra = [x for x in labels if x in controls and controls[x] not in out]  # a control without its model
    for i, (x, c) in enumerate(zip(extra, _colors(len(models) + len(extra))[len(models):])):
        out[x] = {"color": c, "marker": MARKERS[(len(models) + i) % len(MARKERS)], "linestyle": "--",
                  "markerfacecolor": "white"}
    for x in labels:
        if x not in out:
            out[x] = {**out[controls[x]], "linestyle": "--", "markerfacecolor": "white"}
    return out


def plot_layers(results: Results):
    """Score vs layer, one line per model, each model's universal (best) layer marked with a star; a control
    (``--control random-init``) as a dashed line in its model's colour."""
    data = sweeps(results)
    if not data:
        raise UserError("no probe records with layers in the given runs: nothing to plot for --plot layers")
    controls = results.control_rows()
    fig, axes = plt.subplots(1, len(data), figsize=(4.6 * len(data), 3.4), squeeze=False)
    for ax, (task, sweep) in zip(axes[0], data.items()):
        metric = sweep.attrs["metric"]
        styles = _styles(list(sweep.index), controls)
        for model, row in sweep.iterrows():
            row = row.dropna()
            color = styles[model]["color"]
            ax.plot(row.index, row.values, label=model, **styles[model])
            best = universal_layer(row, metric)
            ax.plot([best], [row[best]], marker="*", markersize=15, color=color, markeredgecolor="black",
                    linestyle="none", zorder=5)
        ax.plot([], [], marker="*", markersize=12, color="white", markeredgecolor="black", linestyle="none",
                label="universal layer (best)")
        ax.set_title(f"{task_title(task)}: layer sweep")
        ax.set_xlabel("layer (hidden_states index; 0 = embeddings)")
        ax.set_ylabel(metric_label(metric, task))
        ax.set_xticks(sorted(sweep.columns))
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 4),
               frameon=False)
    fig.tight_layout()
    return fig


def plot_languages(results: Results):
    """Per task: bars per language (one colour per model); dashed lines at each model's English score."""
    tasks = results.tasks()
    n_models = max(1, results.stats["model"].nunique())
    most_langs = int(results.stats.groupby("task")["lang"].nunique().max())
    panel_width = max(3.6, 0.22 * most_langs * n_models + 1.2)
    ncols = 1 if panel_width > 8 else min(3, len(tasks))
    nrows = -(-len(tasks) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(panel_width * ncols, 24), 2.8 * nrows + 0.6),
                             squeeze=False)
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    handles = {}
    for ax, task in zip(axes.flat, tasks):
        stats = results.stats[results.stats["task"] == task]
        metric = headline_metric(task, stats["metric"])
        stats = stats[stats["metric"] == metric]
        langs = order_languages(stats["lang"])
        rows = list(dict.fromkeys(zip(stats["model"], stats["setting"])))
        width = 0.8 / len(rows)
        x = np.arange(len(langs))
        controls = results.control_rows()  # a control's bars: its model's colour, lighter
        styles = _styles([results.row(m, st) for m, st in rows], controls)
        for i, (model, setting) in enumerate(rows):
            group = stats[(stats["model"] == model) & (stats["setting"] == setting)].set_index("lang")
            means = group["mean"].reindex(langs)
            errs = group["std"].reindex(langs).fillna(0.0)
            label = results.row(model, setting)
            color = styles[label]["color"]
            ax.bar(x + (i - (len(rows) - 1) / 2) * width, means, width, yerr=errs if errs.any() else None,
                   color=color, hatch=HATCHES[i % len(HATCHES)], edgecolor="black", linewidth=0.4,
                   label=label, capsize=2, alpha=0.45 if label in controls else None)
            if "en" in group.index:
                ax.axhline(group.at["en", "mean"], color=color, linestyle="--", linewidth=1.2,
                           label=f"{label}: English")
        ax.set_xticks(x, langs, rotation=90 if len(langs) > 20 else 0)
        ax.set_xlim(-0.6, len(langs) - 0.4)
        layers = sorted({int(x) for x in stats["layer"] if x >= 0})
        where = f" (layer {', '.join(map(str, layers))})" if layers else ""
        ax.set_title(task_title(task) + where)
        ax.set_xlabel("language")
        ax.set_ylabel(metric_label(metric, task))
        ax.grid(True, axis="y", alpha=0.3)
        ax.margins(y=0.12)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.tight_layout()
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(len(handles), 4), frameon=False)
    return fig


def plot_gap(results: Results):
    """Transfer gap per task, bars per model, values printed on the bars."""
    table = gap_table(results).mean
    tasks = list(table.columns)
    width = 0.8 / len(table)
    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(max(5.5, 0.9 * len(tasks) * max(1, len(table) / 2) + 2), 3.6))
    for i, ((model, row), color) in enumerate(zip(table.iterrows(), _colors(len(table)))):
        bars = ax.bar(x + (i - (len(table) - 1) / 2) * width, row.values, width, color=color,
                      hatch=HATCHES[i % len(HATCHES)], edgecolor="black", linewidth=0.4, label=model)
        ax.bar_label(bars, fmt="%.1f", fontsize=8, padding=2)
    ax.set_xticks(x, ["avg" if t == "avg" else t for t in tasks])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_title("Cross-lingual transfer gap (English minus mean of other languages)")
    ax.set_xlabel("task (headline metric; F1 for QA); avg = mean over tasks, only for models with every task")
    ax.set_ylabel("gap (points, lower is better)")
    ax.margins(y=0.15)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def plot_correlation(results: Results):
    """Probe score (x) against each task's zero-shot score (y) across languages: a panel per (probe, task), a colour
    per model, each point labelled with its language, Spearman's ρ and n in the panel title."""
    from scipy import stats as sps

    from xeval.report.correlation import MIN_LANGUAGES, pairs, per_language

    frame = per_language(results)
    found = [p for p in pairs(frame, set(results.control_rows())) if p[3] == "score" and p[0] != "pooled"]
    panels = list(dict.fromkeys((probe, task) for _, probe, task, _, _ in found))
    if not panels:
        raise UserError("no probe and fine-tuning task share languages: nothing to plot for --plot correlation")
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    rows = list(dict.fromkeys(r for r, *_ in found))
    styles = _styles(rows, results.control_rows())
    for ax, (probe, task) in zip(axes.flat, panels):
        parts = []
        for row, p, t, _, joined in found:
            if (p, t) != (probe, task):
                continue
            x, y = joined["value_probe"].to_numpy(), joined["value_task"].to_numpy()
            style = styles[row]
            ax.scatter(x, y, color=style["color"], marker=style["marker"], s=22, label=row,
                       facecolors="white" if style.get("markerfacecolor") == "white" else style["color"])
            for xi, yi, lang in zip(x, y, joined["lang"]):
                ax.annotate(lang, (xi, yi), fontsize=7, xytext=(2, 2), textcoords="offset points")
            if len(x) >= MIN_LANGUAGES and np.ptp(x) > 0 and np.ptp(y) > 0:
                parts.append(f"ρ={sps.spearmanr(x, y).statistic:.2f}, n={len(x)}")
        ax.set_title(f"{task_title(task)} vs {probe}\n" + "; ".join(parts), fontsize=9)
        ax.set_xlabel(f"{probe} (points)")
        ax.set_ylabel(f"{task_title(task)} zero-shot score (points)")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if len(rows) > 1:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 4),
                   frameon=False)
    fig.tight_layout()
    return fig


def plot_tokenizer(results: Results):
    """Per task: each language's transfer gap (English minus the language) against its tokenizer fertility
    (subwords per word on FLORES-200 devtest), a colour per model, points labelled by language."""
    from xeval.report.tokenization import fertility_points

    points = fertility_points(results)
    if points.empty:
        raise UserError("no language has both tokenizer diagnostics and a transfer gap: nothing to plot")
    tasks = list(dict.fromkeys(points["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.4 * len(tasks), 3.6), squeeze=False)
    styles = _styles(list(dict.fromkeys(points["row"])), {})
    for ax, task in zip(axes[0], tasks):
        for row, group in points[points["task"] == task].groupby("row", sort=False):
            ax.scatter(group["fertility"], group["gap"], label=row, s=22, color=styles[row]["color"],
                       marker=styles[row]["marker"])
            for x, y, lang in zip(group["fertility"], group["gap"], group["lang"]):
                ax.annotate(lang, (x, y), fontsize=7, xytext=(2, 2), textcoords="offset points")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{task_title(task)}: transfer gap vs fertility")
        ax.set_xlabel("subwords per word (FLORES-200 devtest)")
        ax.set_ylabel("gap: English minus language (points)")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if len(labels) > 1:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 4),
                   frameon=False)
    fig.tight_layout()
    return fig


def plot(results: Results, kind: str, out: str | Path) -> list[Path]:
    """Draw ``kind`` and write ``<out>.png`` and ``<out>.pdf`` (a suffix on ``out`` is dropped)."""
    makers = {"layers": plot_layers, "languages": plot_languages, "gap": plot_gap, "correlation": plot_correlation,
              "tokenizer": plot_tokenizer}
    if kind not in makers:
        raise UserError(f"unknown plot {kind!r}; expected one of {', '.join(KINDS)}")
    fig = makers[kind](results)
    out = Path(out)
    stem = out.with_suffix("") if out.suffix.lower() in (".png", ".pdf") else out
    written = []
    try:
        for fmt in ("png", "pdf"):
            path = stem.parent / f"{stem.name}.{fmt}"
            with atomic_path(path) as tmp:
                # PDF metadata without a date, so a rerun writes the same file
                meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
                fig.savefig(tmp, format=fmt, dpi=200, bbox_inches="tight", metadata=meta)
            written.append(path)
    finally:
        plt.close(fig)
    return written
