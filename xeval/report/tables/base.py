"""The tables of a cross-lingual paper, as pandas frames wrapped in ``Table`` (what the renderers draw).

- ``language_tables``: per task, one row per (model, metric), one column per language plus ``avg``; seeds as
  mean ± std. Tatoeba shows both directions and their mean; alignment shows AER (and P/R) per language pair.
- ``summary_table``: one row per model in the layout of the XLM-E paper's main table (POS F1, NER F1, XQuAD /
  MLQA / TyDiQA F1 / EM, XNLI acc, PAWS-X acc, "Avg (7 tasks)"), plus BUCC F1, Tatoeba Acc and the "XTREME
  score" when retrieval records are there. A task not run is an empty cell; "Avg (7 tasks)" only when all seven
  fine-tuning tasks are there, the XTREME score (XTREME's evaluate.py ``all_task``, nine tasks) only when all nine
  are, never an average over whatever happened to run. A cell averaged over another language set than XTREME's
  official one (xtreme-mini, CI runs) is marked † with a footnote of the counts, and so are that row's averages.
- ``gap_table``: transfer gap = English minus the mean over the other languages, per task (headline metric;
  F1 for QA, as XTREME's gap table), one row per model. Lower is better.
- ``layer_tables``: for probes, score vs layer (mean over languages) and the layer each probe is reported at: chosen
  on the selection split (dev), else the card's fixed layer, else the last one; never on the reported split.

Scores are averaged in this order everywhere: seeds first (per language), then languages, then tasks.

Controls (``xeval run --control random-init``, see ``xeval.results.controls``) are rows of their own, labelled
"<model> (random init)" and placed right after their model's rows; they never compete for bold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xeval.base.errors import UserError
from xeval.metrics.xtreme import XTREME, overall_scores, task_summary
from xeval.report.frame import (
    DIAGNOSTIC_TASKS,
    NO_LAYER,
    QA_TASKS,
    XTREME_GROUPS,
    XTREME_TASKS,
    headline_metric,
    long_frame,
    lower_is_better,
    model_labels,
    pick_split,
    row_label,
    seed_stats,
    shown_records,
    xtreme_task,
)
from xeval.results.controls import LABELS as CONTROL_LABELS
from xeval.results.controls import control_parents
from xeval.results.layers import SELECTION_SPLIT, LayerChoice, LayerCurve, choose_layer, default_layers

AVG = "avg"


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
    marked: pd.DataFrame | None = None  # True where a cell gets a dagger (summary: not XTREME's language set)

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

    def __init__(self, records, split: str | None = None, layer: int | str | None = "best",
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
            if layer in (None, "best") and key in self.probe_mode_layers:
                choice = self.probe_mode_layers[key]  # --mode probe: chosen on its own selection set
            elif layer in (None, "best"):
                choice = choose_layer(layers, self._selection_curve(key, group, full), defaults.get(key[:2]))
            else:
                if int(layer) not in layers:
                    have = ", ".join(map(str, layers))
                    raise UserError(f"{key[0]} {key[1]}: no records for layer {int(layer)}; layers run: {have}")
                choice = LayerChoice(int(layer), "given")
            self.chosen_layers[key] = choice.layer
            self.layer_rules[key] = choice
            keep.append(group[group["layer"] == choice.layer])
        return pd.concat(keep, ignore_index=True)

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
        for (model, probe, setting), layer in self.chosen_layers.items():
            if probe == task and self.row(model, setting) == row:
                return layer
        return None

    def layer_rules_tasks(self) -> list[str]:
        return list(dict.fromkeys(task for _, task, _ in self.layer_rules))

    def layer_note(self, task: str) -> str | None:
        """How the layer of ``task``'s rows was chosen (one phrase per distinct rule)."""
        rules = list(dict.fromkeys(c.describe() for k, c in self.layer_rules.items() if k[1] == task))
        return f"layer: {'; '.join(rules)}" if rules else None

    def _label_controls(self) -> None:
        """A control's label is its model's plus "(random init)"; the full key where that is ambiguous."""
        for key, (parent, kind) in self.controls.items():
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
            if new is None and key in self.controls:  # a control follows its model's new name
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
    from xeval.report.frame import setting_label
    from xeval.results.layers import chosen_layers
    from xeval.results.store import Unit

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
            order += [c for c in models if controls.get(c, (None,))[0] == model]
    order += [m for m in models if m not in order]  # controls whose model is not in the runs
    rank = {m: i for i, m in enumerate(order)}
    return frame.sort_values("model", key=lambda col: col.map(rank), kind="stable").reset_index(drop=True)


