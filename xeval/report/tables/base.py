"""The shared base of the report's tables: ``Table`` (a numeric frame plus what the renderers need to draw it like
a paper's table), ``Results`` (records prepared for reporting: one split per task, one layer per probe) and the
helpers every table uses (language order, task titles, headline metrics per row, the layer-sweep frame, the note
on controls). The tables themselves are one module each beside this one; ``xeval.report.build`` picks them by name.

Scores are averaged in this order everywhere: seeds first (per language), then languages, then tasks.

Controls (``xeval run --control random-init``, see ``xeval.results.controls``) are rows of their own, labelled
"<model> (random init)" and placed right after their model's rows; they never compete for bold. The char n-gram
baseline (``--control charngram``) owes nothing to its model: its row is "char n-gram TF-IDF", after the model it
ran beside (it has no layer: the same row whichever layer the model's rows show).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xeval.base.errors import UserError
from xeval.report.frame import (
    DIAGNOSTIC_TASKS,
    NO_LAYER,
    XTREME_TASKS,
    headline_metric,
    long_frame,
    lower_is_better,
    model_labels,
    pick_split,
    row_label,
    seed_stats,
    setting_label,
    shown_records,
    xtreme_task,
)
from xeval.results.controls import CONTROLS, MODEL_FREE, NOTES, control_parents
from xeval.results.controls import LABELS as CONTROL_LABELS
from xeval.results.layers import (
    SELECTION_SPLIT,
    LayerChoice,
    LayerCurve,
    choose_layer,
    chosen_layers,
    default_layers,
    selection_source,
)
from xeval.results.store import Unit

AVG = "avg"
# ``layer=`` of Results (``xeval report --layer``): the layer chosen on the selection split (else the card's fixed
# layer, else the last); "best", its old name, is still read; None likewise
CHOSEN = "selection-split"
CHOSEN_NAMES = (CHOSEN, "best", None)


@dataclass
class Table:
    """A numeric table plus what the renderers need to draw it like a paper's table.

    ``mean``/``std`` share index and columns; NaN is an empty cell. Bold marks the best value per column among
    rows with the same ``bold_within`` index value (e.g. the same metric); direction comes from the metric in
    that index level, else from ``lower_columns``. ``pairs`` merge two columns into one "a / b" cell (F1 / EM).
    """

    key: str
    title: str
    mean: pd.DataFrame
    std: pd.DataFrame | None = None
    lower_columns: set = field(default_factory=set)
    bold_within: str | None = None
    no_bold: set = field(default_factory=set)
    digits: dict = field(default_factory=dict)  # column -> decimals (default 1)
    pairs: list = field(default_factory=list)  # (column_a, column_b, header)
    groups: list = field(default_factory=list)  # (header, [columns]) drawn above the column names (LaTeX)
    notes: list = field(default_factory=list)
    stacked_headers: bool = False  # LaTeX: "XQuAD F1 / EM" as two header lines
    controls: set = field(default_factory=set)  # row labels (outer index level) of controls: never bold
    # the marks after a cell ("†‡", "" for none; xeval.report.deviations): not XTREME's language set, dev for test,
    # subsampled, substitute data; each explained in ``notes``
    marks: pd.DataFrame | None = None

    def mark_of(self, row, columns) -> str:
        """The marks of a displayed cell (one or two underlying ``columns``), in their fixed order."""
        if self.marks is None:
            return ""
        from xeval.report.deviations import union

        return union(self.marks.at[row, col] for col in columns)

    def lower_is_better(self, row, column) -> bool:
        if self.bold_within is not None:
            names = self.mean.index.names
            value = row[names.index(self.bold_within)] if isinstance(row, tuple) else row
            if lower_is_better(str(value)):
                return True
        return column in self.lower_columns or lower_is_better(str(column))

    def best_mask(self) -> pd.DataFrame:
        """True where a cell is the best of its column (within its ``bold_within`` group; ≥ 2 values compete
        and not all tie)."""
        mask = pd.DataFrame(False, index=self.mean.index, columns=self.mean.columns)
        groups = [self.mean.index] if self.bold_within is None else [
            idx for _, idx in self.mean.groupby(level=self.bold_within, sort=False).groups.items()]
        for rows in groups:
            block = self.mean.loc[rows]
            if self.controls:
                outer = [ix[0] if isinstance(ix, tuple) else ix for ix in block.index]
                block = block[[label not in self.controls for label in outer]]
            for col in self.mean.columns:
                if col in self.no_bold:
                    continue
                values = block[col].dropna()
                if len(values) < 2:
                    continue
                lower = self.lower_is_better(values.index[0], col)
                best = values.min() if lower else values.max()
                digits = self.digits.get(col, 1)
                # Ties at the printed precision are all bold.
                hits = values.index[np.isclose(values.round(digits), round(best, digits))]
                if len(hits) < len(values):  # when every row ties, nothing stands out
                    mask.loc[hits, col] = True
        return mask


class Results:
    """Records prepared for reporting: one split per task, one layer per probe (best, or the one asked for)."""

    def __init__(self, records, split: str | None = None, layer: int | str | None = CHOSEN,
                 rename: dict[str, str] | None = None, order: list[str] | None = None):
        """``rename``: {row label or model key: new label} (``--rename old=new``); ``order``: the models' rows in
        this order (labels or keys, before or after renaming; the others follow in store order)."""
        records = list(records)
        self.records = shown_records(records)  # the records behind the numbers: intervals read their outcomes
        full = long_frame(self.records, shown=True)
        frame = pick_split(full, split)
        self.controls = {k: v for k, v in control_parents(records).items() if k in set(frame["model"])}
        self.labels = model_labels(frame["model"])
        if order:
            frame = _in_order(frame, order, self.labels, rename or {})
        if self.controls:
            frame = _controls_after_parents(frame, self.controls)
        self._label_controls()
        if rename:
            self._rename(rename)
        self.sweep = frame  # every layer, for layer tables and plots
        self.chosen_layers: dict[tuple, int] = {}
        self.layer_rules: dict[tuple, LayerChoice] = {}  # how each chosen layer was chosen (for the notes)
        self.probe_mode_layers = _probe_mode_layers(records)
        self.long = self._select_layers(frame, layer, full, default_layers(records))
        self.stats = seed_stats(self.long)

    def _select_layers(self, frame: pd.DataFrame, layer, full: pd.DataFrame, defaults: dict) -> pd.DataFrame:
        """Per (model, probe, setting): ``layer`` when given, else the layer of ``xeval.results.layers.choose_layer``:
        best on the selection split (dev) when it ran and is not the split reported, else the card's fixed layer,
        else the last layer. Never the best layer of the reported split itself (optimistic)."""
        layered = frame["layer"] != NO_LAYER
        if not layered.any():
            return frame
        keep = [frame[~layered]]
        for key, group in frame[layered].groupby(["model", "task", "setting"], sort=False):
            layers = sorted(int(k) for k in group["layer"].unique())
            if layer in CHOSEN_NAMES and key in self.probe_mode_layers:
                choice = self.probe_mode_layers[key]  # --mode probe: chosen on its own selection set
            elif layer in CHOSEN_NAMES:
                choice = choose_layer(layers, self._selection_curve(key, group, full), defaults.get(key[:2]),
                                      selection_source(key[1]))
            else:
                if int(layer) not in layers:
                    have = ", ".join(map(str, layers))
                    raise UserError(f"{key[0]} {key[1]}: no records for layer {int(layer)}; layers run: {have}")
                choice = LayerChoice(int(layer), "given")
            self.chosen_layers[key] = choice.layer
            self.layer_rules[key] = choice
            keep.append(group[group["layer"] == choice.layer])
        # in the frame's own order: a row without layers (the char n-gram baseline) stays after its model's rows
        return pd.concat(keep).sort_index(kind="stable").reset_index(drop=True)

    @staticmethod
    def _selection_curve(key, group: pd.DataFrame, full: pd.DataFrame) -> LayerCurve | None:
        """The selection split's language-mean curve of one probe, unless that split is among the reported ones."""
        if SELECTION_SPLIT in set(group["split"]):
            return None
        model, task, setting = key
        rows = full[(full["model"] == model) & (full["task"] == task) & (full["setting"] == setting)
                    & (full["split"] == SELECTION_SPLIT) & (full["layer"] != NO_LAYER)]
        if rows.empty:
            return None
        metric = headline_metric(task, rows["metric"])
        scores = layer_sweep(rows).loc[metric].dropna()
        langs = rows[rows["metric"] == metric]["lang"].nunique()
        return LayerCurve(model, task, metric, not lower_is_better(metric), {int(k): float(v) for k, v in
                                                                              scores.items()}, [""] * langs,
                          SELECTION_SPLIT)

    def chosen_layer(self, task: str, row: str) -> int | None:
        """The chosen layer of one table row (a model label) of ``task``."""
        choice = self.layer_choice(task, row)
        return None if choice is None else choice.layer

    def layer_choice(self, task: str, row: str) -> LayerChoice | None:
        """How the layer of one table row (a model label) of ``task`` was chosen (``LayerChoice``: its rule)."""
        for (model, probe, setting), choice in self.layer_rules.items():
            if probe == task and self.row(model, setting) == row:
                return choice
        return None

    def layer_rules_tasks(self) -> list[str]:
        return list(dict.fromkeys(task for _, task, _ in self.layer_rules))

    def layer_note(self, task: str) -> str | None:
        """How the layer of ``task``'s rows was chosen (one phrase per distinct rule)."""
        rules = list(dict.fromkeys(c.describe() for k, c in self.layer_rules.items() if k[1] == task))
        return f"layer: {'; '.join(rules)}" if rules else None

    def _label_controls(self) -> None:
        """A control's label is its model's plus "(random init)" (the char n-gram baseline's: "char n-gram TF-IDF");
        the full key where that is ambiguous."""
        for key, (parent, kind) in self.controls.items():
            if kind in MODEL_FREE:
                self.labels[key] = CONTROL_LABELS[kind]
                continue
            base = self.labels.get(parent) or (parent or key).split("@", 1)[0]
            self.labels[key] = f"{base} ({CONTROL_LABELS[kind]})"
        values = list(self.labels.values())
        for key in self.controls:
            if values.count(self.labels[key]) > 1:
                self.labels[key] = key

    def _rename(self, rename: dict[str, str]) -> None:
        known = set(self.labels) | set(self.labels.values())
        unknown = [old for old in rename if old not in known]
        if unknown:
            raise UserError(f"--rename: no model {', '.join(map(repr, unknown))} in the runs; rows are "
                            + ", ".join(repr(v) for v in dict.fromkeys(self.labels.values())))
        for key, label in list(self.labels.items()):
            new = rename.get(key, rename.get(label))
            if new is None and key in self.controls and self.controls[key][1] not in MODEL_FREE:
                # a control follows its model's new name
                parent = self.controls[key][0]
                base = rename.get(parent, rename.get(model_labels([parent]).get(parent, "")))
                if base:
                    new = f"{base} ({CONTROL_LABELS[self.controls[key][1]]})"
            if new:
                self.labels[key] = new
        values = list(self.labels.values())
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise UserError(f"--rename: two models would share the row label {twice[0]!r}")

    def row(self, model: str, setting: str) -> str:
        return row_label(model, setting, self.labels)

    def control_rows(self) -> dict[str, str]:
        """{control's row label: its model's row label} for every (control, setting) in the records."""
        pairs = self.sweep[self.sweep["model"].isin(list(self.controls))][["model", "setting"]].drop_duplicates()
        return {self.row(m, s): self.row(self.controls[m][0], s) for m, s in pairs.itertuples(index=False)}

    def tasks(self) -> list[str]:
        """Tasks in the XLM-E table order first, then the others (probes) alphabetically."""
        present = list(dict.fromkeys(self.stats["task"]))
        order = list(XTREME_TASKS)
        return sorted(present, key=lambda t: (order.index(xtreme_task(t)) if xtreme_task(t) else len(order), t))


