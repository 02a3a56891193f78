"""Figures for papers: layer sweeps, per-language bars, transfer gaps, correlations. Each is written as PNG and PDF.

Made for a paper's column (``width="column"``, 3.3 in) or page (``"page"``, 6.9 in), at exactly that width so
that ``\\includegraphics[width=\\columnwidth]`` prints the text at its size, never below 7 pt (labels 8 pt, ticks
and legends 7 pt); PDFs embed TrueType (Type 42) fonts, never Type 3, as ACL's and IEEE's checkers require. The
Okabe-Ito palette (safe for the common colour-vision deficiencies) plus markers and hatches, so lines and bars
also differ in grey print; error bars (± std over seeds) wherever a value has two seeds or more. Axes and legends
are laid out inside the figure (constrained layout; the legend below the axes), so nothing is clipped and the
saved size is the size asked for. Per-language bars turn horizontal when the languages do not fit across.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from xeval.base.atomic import atomic_path  # noqa: E402
from xeval.base.errors import UserError  # noqa: E402
from xeval.report.frame import headline_metric, lower_is_better  # noqa: E402
from xeval.report.tables.base import Results, order_languages, task_title  # noqa: E402
from xeval.report.tables.gap_table import gap_column, gap_table  # noqa: E402
from xeval.report.tables.layer_table import sweeps  # noqa: E402
from xeval.report.tables.tokenizer_table import fertility_points  # noqa: E402

KINDS = ("layers", "languages", "gap", "correlation", "tokenizer", "neutrality", "steps")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
_METRIC_LABELS = {
    "f1": "F1", "em": "exact match", "exact_match": "exact match", "accuracy": "accuracy", "aer": "AER",
    "token_accuracy": "token accuracy", "accuracy_mean": "top-1 accuracy, mean of both directions",
    "accuracy_en_xx": "top-1 accuracy, en→xx", "accuracy_xx_en": "top-1 accuracy, xx→en",
    "precision_at_1": "precision@1", "precision": "precision", "recall": "recall",
}
_TASK_METRIC_LABELS = {("tatoeba", "accuracy"): "top-1 accuracy, en→xx", ("bucc", "f1"): "mining F1"}

WIDTHS = {"column": 3.3, "page": 6.9}  # inches: a two-column paper's column and its full text width
MIN_POINTS = 7.0  # the smallest text in any figure
# Okabe & Ito (2008), "Color Universal Design": distinguishable with protanopia, deuteranopia and tritanopia
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

plt.rcParams.update({"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
                     "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 8,
                     "axes.spines.top": False, "axes.spines.right": False,
                     "pdf.fonttype": 42, "ps.fonttype": 42})  # TrueType (Type 42) fonts in PDF/PS, not Type 3


def metric_label(metric: str, task: str = "") -> str:
    text = _TASK_METRIC_LABELS.get((task, metric)) or _METRIC_LABELS.get(metric, metric.replace("_", " "))
    return f"{text} (%{', lower is better' if lower_is_better(metric) else ''})"


def _colors(n: int):
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]


def _inches(width: str | float) -> float:
    if isinstance(width, int | float):
        return float(width)
    if width not in WIDTHS:
        raise UserError(f"--figure-width: expected column or page, found {width!r}")
    return WIDTHS[width]


def _wrap(text: str, inches: float, points: float = 8.0) -> str:
    """Break a long axis label so it fits ``inches`` (about 0.55 em a character)."""
    import textwrap

    return textwrap.fill(text, max(16, int(inches * 72 / (0.55 * points))))


def _subplots(n: int, width: float, panel_height: float, max_cols: int = 3, widest: float = 2.2):
    """``n`` panels at ``width`` inches: as many per row as fit ``widest`` inches each (at most ``max_cols``)."""
    ncols = max(1, min(n, max_cols, int(width // widest)))
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, panel_height * nrows + 0.5), squeeze=False,
                             layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def _legend(fig, handles, labels, width: float) -> None:
    """One legend below the axes, inside the figure."""
    if not labels:
        return
    per_row = max(1, int(width // 1.6))
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), per_row), frameon=False)


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


def plot_layers(results: Results, width: str | float = "column"):
    """Score vs layer, one line per model, each model's chosen layer (``Results.layer_rules``: on the selection
    split, never on the plotted one) marked with a star; a control (``--control random-init``) as a dashed line in
    its model's colour. (Probes are deterministic: one value per layer, no error bars.)"""
    data = sweeps(results)
    if not data:
        raise UserError("no probe records with layers in the given runs: nothing to plot for --plot layers")
    controls = results.control_rows()
    inches = _inches(width)
    fig, axes = _subplots(len(data), inches, 2.3)
    for ax, (task, sweep) in zip(axes.flat, data.items()):
        metric = sweep.attrs["metric"]
        styles = _styles(list(sweep.index), controls)
        for model, row in sweep.iterrows():
            row = row.dropna()
            color = styles[model]["color"]
            ax.plot(row.index, row.values, label=model, markersize=4, linewidth=1.2, **styles[model])
            best = results.chosen_layer(task, model)  # chosen on the selection split, never on this curve
            if best is not None and best in row.index:
                ax.plot([best], [row[best]], marker="*", markersize=10, color=color, markeredgecolor="black",
                        markeredgewidth=0.5, linestyle="none", zorder=5)
        ax.plot([], [], marker="*", markersize=8, color="white", markeredgecolor="black", linestyle="none",
                label="chosen layer (selection split)")
        panel = inches / axes.shape[1]
        ax.set_title(f"{task_title(task)}: layer sweep")
        ax.set_xlabel(_wrap("layer (hidden_states index; 0 = embeddings)", panel))
        ax.set_ylabel(_wrap(metric_label(metric, task), 2.0))
        ax.set_xticks(sorted(sweep.columns))
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    _legend(fig, handles, labels, inches)
    return fig