def _control_note(results: Results) -> list[str]:
    if not results.controls:
        return []
    return ["(random init) = the same architecture and tokenizer with random weights (xeval run --control "
            "random-init): the score a model gets without pre-training"]


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


def _seed_average_std(long: pd.DataFrame, langs: list[str]) -> float:
    """Std over seeds of the per-seed average over ``langs`` (only seeds that cover every language)."""
    per_seed = long.pivot_table(index="seed", columns="lang", values="value", aggfunc="mean")
    per_seed = per_seed.reindex(columns=langs).dropna()
    return float(per_seed.mean(axis=1).std()) if len(per_seed) >= 2 else float("nan")


def language_tables(results: Results, tasks: list[str] | None = None) -> list[Table]:
    tables = []
    for task in tasks or results.tasks():
        stats = results.stats[results.stats["task"] == task]
        if stats.empty:
            raise UserError(f"no records for task {task!r}; the runs have: {', '.join(results.tasks())}")
        langs = order_languages(stats["lang"])
        mean_rows, std_rows, index, controls = [], [], [], set()
        for (model, setting, layer, metric), group in stats.groupby(["model", "setting", "layer", "metric"],
                                                                    sort=False):
            means = group.set_index("lang")["mean"].reindex(langs)
            stds = group.set_index("lang")["std"].reindex(langs)
            covered = means.notna().all()
            avg, avg_std = (means.mean(), float("nan")) if covered else (float("nan"), float("nan"))
            if covered and group["n_seeds"].max() >= 2:
                raw = results.long[(results.long["model"] == model) & (results.long["task"] == task)
                                   & (results.long["setting"] == setting) & (results.long["metric"] == metric)
                                   & (results.long["layer"] == layer)]
                avg_std = _seed_average_std(raw, langs)
            label = results.row(model, setting) + ("" if layer == NO_LAYER else f" · L{layer}")
            if model in results.controls:
                controls.add(label)
            index.append((label, metric))
            mean_rows.append([*means, avg])
            std_rows.append([*stds, avg_std])
        idx = pd.MultiIndex.from_tuples(index, names=["model", "metric"])
        mean = pd.DataFrame(mean_rows, index=idx, columns=[*langs, AVG])
        std = pd.DataFrame(std_rows, index=idx, columns=[*langs, AVG])
        head = headline_metric(task, mean.index.get_level_values("metric"))
        mean, dropped = _drop_duplicate_metrics(mean)
        mean = _order_metrics(mean, dropped.get(head, head))
        std = std.loc[mean.index]
        seeds = int(stats["n_seeds"].max())
        notes = [f"{_splits_note(stats, langs)}; seeds: {seeds}" + (" (mean ± std over seeds)" if seeds > 1 else "")]
        if (stats["layer"] != NO_LAYER).any():
            notes.append("probes: L = hidden_states index (0 = embeddings); " + (results.layer_note(task) or ""))
        for name, same in dropped.items():
            notes.append(f"{name} equals {same} (left out)")
        if mean[AVG].isna().any():
            notes.append("avg left empty for rows that miss languages other rows have")
        if controls:
            notes += _control_note(results)
        tables.append(Table(key=f"languages:{task}", title=task_title(task), mean=mean, std=std,
                            bold_within="metric", notes=notes, controls=controls))
    return tables


def _splits_note(stats: pd.DataFrame, langs: list[str]) -> str:
    by_split = stats.groupby("split")["lang"].unique()
    if len(by_split) == 1:
        return f"split: {by_split.index[0]}"
    parts = [f"{split} for {', '.join(x for x in langs if x in set(found))}" for split, found in by_split.items()]
    return "splits: " + "; ".join(parts)


