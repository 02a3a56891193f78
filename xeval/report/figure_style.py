"""What every figure of ``xeval.report.plots`` shares: sizes, fonts, palette, the panel grid, legends, titles, and the
choice of tasks a figure shows (``FigureOptions``).

- **Sizes**: exactly a paper's column (``width="column"``, 3.3 in) or page (``"page"``, 6.9 in) wide, so that
  ``\\includegraphics[width=\\columnwidth]`` prints the text at its size, never below 7 pt (labels 8 pt, ticks and
  legends 7 pt); PDFs embed TrueType (Type 42) fonts, never Type 3, as ACL's and IEEE's checkers require.
- **Panels in a grid**: as many panels a row as fit (at least ``MIN_PANEL`` inches each; ``columns`` overrides),
  rows as needed, never one tall column of a page's height.
- **No titles by default**: the caption belongs to the paper. A figure of several panels names each with its task
  (the short name only, so the panels can be told apart); ``titles=True`` (``--figure-titles``) adds the descriptive
  titles the caption would otherwise carry.
- **Colours**: the Okabe-Ito palette (safe for the common colour-vision deficiencies) plus markers and hatches, so
  lines and bars also differ in grey print.
"""

from __future__ import annotations

import copy
import textwrap
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

from xeval.base.errors import UserError  # noqa: E402
from xeval.report.frame import lower_is_better, xtreme_task  # noqa: E402
from xeval.results.controls import LABELS, MODEL_FREE  # noqa: E402

MODEL_FREE_LABELS = {LABELS[kind] for kind in MODEL_FREE}  # "char n-gram TF-IDF"

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
WIDTHS = {"column": 3.3, "page": 6.9}  # inches: a two-column paper's column and its full text width
MIN_POINTS = 7.0  # the smallest text in any figure
MIN_PANEL = 1.6  # inches: the narrowest panel of a grid
# Okabe & Ito (2008), "Color Universal Design": distinguishable with protanopia, deuteranopia and tritanopia
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
_METRIC_LABELS = {
    "f1": "F1", "em": "exact match", "exact_match": "exact match", "accuracy": "accuracy", "aer": "AER",
    "token_accuracy": "token accuracy", "accuracy_mean": "top-1 accuracy, mean of both directions",
    "accuracy_en_xx": "top-1 accuracy, en→xx", "accuracy_xx_en": "top-1 accuracy, xx→en",
    "precision_at_1": "precision@1", "precision": "precision", "recall": "recall",
}
_TASK_METRIC_LABELS = {("tatoeba", "accuracy"): "top-1 accuracy, en→xx", ("bucc", "f1"): "mining F1"}

plt.rcParams.update({"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
                     "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 8,
                     "axes.spines.top": False, "axes.spines.right": False,
                     "pdf.fonttype": 42, "ps.fonttype": 42})  # TrueType (Type 42) fonts in PDF/PS, not Type 3


@dataclass(frozen=True)
class FigureOptions:
    """How a figure is laid out: ``width`` column | page | inches; ``columns`` panels a row (None: as many as fit);
    ``tasks`` the tasks it shows (None: all, in the tables' order); ``titles`` the descriptive titles."""

    width: str | float = "column"
    columns: int | None = None
    tasks: tuple[str, ...] | None = None
    titles: bool = False

    @property
    def inches(self) -> float:
        if isinstance(self.width, int | float):
            return float(self.width)
        if self.width not in WIDTHS:
            raise UserError(f"--figure-width: expected column or page, found {self.width!r}")
        return WIDTHS[self.width]


def options(width_or_options) -> FigureOptions:
    """A maker's second argument: a ``FigureOptions``, or a width as the makers took before."""
    return width_or_options if isinstance(width_or_options, FigureOptions) else FigureOptions(width_or_options)


def metric_label(metric: str, task: str = "") -> str:
    text = _TASK_METRIC_LABELS.get((task, metric)) or _METRIC_LABELS.get(metric, metric.replace("_", " "))
    return f"{text} (%{', lower is better' if lower_is_better(metric) else ''})"


def colors(n: int):
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]


def wrap(text: str, inches: float, points: float = 8.0) -> str:
    """Break a long axis label so it fits ``inches`` (about 0.55 em a character)."""
    return textwrap.fill(text, max(16, int(inches * 72 / (0.55 * points))))