def plot_languages(results: Results, width: str | float = "column"):
    """Per task: bars per language (one colour per model, ± std over seeds where there are two or more);
    dashed lines at each model's English score. A panel per task, one above the other; where a task's languages do
    not fit across the panel (7 pt labels), its bars run horizontally, a row per language."""
    tasks = results.tasks()
    inches = _inches(width)
    n_models = max(1, results.stats["model"].nunique())
    n_langs = {t: results.stats[results.stats["task"] == t]["lang"].nunique() for t in tasks}
    across = int((inches * 72 - 45) // 9)  # languages that fit across: a 7 pt label turned upright needs ~9 pt
    heights = [max(1.8, 0.05 * n_langs[t] * max(2, n_models) + 0.7) if n_langs[t] > across else 1.9 for t in tasks]
    fig, axes = plt.subplots(len(tasks), 1, figsize=(inches, sum(heights) + 0.6), squeeze=False,
                             layout="constrained", gridspec_kw={"height_ratios": heights})
    handles = {}
    for ax, task in zip(axes.flat, tasks):
        stats = results.stats[results.stats["task"] == task]
        metric = headline_metric(task, stats["metric"])
        stats = stats[stats["metric"] == metric]
        langs = order_languages(stats["lang"])
        rows = list(dict.fromkeys(zip(stats["model"], stats["setting"])))
        width = 0.8 / len(rows)
        x = np.arange(len(langs))
        horizontal = len(langs) > across
        controls = results.control_rows()  # a control's bars: its model's colour, lighter
        styles = _styles([results.row(m, st) for m, st in rows], controls)
        for i, (model, setting) in enumerate(rows):
            group = stats[(stats["model"] == model) & (stats["setting"] == setting)].set_index("lang")
            means = group["mean"].reindex(langs)
            errs = group["std"].reindex(langs).fillna(0.0)
            label = results.row(model, setting)
            color = styles[label]["color"]
            seeds = group["n_seeds"].reindex(langs).fillna(0)
            errors = errs.where(seeds >= 2, 0.0)
            style = {"color": color, "hatch": HATCHES[i % len(HATCHES)], "edgecolor": "black", "linewidth": 0.3,
                     "label": label, "capsize": 1.5, "alpha": 0.45 if label in controls else None,
                     "error_kw": {"elinewidth": 0.6, "capthick": 0.6}}
            offset = x + (i - (len(rows) - 1) / 2) * width
            spread = errors if (seeds >= 2).any() else None  # bars wherever there are seeds to spread (even ± 0)
            if horizontal:
                ax.barh(offset, means, width, xerr=spread, **style)
            else:
                ax.bar(offset, means, width, yerr=spread, **style)
            if "en" in group.index:
                line = ax.axvline if horizontal else ax.axhline
                line(group.at["en", "mean"], color=color, linestyle="--", linewidth=0.9, label=f"{label}: English")
        layers = sorted({int(x) for x in stats["layer"] if x >= 0})
        where = f" (layer {', '.join(map(str, layers))})" if layers else ""
        ax.set_title(task_title(task) + where)
        if horizontal:
            ax.set_yticks(x, langs)
            ax.set_ylim(len(langs) - 0.4, -0.6)  # English on top
            ax.set_ylabel("language")
            ax.set_xlabel(_wrap(metric_label(metric, task), inches))
            ax.grid(True, axis="x", alpha=0.3)
            ax.margins(x=0.08)
        else:
            ax.set_xticks(x, langs, rotation=90 if len(langs) > 12 else 0)
            ax.set_xlim(-0.6, len(langs) - 0.4)
            ax.set_xlabel("language")
            ax.set_ylabel(_wrap(metric_label(metric, task), 1.6))
            ax.grid(True, axis="y", alpha=0.3)
            ax.margins(y=0.12)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    _legend(fig, list(handles.values()), list(handles), inches)
    return fig


def gap_std(results: Results) -> dict[tuple[str, str], float]:
    """{(row label, gap column): std over seeds of the gap computed per seed} where two or more seeds cover English
    and every other language of the task (the error bars of ``plot_gap``)."""
    out = {}
    for task in results.tasks():
        long = results.long[results.long["task"] == task]
        metric = headline_metric(task, long["metric"])
        long = long[long["metric"] == metric]
        for (model, setting), group in long.groupby(["model", "setting"], sort=False):
            per_seed = group.pivot_table(index="seed", columns="lang", values="value", aggfunc="mean").dropna()
            if "en" not in per_seed.columns or per_seed.shape[1] < 2 or len(per_seed) < 2:
                continue
            gaps = per_seed["en"] - per_seed.drop(columns="en").mean(axis=1)
            out[(results.row(model, setting), gap_column(task))] = float(gaps.std(ddof=1))
    return out


def plot_gap(results: Results, width: str | float = "column"):
    """Transfer gap per task, bars per model (± std over seeds where there are two or more); the values printed
    on the bars when there are few enough to read."""
    table = gap_table(results).mean
    errors = gap_std(results)
    tasks = list(table.columns)
    inches = _inches(width)
    bar = 0.8 / len(table)
    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(inches, 2.6), layout="constrained")
    labelled = table.size <= inches * 3  # about three value labels an inch
    for i, ((model, row), color) in enumerate(zip(table.iterrows(), _colors(len(table)))):
        err = [errors.get((model, t), 0.0) for t in tasks]
        bars = ax.bar(x + (i - (len(table) - 1) / 2) * bar, row.values, bar, color=color,
                      yerr=err if any((model, t) in errors for t in tasks) else None, capsize=1.5,
                      error_kw={"elinewidth": 0.6},
                      hatch=HATCHES[i % len(HATCHES)], edgecolor="black", linewidth=0.3, label=model)
        if labelled:
            ax.bar_label(bars, fmt="%.1f", fontsize=MIN_POINTS, padding=1)
    ax.set_xticks(x, ["avg" if t == "avg" else t for t in tasks], rotation=45 if len(tasks) > 5 else 0)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_title(_wrap("Cross-lingual transfer gap (English minus mean of other languages)", inches))
    ax.set_xlabel(_wrap("task (headline metric; F1 for QA); avg = mean over tasks, only for models with every "
                        "task", inches))
    ax.set_ylabel("gap (points, lower is better)")
    ax.margins(y=0.15)
    ax.grid(True, axis="y", alpha=0.3)
    _legend(fig, *ax.get_legend_handles_labels(), inches)
    return fig