def _in_order(frame: pd.DataFrame, order: list[str], labels: dict[str, str], rename: dict[str, str]) -> pd.DataFrame:
    """The frame with the models named in ``order`` first, in that order (by key, label or new label)."""
    names = {}
    for key, label in labels.items():
        for name in (key, label, rename.get(key), rename.get(label)):
            if name:
                names.setdefault(name, key)
    unknown = [name for name in order if name not in names]
    if unknown:
        raise UserError(f"--order: no model {', '.join(map(repr, unknown))} in the runs; rows are "
                        + ", ".join(repr(v) for v in dict.fromkeys(labels.values())))
    first = list(dict.fromkeys(names[name] for name in order))
    models = list(dict.fromkeys(frame["model"]))
    rank = {m: i for i, m in enumerate(first + [m for m in models if m not in first])}
    return frame.sort_values("model", key=lambda col: col.map(rank), kind="stable").reset_index(drop=True)


def _probe_mode_layers(records) -> dict[tuple[str, str, str], LayerChoice]:
    """{(model, task, frame setting): choice} of probe-mode sweeps: the layer their heads scored best with on the
    selection set (English dev or held-out English training data; ``xeval.adapters.transfer.probe_mode``)."""
    return {(model, task, setting_label(Unit(model, task, "", "", setting=setting, mode="probe"))):
            LayerChoice(layer, f"chosen on {on} (the probe heads' selection score)", score, 1)
            for (model, task, setting), (layer, score, on) in chosen_layers(records).items()}