def grid_shape(n: int, opts: FigureOptions, widest: float = 2.2, max_cols: int = 3) -> tuple[int, int]:
    """(rows, columns) of ``n`` panels: ``opts.columns`` if given, else as many a row as fit ``widest`` inches each
    (at most ``max_cols``), and at least two a row where two panels of ``MIN_PANEL`` inches fit."""
    if opts.columns is not None:
        if opts.columns < 1:
            raise UserError(f"--figure-columns: expected an integer >= 1, found {opts.columns}")
        ncols = min(n, opts.columns)
    else:
        ncols = min(n, max_cols, max(int(opts.inches // widest), 2 if opts.inches >= 2 * MIN_PANEL else 1))
    ncols = max(1, ncols)
    return -(-n // ncols), ncols


def subplots(n: int, opts: FigureOptions, panel_height: float, widest: float = 2.2, heights=None):
    """``n`` panels in a grid at ``opts.inches``; ``heights``: one height per row (default ``panel_height``)."""
    nrows, ncols = grid_shape(n, opts, widest)
    heights = list(heights) if heights is not None else [panel_height] * nrows
    fig, axes = plt.subplots(nrows, ncols, figsize=(opts.inches, sum(heights) + 0.5), squeeze=False,
                             layout="constrained", gridspec_kw={"height_ratios": heights})
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def panel_title(ax, short: str, long: str, opts: FigureOptions, panels: int) -> None:
    """A panel's title: ``long`` with ``titles``; else ``short`` where several panels must be told apart; else
    none (the caption says it)."""
    text = long if opts.titles else (short if panels > 1 else "")
    if text:
        ax.set_title(wrap(text, opts.inches / max(1, ax.get_gridspec().ncols)))


def legend(fig, handles, labels, width: float) -> None:
    """One legend below the axes, inside the figure: as many entries a row as fit the figure's width, measured on
    the rendered text (long labels such as a control's or a reported layer's rule wrap to more rows instead of
    running past both edges)."""
    if not labels:
        return
    renderer = fig.canvas.get_renderer()
    room = fig.get_figwidth() * fig.dpi
    for ncol in range(min(len(labels), max(1, int(width // 1.6))), 0, -1):
        drawn = fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)
        if ncol == 1 or drawn.get_window_extent(renderer).width <= room:
            return
        drawn.remove()


def panel_handles(axes) -> tuple[list, list[str]]:
    """The legend entries of every panel, each label once in first-seen order: a row drawn in a later panel only
    (the char n-gram baseline runs no alignment) is still in the legend."""
    seen: dict[str, object] = {}
    for ax in getattr(axes, "flat", axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def styles(labels: list[str], controls: dict[str, str]) -> dict[str, dict]:
    """Colour and marker per row label: models get the next colour/marker; a control (``--control``) its model's,
    drawn dashed with hollow markers (distinct in grey print too)."""
    models = [x for x in labels if x not in controls]
    out = {x: {"color": c, "marker": MARKERS[i % len(MARKERS)], "linestyle": "-"}
           for i, (x, c) in enumerate(zip(models, colors(len(models))))}
    extra = [x for x in labels if x in controls and controls[x] not in out]  # a control without its model
    for i, (x, c) in enumerate(zip(extra, colors(len(models) + len(extra))[len(models):])):
        out[x] = {"color": c, "marker": MARKERS[(len(models) + i) % len(MARKERS)], "linestyle": "--",
                  "markerfacecolor": "white"}
    for x in labels:
        if x not in out:
            out[x] = {**out[controls[x]], "linestyle": "--", "markerfacecolor": "white"}
        if x in controls and x in MODEL_FREE_LABELS:  # the char n-gram baseline is no model's: grey, not its colour
            out[x] = {"color": "0.45", "marker": "x", "linestyle": ":"}
    return out


def only_tasks(results, tasks) -> object:
    """``results`` narrowed to ``tasks`` (names as the records have them, or an XTREME alias: pos, ner, ...), a
    shallow copy; an unknown name is a UserError listing the tasks there are."""
    if not tasks:
        return results
    present = list(dict.fromkeys([*results.sweep["task"], *results.stats["task"]]))
    chosen, unknown = [], []
    for name in tasks:
        hits = [t for t in present if t == name or (xtreme_task(name) and xtreme_task(name) == xtreme_task(t))]
        (chosen.extend(hits) if hits else unknown.append(name))
    if unknown:
        raise UserError(f"--figure-tasks: no records for {', '.join(map(repr, unknown))}; the runs have: "
                        + ", ".join(present))
    keep = set(chosen)
    out = copy.copy(results)
    for name in ("stats", "long", "sweep"):
        frame = getattr(results, name)
        setattr(out, name, frame[frame["task"].isin(keep)].reset_index(drop=True))
    out.records = [r for r in results.records if r.unit.task in keep]
    return out
