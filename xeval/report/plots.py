"""Figures for papers: layer sweeps, per-language bars, transfer gaps, correlations, tokenizer, neutrality, training
steps. Each is written as PNG and PDF, at exactly a paper's column or page width (``xeval.report.figure_style``:
fonts, palette, the grid of panels, no titles unless asked, the tasks a figure shows).

Error bars (± std over seeds) wherever a value has two seeds or more. Axes and legends are laid out inside the
figure (constrained layout; the legend below the axes), so nothing is clipped and the saved size is the size asked
for. Per-language bars turn horizontal when the languages do not fit across a panel; a language scored on its dev
set where the task reports test is labelled "de (dev)", and a gap over such languages carries the tables' marks
(``xeval.report.deviations``), so a figure never averages dev and test unmarked. A layer sweep stars the layer
chosen on a selection split only where one ran; elsewhere it marks the reported layer and says by which rule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xeval.base.atomic import atomic_path
from xeval.base.errors import UserError
from xeval.report.deviations import task_deviations, union
from xeval.report.figure_style import (  # noqa: F401 - the style's names, re-exported for callers and tests
    HATCHES,
    MARKERS,
    MIN_POINTS,
    OKABE_ITO,
    WIDTHS,
    FigureOptions,
    colors,
    grid_shape,
    legend,
    metric_label,
    only_tasks,
    options,
    panel_handles,
    panel_title,
    plt,
    styles,
    subplots,
    wrap,
)
from xeval.report.frame import headline_metric
from xeval.report.tables.base import Results, order_languages, task_title
from xeval.report.tables.gap_table import gap_column, gap_table
from xeval.report.tables.layer_table import sweeps
from xeval.report.tables.tokenizer_table import fertility_points
from xeval.results.layers import SELECTION_SPLIT

KINDS = ("layers", "languages", "gap", "correlation", "tokenizer", "neutrality", "steps")
MIN_PANEL_LANGUAGES = 2.2  # inches: a per-language panel (3 a row at page width, 1 at column width)


def _layer_mark(choice) -> tuple[str, dict]:
    """The legend text and marker style of a sweep's reported layer: a star where a selection split (or probe
    mode's selection set) chose it, a hollow diamond where a rule did (the card's fixed layer, the last layer)."""
    if choice.rule == SELECTION_SPLIT or choice.rule.startswith("chosen on "):
        where = SELECTION_SPLIT + (f", {choice.selection_source}" if choice.selection_source else "") \
            if choice.rule == SELECTION_SPLIT else choice.rule.removeprefix("chosen on ").split(" (")[0]
        return f"chosen layer (on {where})", {"marker": "*", "markersize": 10, "markeredgewidth": 0.5}
    rule = {"card default": "the card's fixed layer", "given": "given"}.get(choice.rule, "the last layer")
    return f"reported layer ({rule}; no selection split)", {"marker": "D", "markersize": 6, "markeredgewidth": 0.8,
                                                             "markerfacecolor": "white"}


def plot_layers(results: Results, width="column"):
    """Score vs layer, one line per model; each model's reported layer marked: a star where the selection split
    chose it (never the plotted split), else a hollow diamond naming the rule; a control (``--control random-init``)
    as a dashed line in its model's colour; the char n-gram baseline (``--control charngram``, no layers) as a
    dotted grey horizontal line. (Probes are deterministic: one value per layer, no error bars.)"""
    opts = options(width)
    data = sweeps(results)
    if not data:
        raise UserError("no probe records with layers in the given runs: nothing to plot for --plot layers")
    controls = results.control_rows()
    fig, axes = subplots(len(data), opts, 2.3)
    marks: dict[str, dict] = {}
    for ax, (task, sweep) in zip(axes.flat, data.items()):
        metric = sweep.attrs["metric"]
        line_styles = styles(list(sweep.index), controls)
        for model, row in sweep.iterrows():
            row = row.dropna()
            if model in sweep.attrs.get("flat", ()):  # no layers (the char n-gram baseline): a horizontal floor
                ax.axhline(float(row.iloc[0]), label=f"{model} (no layers)", color="0.35", linestyle=":",
                           linewidth=1.2)
                continue
            color = line_styles[model]["color"]
            ax.plot(row.index, row.values, label=model, markersize=4, linewidth=1.2, **line_styles[model])
            choice = results.layer_choice(task, model)  # never chosen on this curve
            if choice is not None and choice.layer in row.index:
                text, style = _layer_mark(choice)
                ax.plot([choice.layer], [row[choice.layer]], color=color, markeredgecolor="black",
                        linestyle="none", zorder=5, **style)
                marks.setdefault(text, style)
        panel = opts.inches / axes.shape[1]
        panel_title(ax, task_title(task), f"{task_title(task)}: layer sweep", opts, len(data))
        ax.set_xlabel(wrap("layer (hidden_states index; 0 = embeddings)", panel))
        ax.set_ylabel(wrap(metric_label(metric, task), 2.0))
        ax.set_xticks(sorted(sweep.columns))
        ax.grid(True, alpha=0.3)
    handles, labels = panel_handles(axes)
    for text, style in marks.items():  # only the marks drawn: no "selection split" where none ran
        handles += plt.plot([], [], color="white", markeredgecolor="black", linestyle="none", **style)
        labels.append(text)
    legend(fig, handles, labels, opts.inches)
    return fig


def _tick(lang: str, on_dev: set) -> str:
    return f"{lang} (dev)" if lang in on_dev else lang


def _across(inches: float) -> int:
    """Languages whose bars fit across a panel ``inches`` wide: a 7 pt label turned upright needs ~9 pt."""
    return int((inches * 72 - 45) // 9)


def language_rows(tasks: list[str], n_langs: dict[str, int], opts: FigureOptions) -> list[list[str]]:
    """The rows of the per-language grid: tasks whose languages fit a grid cell share a row (``columns`` a row),
    a task with more languages gets a row of its own across the whole width; each kind keeps its order."""
    _, ncols = grid_shape(len(tasks), opts, widest=MIN_PANEL_LANGUAGES)
    cell = _across(opts.inches / ncols)
    rows, pending = [], []
    for task in tasks:
        if ncols > 1 and n_langs[task] <= cell:
            pending.append(task)
            if len(pending) == ncols:
                rows.append(pending)
                pending = []
        else:
            rows.append([task])
    return rows + ([pending] if pending else [])


def plot_languages(results: Results, width="column"):
    """Per task a panel of bars per language (one colour per model, ± std over seeds where there are two or more)
    and dashed lines at each model's English score, in a grid: tasks with few languages side by side, a task with
    many in a row of its own; where a task's languages do not fit across its panel (7 pt labels), its bars run
    horizontally, a row per language. A language scored on dev where the task reports test reads "xx (dev)"."""
    opts = options(width)
    tasks = results.tasks()
    n_models = max(1, results.stats["model"].nunique())
    n_langs = {t: results.stats[results.stats["task"] == t]["lang"].nunique() for t in tasks}
    rows = language_rows(tasks, n_langs, opts)
    ncols = max(len(row) for row in rows)
    widths = {t: opts.inches / (ncols if len(row) > 1 or ncols == 1 else 1) for row in rows for t in row}
    horizontal = {t: n_langs[t] > _across(widths[t]) for t in tasks}
    heights = [max(max(1.8, 0.05 * n_langs[t] * max(2, n_models) + 0.7) if horizontal[t] else 1.9 for t in row)
               for row in rows]
    fig = plt.figure(figsize=(opts.inches, sum(heights) + 0.6), layout="constrained")
    spec = fig.add_gridspec(len(rows), ncols, height_ratios=heights)
    axes = {t: fig.add_subplot(spec[r, c] if len(row) > 1 else spec[r, :])
            for r, row in enumerate(rows) for c, t in enumerate(row)}
    departures = task_deviations(results)
    handles = {}
    for task, ax in axes.items():
        stats = results.stats[results.stats["task"] == task]
        metric = headline_metric(task, stats["metric"])
        stats = stats[stats["metric"] == metric]
        langs = order_languages(stats["lang"])
        pairs = list(dict.fromkeys(zip(stats["model"], stats["setting"])))
        bar = 0.8 / len(pairs)
        x = np.arange(len(langs))
        panel = widths[task]
        controls = results.control_rows()  # a control's bars: its model's colour, lighter
        bar_styles = styles([results.row(m, st) for m, st in pairs], controls)
        on_dev = set().union(*(departures[(m, st, task)].on_dev for m, st in pairs if (m, st, task) in departures))
        for i, (model, setting) in enumerate(pairs):
            group = stats[(stats["model"] == model) & (stats["setting"] == setting)].set_index("lang")
            means = group["mean"].reindex(langs)
            errs = group["std"].reindex(langs).fillna(0.0)
            label = results.row(model, setting)
            color = bar_styles[label]["color"]
            seeds = group["n_seeds"].reindex(langs).fillna(0)
            errors = errs.where(seeds >= 2, 0.0)
            style = {"color": color, "hatch": HATCHES[i % len(HATCHES)], "edgecolor": "black", "linewidth": 0.3,
                     "label": label, "capsize": 1.5, "alpha": 0.45 if label in controls else None,
                     "error_kw": {"elinewidth": 0.6, "capthick": 0.6}}
            offset = x + (i - (len(pairs) - 1) / 2) * bar
            spread = errors if (seeds >= 2).any() else None  # bars wherever there are seeds to spread (even ± 0)
            if horizontal[task]:
                ax.barh(offset, means, bar, xerr=spread, **style)
            else:
                ax.bar(offset, means, bar, yerr=spread, **style)
            if "en" in group.index:
                line = ax.axvline if horizontal[task] else ax.axhline
                line(group.at["en", "mean"], color=color, linestyle="--", linewidth=0.9, label=f"{label}: English")
        layers = sorted({int(x) for x in stats["layer"] if x >= 0})
        where = f" (layer {', '.join(map(str, layers))})" if layers else ""
        panel_title(ax, task_title(task), task_title(task) + where, opts, len(tasks))
        ticks = [_tick(lang, on_dev) for lang in langs]
        if horizontal[task]:
            ax.set_yticks(x, ticks)
            ax.set_ylim(len(langs) - 0.4, -0.6)  # English on top
            ax.set_ylabel("language")
            ax.set_xlabel(wrap(metric_label(metric, task), panel))
            ax.grid(True, axis="x", alpha=0.3)
            ax.margins(x=0.08)
        else:
            ax.set_xticks(x, ticks, rotation=90 if len(langs) > 12 or on_dev else 0)
            ax.set_xlim(-0.6, len(langs) - 0.4)
            ax.set_xlabel("language")
            ax.set_ylabel(wrap(metric_label(metric, task), 1.6))
            ax.grid(True, axis="y", alpha=0.3)
            ax.margins(y=0.12)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    legend(fig, list(handles.values()), list(handles), opts.inches)
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


def plot_gap(results: Results, width="column"):
    """Transfer gap per task, bars per model (± std over seeds where there are two or more); the values printed
    on the bars when there are few enough to read. A task whose gap the gap table marks (dev sets for test,
    subsamples, substitute data: ``xeval.report.deviations``) carries its marks in its tick label."""
    opts = options(width)
    gap = gap_table(results)
    table = gap.mean
    errors = gap_std(results)
    tasks = list(table.columns)
    inches = opts.inches
    bar = 0.8 / len(table)
    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(inches, 2.6), layout="constrained")
    labelled = table.size <= inches * 3  # about three value labels an inch
    for i, ((model, row), color) in enumerate(zip(table.iterrows(), colors(len(table)))):
        err = [errors.get((model, t), 0.0) for t in tasks]
        bars = ax.bar(x + (i - (len(table) - 1) / 2) * bar, row.values, bar, color=color,
                      yerr=err if any((model, t) in errors for t in tasks) else None, capsize=1.5,
                      error_kw={"elinewidth": 0.6},
                      hatch=HATCHES[i % len(HATCHES)], edgecolor="black", linewidth=0.3, label=model)
        if labelled:
            ax.bar_label(bars, fmt="%.1f", fontsize=MIN_POINTS, padding=1)
    marks = {t: union(gap.marks[t]) if gap.marks is not None else "" for t in tasks}
    ticks = [t + marks[t] for t in tasks]  # the marks of the column's cells, as the gap table prints them
    ax.set_xticks(x, ticks, rotation=45 if len(tasks) > 5 else 0)
    ax.axhline(0, color="black", linewidth=0.6)
    panel_title(ax, "", "Cross-lingual transfer gap (English minus mean of other languages)", opts, 1)
    ax.set_xlabel(wrap("task (headline metric; F1 for QA); avg = mean over tasks, only for models with every "
                       "task" + ("; marks as in the gap table's notes" if gap.marks is not None else ""), inches))
    ax.set_ylabel("gap (points, lower is better)")
    ax.margins(y=0.15)
    ax.grid(True, axis="y", alpha=0.3)
    legend(fig, *ax.get_legend_handles_labels(), inches)
    return fig


def plot_correlation(results: Results, width="column"):
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
    opts = options(width)
    inches = opts.inches
    fig, axes = subplots(len(panels), opts, 2.6)
    rows = list(dict.fromkeys(r for r, *_ in found))
    point_styles = styles(rows, results.control_rows())
    for ax, (probe, task) in zip(axes.flat, panels):
        parts = []
        for row, p, t, _, joined in found:
            if (p, t) != (probe, task):
                continue
            x, y = joined["value_probe"].to_numpy(), joined["value_task"].to_numpy()
            style = point_styles[row]
            ax.scatter(x, y, color=style["color"], marker=style["marker"], s=22, label=row,
                       facecolors="white" if style.get("markerfacecolor") == "white" else style["color"])
            for xi, yi, lang in zip(x, y, joined["lang"]):
                ax.annotate(lang, (xi, yi), fontsize=7, xytext=(2, 2), textcoords="offset points")
            if len(x) >= MIN_LANGUAGES and np.ptp(x) > 0 and np.ptp(y) > 0:
                parts.append(f"ρ={sps.spearmanr(x, y).statistic:.2f}, n={len(x)}")
        # ρ and n stay (they are the panel's result, not a caption), the rest only with titles
        panel_title(ax, "; ".join(parts), f"{task_title(task)} vs {probe}\n" + "; ".join(parts), opts, 2)
        ax.set_xlabel(f"{probe} (points)")
        ax.set_ylabel(wrap(f"{task_title(task)} zero-shot score (points)", 2.0))
        ax.grid(True, alpha=0.3)
    handles, labels = panel_handles(axes)
    if len(rows) > 1:
        legend(fig, handles, labels, inches)
    return fig


def plot_tokenizer(results: Results, width="column"):
    """Per task: each language's transfer gap (English minus the language) against its tokenizer fertility
    (subwords per word on FLORES-200 devtest), a colour per model, points labelled by language."""
    points = fertility_points(results)
    if points.empty:
        raise UserError("no language has both tokenizer diagnostics and a transfer gap: nothing to plot")
    tasks = list(dict.fromkeys(points["task"]))
    opts = options(width)
    inches = opts.inches
    fig, axes = subplots(len(tasks), opts, 2.6)
    point_styles = styles(list(dict.fromkeys(points["row"])), {})
    for ax, task in zip(axes.flat, tasks):
        for row, group in points[points["task"] == task].groupby("row", sort=False):
            ax.scatter(group["fertility"], group["gap"], label=row, s=22, color=point_styles[row]["color"],
                       marker=point_styles[row]["marker"])
            for x, y, lang in zip(group["fertility"], group["gap"], group["lang"]):
                ax.annotate(lang, (x, y), fontsize=7, xytext=(2, 2), textcoords="offset points")
        ax.axhline(0, color="black", linewidth=0.6)
        panel_title(ax, task_title(task), f"{task_title(task)}: transfer gap vs fertility", opts, len(tasks))
        ax.set_xlabel(wrap("subwords per word (FLORES-200 devtest)", 2.0))
        ax.set_ylabel(wrap("gap: English minus language (points)", 2.0))
        ax.grid(True, alpha=0.3)
    handles, labels = panel_handles(axes)
    if len(labels) > 1:
        legend(fig, handles, labels, inches)
    return fig


def _layer_means(frame, metric: str):
    """{(model, setting): Series layer -> mean over languages of ``metric``} (seed means first)."""
    picked = frame[(frame["metric"] == metric) & (frame["layer"] >= 0)]
    out = {}
    for (model, setting), group in picked.groupby(["model", "setting"], sort=False):
        out[(model, setting)] = group.groupby(["layer", "lang"])["value"].mean().groupby("layer").mean()
    return out


def plot_neutrality(results: Results, width="column"):
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
    line_styles = styles(labels, controls)
    opts = options(width)
    inches = opts.inches
    fig, axes = subplots(len(panels), opts, 2.3)
    handles = {}
    for ax, (title, ylabel, curves, centred) in zip(axes.flat, panels):
        for (model, setting), series in curves.items():
            label = results.row(model, setting)
            ax.plot(series.index, series.values, label=label, markersize=4, linewidth=1.2, **line_styles[label])
            if centred and (model, setting) in centred:  # the same colour and marker, dotted and hollow
                other = centred[(model, setting)]
                ax.plot(other.index, other.values, color=line_styles[label]["color"],
                        marker=line_styles[label]["marker"],
                        markersize=4, linewidth=1.2, markerfacecolor="white",
                        linestyle=":" if label not in controls else "-.")
        if langid and curves is langid:
            chance = neutral[neutral["metric"] == "langid_chance"]["value"]
            if len(chance):
                ax.axhline(float(chance.iloc[0]), color="grey", linestyle=":", linewidth=0.9, label="chance")
        panel_title(ax, title.split(":")[0].split(" (")[0], title, opts, len(panels))
        ax.set_xlabel(wrap("layer (hidden_states index; 0 = embeddings)", inches / axes.shape[1]))
        ax.set_ylabel(wrap(ylabel, 2.0))
        ax.grid(True, alpha=0.3)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    legend(fig, list(handles.values()), list(handles), inches)
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


def plot_steps(results: Results, width="column"):
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

    opts = options(width)
    inches = opts.inches
    fig, axes = subplots(len(data), opts, 2.3)
    layers = sorted(set().union(*(table.columns for table in data.values())))
    palette = colors(len(layers))
    style = {layer: (palette[i], MARKERS[i % len(MARKERS)]) for i, layer in enumerate(layers)}
    for ax, (task, table) in zip(axes.flat, data.items()):
        table = table.assign(_step=[steps[x] for x in table.index]).sort_values("_step")
        x = table.pop("_step").to_numpy()
        last = table.index[-1]
        chosen = results.chosen_layer(task, last)  # each panel its own: the probes may choose different layers
        for layer in sorted(table.columns):
            color, marker = style[layer]
            ax.plot(x, table[layer].to_numpy(), color=color, marker=marker, markersize=3,
                    linewidth=2.2 if layer == chosen else 1.0)
        thick = "" if chosen is None else f" (thick: layer {chosen})"
        panel_title(ax, task_title(task) + thick, f"{task_title(task)} over training{thick}", opts, 2)
        ax.set_xlabel(wrap("training step (0 = random init)", inches / axes.shape[1]))
        ax.set_ylabel(wrap(metric_label(table.attrs.get("metric", ""), task) or "score", 2.0))
        ax.grid(True, alpha=0.3)
    # one legend for every panel's layers, drawn at one width: which layer is thick differs from panel to panel
    handles = [Line2D([], [], color=style[k][0], marker=style[k][1], markersize=3, linewidth=1.0) for k in layers]
    legend(fig, handles, [f"layer {k}" for k in layers], inches)
    return fig


def plot(results: Results, kind: str, out: str | Path, width: str | float = "column", tasks=None,
         columns: int | None = None, titles: bool = False) -> list[Path]:
    """Draw ``kind`` at ``width`` (column | page | inches) and write ``<out>.png`` and ``<out>.pdf`` (a suffix on
    ``out`` is dropped), both exactly that wide; ``tasks``: only these tasks' panels (``--figure-tasks``);
    ``columns``: panels a row (``--figure-columns``; default as many as fit); ``titles``: the descriptive titles
    (``--figure-titles``; default none, the caption says it)."""
    makers = {"layers": plot_layers, "languages": plot_languages, "gap": plot_gap, "correlation": plot_correlation,
              "tokenizer": plot_tokenizer, "neutrality": plot_neutrality, "steps": plot_steps}
    if kind not in makers:
        raise UserError(f"unknown plot {kind!r}; expected one of {', '.join(KINDS)}")
    opts = FigureOptions(width, columns, tuple(tasks) if tasks else None, titles)
    if opts.inches <= 0:  # a bad width fails here, before anything is drawn
        raise UserError(f"--figure-width: expected a positive width, found {width!r}")
    fig = makers[kind](only_tasks(results, opts.tasks), opts)
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