def plot_correlation(results: Results, width: str | float = "column"):
    """Probe score (x) against each task's zero-shot score (y) across languages: a panel per (probe, task), a colour
    per model, each point labelled with its language, Spearman's ρ and n in the panel title."""
    # here, not at the top: the correlation table imports scipy, which every other figure and table does without
    from scipy import stats as sps

    from xeval.report.tables.correlation import MIN_LANGUAGES, pairs, per_language

    frame = per_language(results)
    found = [p for p in pairs(frame, set(results.control_rows())) if p[3] == "score" and p[0] != "pooled"]
    panels = list(dict.fromkeys((probe, task) for _, probe, task, _, _ in found))
    if not panels:
        raise UserError("no probe and fine-tuning task share languages: nothing to plot for --plot correlation")
    inches = _inches(width)
    fig, axes = _subplots(len(panels), inches, 2.6)
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
        ax.set_title(f"{task_title(task)} vs {probe}\n" + "; ".join(parts))
        ax.set_xlabel(f"{probe} (points)")
        ax.set_ylabel(_wrap(f"{task_title(task)} zero-shot score (points)", 2.0))
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if len(rows) > 1:
        _legend(fig, handles, labels, inches)
    return fig


def plot_tokenizer(results: Results, width: str | float = "column"):
    """Per task: each language's transfer gap (English minus the language) against its tokenizer fertility
    (subwords per word on FLORES-200 devtest), a colour per model, points labelled by language."""
    points = fertility_points(results)
    if points.empty:
        raise UserError("no language has both tokenizer diagnostics and a transfer gap: nothing to plot")
    tasks = list(dict.fromkeys(points["task"]))
    inches = _inches(width)
    fig, axes = _subplots(len(tasks), inches, 2.6)
    styles = _styles(list(dict.fromkeys(points["row"])), {})
    for ax, task in zip(axes.flat, tasks):
        for row, group in points[points["task"] == task].groupby("row", sort=False):
            ax.scatter(group["fertility"], group["gap"], label=row, s=22, color=styles[row]["color"],
                       marker=styles[row]["marker"])
            for x, y, lang in zip(group["fertility"], group["gap"], group["lang"]):
                ax.annotate(lang, (x, y), fontsize=7, xytext=(2, 2), textcoords="offset points")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{task_title(task)}: transfer gap vs fertility")
        ax.set_xlabel(_wrap("subwords per word (FLORES-200 devtest)", 2.0))
        ax.set_ylabel(_wrap("gap: English minus language (points)", 2.0))
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if len(labels) > 1:
        _legend(fig, handles, labels, inches)
    return fig