def _drop_duplicate_metrics(mean: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Leave out a metric that repeats a more specific one in every row (Tatoeba's ``accuracy`` is
    ``accuracy_en_xx``, XTREME's official direction), so the table shows both directions and their mean once."""
    metrics = list(dict.fromkeys(mean.index.get_level_values("metric")))
    dropped: dict[str, str] = {}
    for name in metrics:
        for other in metrics:
            if other == name or other in dropped or len(other) <= len(name) or not other.startswith(name):
                continue
            a = mean.xs(name, level="metric")
            b = mean.xs(other, level="metric").reindex(a.index)
            if a.shape == b.shape and ((a - b).abs().fillna(0) < 1e-9).all().all() and (a.notna() == b.notna()).all().all():
                dropped[name] = other
                break
    keep = ~mean.index.get_level_values("metric").isin(list(dropped))
    return mean[keep], dropped


def _order_metrics(mean: pd.DataFrame, head: str) -> pd.DataFrame:
    """Headline metric first within each model, then the rest alphabetically with means last (stable across
    runs; Tatoeba reads en->xx, xx->en, mean)."""
    metrics = list(dict.fromkeys(mean.index.get_level_values("metric")))
    rank = {m: (m != head, "mean" in m, m) for m in metrics}
    models = list(dict.fromkeys(mean.index.get_level_values("model")))
    order = sorted(mean.index, key=lambda ix: (models.index(ix[0]), rank[ix[1]]))
    return mean.loc[order]


def task_title(task: str) -> str:
    name = XTREME_TASKS.get(xtreme_task(task) or "", None)
    if not name:
        return task
    return name if name.lower() == task.lower() else f"{name} ({task})"


# The retrieval tasks of XTREME's 9-task score, under the scorer's names, with the metrics its evaluate.py reports.
RETRIEVAL_TASKS = {"bucc": "bucc2018", "bucc2018": "bucc2018", "tatoeba": "tatoeba"}
RETRIEVAL_METRICS = {"bucc2018": ("f1", "precision", "recall"), "tatoeba": ("accuracy",)}
RETRIEVAL_COLUMNS = {"bucc2018": "BUCC F1", "tatoeba": "Tatoeba Acc"}
AVG7 = "Avg (7 tasks)"
XTREME_SCORE = "XTREME score"


def _scorer_task(task: str) -> str | None:
    """The task's name in XTREME's evaluate.py (``panx``, ``bucc2018``, ...), or None."""
    return xtreme_task(task) or RETRIEVAL_TASKS.get(task)


def task_blocks(results: Results) -> dict[str, dict[str, dict]]:
    """{row label: {XTREME task: XTREME's task block}} from the seed means, through the official aggregation
    (``xeval.metrics.xtreme.task_summary``: per-metric language averages and ``avg_metric``, QA = (EM + F1) / 2).
    The retrieval probes (BUCC, Tatoeba) enter at their chosen layer, with the metrics XTREME's scorer reports."""
    out: dict[str, dict[str, dict]] = {}
    for (model, setting, task), group in results.stats.groupby(["model", "setting", "task"], sort=False):
        canon = _scorer_task(task)
        if canon is None:
            continue
        keep = RETRIEVAL_METRICS.get(canon)
        per_lang: dict[str, dict[str, float]] = {}
        for row in group.itertuples(index=False):
            metric = "exact_match" if row.metric == "em" else row.metric
            if keep is None or metric in keep:
                per_lang.setdefault(row.lang, {})[metric] = float(row.mean)
        if per_lang:
            out.setdefault(results.row(model, setting), {})[canon] = task_summary(canon, per_lang)
    return out


def task_languages(results: Results) -> dict[str, dict[str, set[str]]]:
    """{row label: {XTREME task: the languages run}} (the languages behind ``task_blocks``' averages)."""
    out: dict[str, dict[str, set[str]]] = {}
    for (model, setting, task), group in results.stats.groupby(["model", "setting", "task"], sort=False):
        canon = _scorer_task(task)
        if canon is not None:
            out.setdefault(results.row(model, setting), {}).setdefault(canon, set()).update(group["lang"])
    return out


def _partial_note(counts: dict[str, set[tuple[int, int, int]]]) -> str:
    """"† averaged over N of M XTREME languages: POS 5 of 33, ..." (several counts when rows differ)."""
    parts = []
    for task, found in counts.items():
        official = len(XTREME.tasks[task].langs)
        covered = "/".join(str(n) for n in sorted({n for n, _, _ in found}))
        extra = sorted({x for _, _, x in found if x})
        parts.append(f"{XTREME_TASKS.get(task) or RETRIEVAL_COLUMNS[task].split()[0]} {covered} of {official}"
                     + (f" (+{'/'.join(map(str, extra))} not in XTREME)" if extra else ""))
    return "† averaged over N of M XTREME languages per task: " + ", ".join(parts)


def seven_task_average(blocks: dict[str, dict]) -> float | None:
    """"Avg (7 tasks)", the XLM-E main table's average: the unweighted mean of the seven fine-tuning tasks'
    ``avg_metric`` (QA tasks count (EM + F1) / 2), None unless all seven are present. It is NOT the XTREME score,
    which also needs BUCC and Tatoeba (``xtreme_score``)."""
    values = [blocks.get(task, {}).get("avg_metric") for task in XTREME_TASKS]
    if any(v is None or np.isnan(v) for v in values):
        return None
    return float(np.mean(values))


def xtreme_score(blocks: dict[str, dict]) -> float | None:
    """XTREME's score exactly as its ``evaluate.py`` (``all_task``): the mean of the nine tasks' ``avg_metric``
    (POS, NER, XQuAD, MLQA, TyDiQA, XNLI, PAWS-X, BUCC, Tatoeba), None unless all nine are present."""
    nine = {t: b for t, b in blocks.items() if t in XTREME.tasks}
    if set(nine) != set(XTREME.tasks) or any(np.isnan(b.get("avg_metric", np.nan)) for b in nine.values()):
        return None
    return float(overall_scores(nine, XTREME)["all_task"])


def _summary_std(results: Results, sources: dict, mean: pd.DataFrame) -> pd.DataFrame:
    """Std over seeds of each summary cell: the cell computed per seed (XTREME's aggregation over that seed's
    languages), over the seeds that cover every language of the cell; the "Avg (7 tasks)" column likewise from the
    per-seed 7-task averages. NaN with fewer than two such seeds."""
    per_seed: dict = {}  # (row, seed) -> {task: block}
    for (model, setting, task, seed), group in results.long.groupby(["model", "setting", "task", "seed"], sort=False):
        canon = xtreme_task(task)  # seeds are the fine-tuning tasks' (probes have one)
        if canon is None:
            continue
        per_lang: dict[str, dict[str, float]] = {}
        for row in group.itertuples(index=False):
            per_lang.setdefault(row.lang, {})["exact_match" if row.metric == "em" else row.metric] = float(row.value)
        per_seed.setdefault((results.row(model, setting), seed), {})[canon] = (task_summary(canon, per_lang),
                                                                               set(per_lang))
    languages = task_languages(results)
    std = pd.DataFrame(np.nan, index=mean.index, columns=mean.columns)
    for row in mean.index:
        seeds = [seed for r, seed in per_seed if r == row]
        for column, (task, key) in sources.items():
            values = [per_seed[(row, s)][task][0][key] for s in seeds if task in per_seed[(row, s)]
                      and per_seed[(row, s)][task][1] == languages.get(row, {}).get(task)]
            if len(values) >= 2:
                std.loc[row, column] = float(np.std(values, ddof=1))
        scores = []
        for s_ in seeds:
            blocks = per_seed[(row, s_)]
            if all(task in blocks and blocks[task][1] == languages.get(row, {}).get(task) for task in XTREME_TASKS):
                scores.append(seven_task_average({t: b for t, (b, _) in blocks.items()}))
        if len(scores) >= 2 and not np.isnan(mean.at[row, AVG7]):
            std.loc[row, AVG7] = float(np.std(scores, ddof=1))
    return std


def summary_table(results: Results) -> Table:
    """The XLM-E main table's layout: the seven fine-tuning tasks and "Avg (7 tasks)"; with BUCC / Tatoeba records
    also their columns and the "XTREME score" (the nine-task ``all_task`` of XTREME's evaluate.py), shown only
    when all nine are there. The 7-task average is never called the XTREME score."""
    blocks = task_blocks(results)
    if not any(set(by_task) & set(XTREME_TASKS) for by_task in blocks.values()):
        raise UserError("no XTREME task records (udpos, panx, xquad, mlqa, tydiqa, xnli, pawsx) for a summary")
    retrieval = [t for t in RETRIEVAL_COLUMNS if any(t in by_task for by_task in blocks.values())]
    columns, pairs, sources = [], [], {}
    for task, name in XTREME_TASKS.items():
        if task in QA_TASKS:
            columns += [f"{name} F1", f"{name} EM"]
            pairs.append((f"{name} F1", f"{name} EM", f"{name} F1 / EM"))
            sources[f"{name} F1"], sources[f"{name} EM"] = (task, "avg_f1"), (task, "avg_exact_match")
        else:
            column = f"{name} {'F1' if task in ('udpos', 'panx') else 'Acc'}"
            columns.append(column)
            sources[column] = (task, "avg_metric")
    for task in retrieval:
        columns.append(RETRIEVAL_COLUMNS[task])
        sources[RETRIEVAL_COLUMNS[task]] = (task, "avg_metric")
    nine = any(set(RETRIEVAL_COLUMNS) <= set(by_task) for by_task in blocks.values())  # a row could have all nine
    totals = [AVG7] + ([XTREME_SCORE] if nine else [])
    mean = pd.DataFrame(np.nan, index=pd.Index(list(blocks), name="model"), columns=[*columns, *totals])
    for row, by_task in blocks.items():
        for column, (task, key) in sources.items():
            value = by_task.get(task, {}).get(key)
            if value is not None:
                mean.loc[row, column] = value
        avg = seven_task_average(by_task)
        mean.loc[row, AVG7] = np.nan if avg is None else avg
        if nine:
            score = xtreme_score(by_task)
            mean.loc[row, XTREME_SCORE] = np.nan if score is None else score
    # a cell averaged over another language set than XTREME's official one is marked (xtreme-mini, CI runs), and
    # so are the row's averages: then they are not XTREME's numbers
    marked = pd.DataFrame(False, index=mean.index, columns=mean.columns)
    counts: dict[str, set[tuple[int, int, int]]] = {}
    for row, by_task in task_languages(results).items():
        for task, langs in by_task.items():
            official = set(XTREME.tasks[task].langs)
            if langs == official or row not in mean.index:
                continue
            cells = [c for c, (t, _) in sources.items() if t == task and not np.isnan(mean.at[row, c])]
            if cells:
                marked.loc[row, cells] = True
                counts.setdefault(task, set()).add((len(langs & official), len(official), len(langs - official)))
    for total in totals:
        marked[total] = marked.any(axis=1) & mean[total].notna()
    counts = {t: counts[t] for t in [*XTREME_TASKS, *RETRIEVAL_COLUMNS] if t in counts}
    groups = [(header, [c for c in columns if sources[c][0] in tasks]) for header, tasks in XTREME_GROUPS.items()]
    if retrieval:
        groups.append(("Sentence Retrieval", [RETRIEVAL_COLUMNS[t] for t in retrieval]))
    xtreme = results.stats[results.stats["task"].map(_scorer_task).notna()]
    langs = xtreme.groupby("task")["lang"].nunique()
    notes = ["task scores average each task's languages as run ("
             + ", ".join(f"{t}: {n}" for t, n in langs.items()) + " languages); QA cells are F1 / EM",
             f"{AVG7}: mean over the seven fine-tuning tasks (QA as (F1 + EM) / 2), shown only when all seven were "
             "run; it is not the XTREME score (which also counts BUCC and Tatoeba)"]
    if nine:
        notes.append(f"{XTREME_SCORE}: XTREME's evaluate.py all_task, the mean over all nine tasks, shown only when "
                     "all nine were run; BUCC and Tatoeba at their chosen layer"
                     + "".join(f" ({t}: {results.layer_note(t)})" for t in results.layer_rules_tasks()
                               if RETRIEVAL_TASKS.get(t) in retrieval and results.layer_note(t)))
    if counts:
        notes.append(_partial_note(counts))
    for total in totals:
        if marked[total].any():
            notes.append(f"{total}†: a mean over † cells, not XTREME's number")
    controls = set(results.control_rows()) & set(mean.index)
    std = _summary_std(results, sources, mean)
    if std.notna().any().any():
        notes.append("± = standard deviation over seeds of the cell computed per seed")
    return Table(key="summary", title="XTREME summary", mean=mean, std=std if std.notna().any().any() else None,
                 pairs=pairs, groups=groups,
                 notes=notes + (_control_note(results) if controls else []), stacked_headers=True, controls=controls,
                 marked=marked if marked.any().any() else None)


def headline_groups(results: Results):
    """(task, metric, model, setting, rows of that metric) for every task but the diagnostic ones, in store order."""
    for task in results.tasks():
        if task in DIAGNOSTIC_TASKS:
            continue
        stats = results.stats[results.stats["task"] == task]
        metric = headline_metric(task, stats["metric"])
        for (model, setting), group in stats[stats["metric"] == metric].groupby(["model", "setting"], sort=False):
            yield task, metric, model, setting, group


def gap_table(results: Results) -> Table:
    """Transfer gap per task: English minus the mean over the non-English languages (lower is better)."""
    rows: dict[str, dict[str, float]] = {}
    tasks = []
    for task, _metric, model, setting, group in headline_groups(results):
        by_lang = group.set_index("lang")["mean"]
        others = by_lang.drop("en", errors="ignore")
        if "en" not in by_lang.index or others.empty:
            continue
        rows.setdefault(results.row(model, setting), {})[task] = float(by_lang["en"] - others.mean())
        if task not in tasks:
            tasks.append(task)
    if not rows:
        raise UserError("no task with English and at least one other language: no transfer gap to show")
    mean = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=tasks)
    mean.index.name = "model"
    mean.columns = [_gap_column(t) for t in tasks]
    complete = mean.notna().all(axis=1)
    mean[AVG] = mean.mean(axis=1).where(complete)
    notes = ["transfer gap = English score minus the mean over the other languages (points; lower is better); "
             "headline metric per task (F1 for QA)",
             "avg over tasks only for rows that have every task"]
    controls = set(results.control_rows()) & set(mean.index)
    return Table(key="gap", title="Cross-lingual transfer gap", mean=mean, lower_columns=set(mean.columns),
                 notes=notes + (_control_note(results) if controls else []), controls=controls)


def _gap_column(task: str) -> str:
    return XTREME_TASKS.get(xtreme_task(task) or "", task)


def probe_tasks(results: Results) -> list[str]:
    return [t for t in results.tasks() if (results.sweep[results.sweep["task"] == t]["layer"] != NO_LAYER).any()]


def sweeps(results: Results) -> dict[str, pd.DataFrame]:
    """Per probe: rows = model label, columns = layer, values = headline metric averaged over languages."""
    out = {}
    for task in probe_tasks(results):
        frame = results.sweep[(results.sweep["task"] == task) & (results.sweep["layer"] != NO_LAYER)]
        metric = headline_metric(task, frame["metric"])
        rows = {}
        for (model, setting), group in frame.groupby(["model", "setting"], sort=False):
            rows[results.row(model, setting)] = layer_sweep(group).loc[metric]
        table = pd.DataFrame(rows).T.sort_index(axis=1)
        table.index.name = "model"
        table.attrs["metric"] = metric
        out[task] = table
    return out


def universal_layer(sweep: pd.Series, metric: str) -> int:
    """The layer with the best score averaged over languages (the 'universal' layer of a probe); the lowest such
    layer on ties. Same rule as ``xeval.results.layers.LayerCurve.universal_layer``, applied here to seed means
    of one split per language."""
    sweep = sweep.sort_index()
    return int(sweep.idxmin() if lower_is_better(metric) else sweep.idxmax())


def layer_tables(results: Results) -> list[Table]:
    tables = []
    best_rows = []
    rules: dict[str, list[str]] = {}
    controls = set(results.control_rows())
    for task, sweep in sweeps(results).items():
        metric = sweep.attrs["metric"]
        mean = sweep.copy()
        mean.columns = [f"L{c}" for c in sweep.columns]
        lower = set(mean.columns) if lower_is_better(metric) else set()
        here = controls & set(mean.index)
        tables.append(Table(key=f"layers:{task}", title=f"Layer sweep: {task} ({metric}, mean over languages)",
                            mean=mean, lower_columns=lower, controls=here,
                            notes=["L = hidden_states index (0 = embeddings); bold = best model per layer"]
                            + (_control_note(results) if here else [])))
        for (model, probe, setting), choice in results.layer_rules.items():
            row = results.row(model, setting)
            if probe != task or row not in sweep.index:
                continue
            scores = sweep.loc[row].dropna()
            if choice.layer not in scores.index:
                continue
            best_rows.append(((row, task, metric), [choice.layer, scores[choice.layer], int(scores.index.max()),
                                                    scores[scores.index.max()]]))
            rules.setdefault(choice.describe(), []).append(task)
    if not tables:
        raise UserError("no probe records with layers in the given runs: no layer tables to show")
    idx = pd.MultiIndex.from_tuples([r for r, _ in best_rows], names=["model", "probe", "metric"])
    best = pd.DataFrame([v for _, v in best_rows], index=idx,
                        columns=["chosen layer", "score at chosen", "last layer", "score at last"])
    here = controls & set(idx.get_level_values("model"))
    how = [f"chosen layer of {', '.join(dict.fromkeys(tasks))}: {rule}" for rule, tasks in rules.items()]
    tables.insert(0, Table(key="layers:best", title="Chosen layer per probe", mean=best, bold_within="metric",
                           no_bold={"chosen layer", "last layer"}, digits={"chosen layer": 0, "last layer": 0},
                           notes=["score = headline metric of the reported split averaged over languages (points); "
                                  "the layer is never chosen on the reported split (optimistic)", *how]
                           + (_control_note(results) if here else []), controls=here))
    return tables


def build(results: Results, which: str) -> list[Table]:
    """The tables for ``--table``: languages | summary | gap | layers | ci | correlation | typology | tokenizer |
    neutrality | all (those the runs can fill)."""
    if which == "languages":
        return language_tables(results)
    if which == "summary":
        return [summary_table(results)]
    if which == "gap":
        return [gap_table(results)]
    if which == "layers":
        return layer_tables(results)
    if which == "ci":
        from xeval.report.tables.uncertainty import ci_tables

        return ci_tables(results)
    if which == "correlation":
        from xeval.report.tables.correlation import correlation_table

        return [correlation_table(results)]
    if which == "typology":
        from xeval.report.tables.typology_table import typology_tables

        return typology_tables(results)
    if which == "tokenizer":
        from xeval.report.tables.tokenizer_table import tokenizer_table

        return [tokenizer_table(results)]
    if which == "neutrality":
        from xeval.report.tables.neutrality_table import neutrality_table

        return [neutrality_table(results)]
    if which == "all":
        out = []
        for kind in ("summary", "gap", "layers", "languages", "ci", "correlation", "typology", "tokenizer",
                     "neutrality"):
            try:
                out += build(results, kind)
            except UserError:
                continue  # a table the runs cannot fill is left out of the full report
        return out
    raise UserError(f"unknown table {which!r}; expected languages, summary, gap, layers, ci, correlation, typology, tokenizer, neutrality or all")