def _controls_after_parents(frame: pd.DataFrame, controls: dict) -> pd.DataFrame:
    """The frame with each control's rows right after its model's (models keep their order)."""
    models = list(dict.fromkeys(frame["model"]))
    order = []
    for model in models:
        if model not in controls:
            order.append(model)
            mine = [c for c in models if controls.get(c, (None,))[0] == model]
            order += sorted(mine, key=lambda c: CONTROLS.index(controls[c][1]))  # random init, then char n-grams
    order += [m for m in models if m not in order]  # controls whose model is not in the runs
    rank = {m: i for i, m in enumerate(order)}
    return frame.sort_values("model", key=lambda col: col.map(rank), kind="stable").reset_index(drop=True)


def control_note(results: Results, rows=None) -> list[str]:
    """The notes of the control kinds among a table's ``rows`` (its control row labels, maybe with a " · L<k>"
    layer suffix); all kinds of the results when None. A table without a char n-gram row gets no note on it."""
    kinds = {kind for key, (_, kind) in results.controls.items()
             if rows is None or any(row == (label := results.labels.get(key, key)) or str(row).startswith(label + " ·")
                                    for row in rows)}
    return [NOTES[kind] for kind in NOTES if kind in kinds]


def layer_sweep(frame: pd.DataFrame) -> pd.DataFrame:
    """metric × layer: the mean over languages of the seed means (for one model/task/setting)."""
    stats = seed_stats(frame)
    table = stats.pivot_table(index=["metric", "lang"], columns="layer", values="mean", aggfunc="mean")
    # only languages with a score at every layer, so a half-finished sweep compares one language set throughout
    # (the rule of the probes' own sweep, xeval/results/layers.py)
    complete = table.dropna()
    table = complete if not complete.empty else table
    return table.groupby(level="metric").mean().sort_index(axis=1)