def _layer_means(frame, metric: str):
    """{(model, setting): Series layer -> mean over languages of ``metric``} (seed means first)."""
    picked = frame[(frame["metric"] == metric) & (frame["layer"] >= 0)]
    out = {}
    for (model, setting), group in picked.groupby(["model", "setting"], sort=False):
        out[(model, setting)] = group.groupby(["layer", "lang"])["value"].mean().groupby("layer").mean()
    return out


def plot_neutrality(results: Results, width: str | float = "column"):
    """Language neutrality per layer: language-ID accuracy (with chance), CKA with English (mean over languages) and,
    where retrieval ran with ``--set center=true``, raw against mean-centred retrieval accuracy; a control
    (``--control random-init``) dashed in its model's colour."""
    frame = results.sweep
    neutral = frame[frame["task"] == "neutrality"]
    panels = []
    langid = _layer_means(neutral, "langid_accuracy")
    if langid:
        panels.append(("Language ID (linear probe)", "accuracy (%, cross-validated)", langid, None))
    cka = _layer_means(neutral, "cka")
    if cka:
        panels.append(("CKA with English", "linear CKA × 100, mean over languages", cka, None))
    for task in sorted(set(frame.loc[frame["metric"] == "centered_accuracy", "task"])):
        sub = frame[frame["task"] == task]
        panels.append((f"{task_title(task)}: raw vs centred (dotted)", "top-1 accuracy, en→xx (%)",
                       _layer_means(sub, "accuracy"), _layer_means(sub, "centered_accuracy")))
    if not panels:
        raise UserError("no neutrality records (xeval run --tasks neutrality) and no retrieval run with "
                        "--set center=true: nothing to plot for --plot neutrality")
    controls = results.control_rows()
    labels = list(dict.fromkeys(results.row(m, st) for p in panels for m, st in p[2]))
    styles = _styles(labels, controls)
    inches = _inches(width)
    fig, axes = _subplots(len(panels), inches, 2.3)
    handles = {}
    for ax, (title, ylabel, curves, centred) in zip(axes.flat, panels):
        for (model, setting), series in curves.items():
            label = results.row(model, setting)
            ax.plot(series.index, series.values, label=label, markersize=4, linewidth=1.2, **styles[label])
            if centred and (model, setting) in centred:  # the same colour and marker, dotted and hollow
                other = centred[(model, setting)]
                ax.plot(other.index, other.values, color=styles[label]["color"], marker=styles[label]["marker"],
                        markersize=4, linewidth=1.2, markerfacecolor="white",
                        linestyle=":" if label not in controls else "-.")
        if langid and curves is langid:
            chance = neutral[neutral["metric"] == "langid_chance"]["value"]
            if len(chance):
                ax.axhline(float(chance.iloc[0]), color="grey", linestyle=":", linewidth=0.9, label="chance")
        ax.set_title(_wrap(title, inches / axes.shape[1]))
        ax.set_xlabel(_wrap("layer (hidden_states index; 0 = embeddings)", inches / axes.shape[1]))
        ax.set_ylabel(_wrap(ylabel, 2.0))
        ax.grid(True, alpha=0.3)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    _legend(fig, list(handles.values()), list(handles), inches)
    return fig