def order_languages(langs) -> list[str]:
    """English first (the source language of zero-shot transfer), then alphabetical."""
    langs = sorted(set(langs))
    return [x for x in langs if x == "en"] + [x for x in langs if x != "en"]


def task_title(task: str) -> str:
    name = XTREME_TASKS.get(xtreme_task(task) or "", None)
    if not name:
        return task
    return name if name.lower() == task.lower() else f"{name} ({task})"


def headline_groups(results: Results):
    """(task, metric, model, setting, rows of that metric) for every task but the diagnostic ones, in store order."""
    for task in results.tasks():
        if task in DIAGNOSTIC_TASKS:
            continue
        stats = results.stats[results.stats["task"] == task]
        metric = headline_metric(task, stats["metric"])
        for (model, setting), group in stats[stats["metric"] == metric].groupby(["model", "setting"], sort=False):
            yield task, metric, model, setting, group


def language_gaps(results) -> pd.DataFrame:
    """Tidy frame: row, task, lang, gap (English minus the language, points) for every non-English language."""
    rows = []
    for task, _metric, model, setting, group in headline_groups(results):
        by_lang = group.set_index("lang")["mean"]
        if "en" not in by_lang.index:
            continue
        for lang, value in by_lang.drop("en").items():
            rows.append((results.row(model, setting), task, lang, float(by_lang["en"] - value)))
    return pd.DataFrame(rows, columns=["row", "task", "lang", "gap"])


def probe_tasks(results: Results) -> list[str]:
    return [t for t in results.tasks() if (results.sweep[results.sweep["task"] == t]["layer"] != NO_LAYER).any()]