def series_steps(results: Results) -> dict[str, int]:
    """{row label: training step} of the checkpoints of a series (``train.export_every``: the model identity's
    ``step``); a random-init control (``--control random-init``) of such a checkpoint is step 0 when the series
    has no step-0 checkpoint of its own (the series' step 0 *is* the random init of the trained seed)."""
    steps: dict[str, int] = {}
    by_key = {r.unit.model: r.model.get("step") for r in results.records if isinstance(r.model, dict)}
    pairs = results.sweep[["model", "setting"]].drop_duplicates().itertuples(index=False)
    for model, setting in pairs:
        if isinstance(by_key.get(model), int):
            steps[results.row(model, setting)] = by_key[model]
    if 0 not in steps.values():
        controls = results.control_rows()
        for label, parent in controls.items():
            if parent in steps:
                steps[label] = 0
                break
    return steps


def plot_steps(results: Results, width: str | float = "column"):
    """Metric against training step for a checkpoint series (``xeval run --model 'ckpt/steps/*'``): per probe one
    line per layer (mean over languages, the reported split), the layer chosen on the selection split at the last
    step drawn thick; step 0 is the random-init weights (the series' step-0 checkpoint or the control)."""
    steps = series_steps(results)
    data = {task: table.loc[[x for x in table.index if x in steps]] for task, table in sweeps(results).items()}
    data = {task: table for task, table in data.items() if len(table)}
    if not steps or not data:
        raise UserError("no checkpoint series in the given runs (records whose model has a training step: xeval "
                        "run --model 'ckpt/steps/*' on an engine run with train.export_every): nothing to plot "
                        "for --plot steps")
    from matplotlib.lines import Line2D

    inches = _inches(width)
    fig, axes = _subplots(len(data), inches, 2.3)
    layers = sorted(set().union(*(table.columns for table in data.values())))
    colors = _colors(len(layers))
    style = {layer: (colors[i], MARKERS[i % len(MARKERS)]) for i, layer in enumerate(layers)}
    for ax, (task, table) in zip(axes.flat, data.items()):
        table = table.assign(_step=[steps[x] for x in table.index]).sort_values("_step")
        x = table.pop("_step").to_numpy()
        last = table.index[-1]
        chosen = results.chosen_layer(task, last)  # each panel its own: the probes may choose different layers
        for layer in sorted(table.columns):
            color, marker = style[layer]
            ax.plot(x, table[layer].to_numpy(), color=color, marker=marker, markersize=3,
                    linewidth=2.2 if layer == chosen else 1.0)
        thick = "" if chosen is None else f"\n(thick: layer {chosen}, the reported one)"
        ax.set_title(f"{task_title(task)} over training{thick}")
        ax.set_xlabel(_wrap("training step (0 = random init)", inches / axes.shape[1]))
        ax.set_ylabel(_wrap(metric_label(table.attrs.get("metric", ""), task) or "score", 2.0))
        ax.grid(True, alpha=0.3)
    # one legend for every panel's layers, drawn at one width: which layer is thick differs from panel to panel
    handles = [Line2D([], [], color=style[k][0], marker=style[k][1], markersize=3, linewidth=1.0) for k in layers]
    _legend(fig, handles, [f"layer {k}" for k in layers], inches)
    return fig


def plot(results: Results, kind: str, out: str | Path, width: str | float = "column") -> list[Path]:
    """Draw ``kind`` at ``width`` (column | page | inches) and write ``<out>.png`` and ``<out>.pdf`` (a suffix on
    ``out`` is dropped), both exactly that wide."""
    makers = {"layers": plot_layers, "languages": plot_languages, "gap": plot_gap, "correlation": plot_correlation,
              "tokenizer": plot_tokenizer, "neutrality": plot_neutrality, "steps": plot_steps}
    if kind not in makers:
        raise UserError(f"unknown plot {kind!r}; expected one of {', '.join(KINDS)}")
    fig = makers[kind](results, width)
    for text in fig.findobj(plt.Text):  # nothing below the floor, whatever a maker set
        if text.get_text() and text.get_fontsize() < MIN_POINTS:
            text.set_fontsize(MIN_POINTS)
    out = Path(out)
    stem = out.with_suffix("") if out.suffix.lower() in (".png", ".pdf") else out
    written = []
    try:
        for fmt in ("png", "pdf"):
            path = stem.parent / f"{stem.name}.{fmt}"
            with atomic_path(path) as tmp:
                # PDF metadata without a date, so a rerun writes the same file
                meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
                fig.savefig(tmp, format=fmt, dpi=300, metadata=meta)  # no bbox "tight": the size asked for
            written.append(path)
    finally:
        plt.close(fig)
    return written
