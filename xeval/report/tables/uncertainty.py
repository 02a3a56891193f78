"""Confidence intervals (``report --table ci``) and paired significance tests (``compare A B --significance``)
from the per-example outcomes stored beside each record; the statistics themselves are in ``xeval.report.stats``.

A cell is one (model, task, setting, language) of the report: its split and layer as the other tables choose them
(test where present; a probe's chosen layer, see ``Results``, unless ``--layer``), its headline metric, its seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from xeval.base.console import log
from xeval.base.errors import UserError
from xeval.report import stats as st
from xeval.report.frame import DIAGNOSTIC_TASKS, NO_LAYER, headline_metric, lower_is_better, setting_label
from xeval.report.tables.base import Table, order_languages, task_title
from xeval.results.outcomes import MetricOutcomes, UnboundOutcomes


@dataclass
class Cell:
    model: str
    task: str
    setting: str
    lang: str
    split: str
    layer: int  # NO_LAYER for fine-tuning tasks
    metric: str
    mean: float  # the seed mean the other tables show
    n_seeds: int
    runs: list[MetricOutcomes] | None  # one per seed; None when a seed's record has no outcomes for the metric
    ids: list[str] | None = None
    problem: str | None = None  # why a cell has no outcomes although a file is there (UnboundOutcomes)


def cells(results) -> list[Cell]:
    """Every headline cell of ``results`` (``xeval.report.tables.base.Results``) with its per-seed outcomes."""
    by_unit = {}
    for rec in results.records:
        u = rec.unit
        # The frame's setting column (setting_label: probe mode, compat), so such cells find their records too.
        by_unit[(u.model, u.task, u.lang, u.split, setting_label(u), NO_LAYER if u.layer is None else u.layer,
                 u.seed)] = rec
    out = []
    for task in results.tasks():
        if task in DIAGNOSTIC_TASKS:
            continue  # counts over a fixed text, nothing sampled
        stats = results.stats[results.stats["task"] == task]
        metric = headline_metric(task, stats["metric"])
        rows = results.long[(results.long["task"] == task) & (results.long["metric"] == metric)]
        for (model, setting, lang, split, layer), group in rows.groupby(["model", "setting", "lang", "split", "layer"],
                                                                          sort=False):
            runs, ids, problem = [], None, None
            for seed in sorted(group["seed"]):
                rec = by_unit.get((model, task, lang, split, setting, layer, seed))
                try:
                    outcomes = rec.outcomes() if rec is not None else None
                except UnboundOutcomes as err:  # another record's or edited: no interval rather than a wrong one
                    outcomes, problem = None, str(err)
                if outcomes is None or metric not in outcomes.metrics:
                    runs = None
                    break
                runs.append(outcomes.metrics[metric])
                ids = outcomes.ids if ids is None else ids
            out.append(Cell(model, task, setting, lang, split, int(layer), metric, float(group["value"].mean()),
                            len(group), runs, ids, problem))
    unbound = [c.problem for c in out if c.problem]
    if unbound:
        log.warning(f"report: {len(unbound)} cell(s) without an interval or test, their outcomes not their "
                    f"record's: {unbound[0]}")
    return out


# ------------------------------------------------------------------------------------- confidence intervals


def ci_tables(results, level: float = 0.95) -> list[Table]:
    """Per task: a row per (model, language) with the score, its bootstrap interval, seeds and examples."""
    tables = []
    by_task: dict[str, list] = {}
    for cell in cells(results):
        by_task.setdefault(cell.task, []).append(cell)
    if not any(c.runs for group in by_task.values() for c in group):
        raise UserError("no per-example outcomes in the given runs (records from before xeval kept them): "
                        "rerun with --overwrite for confidence intervals")
    pct = f"{round(level * 100):d}%"
    for task, group in by_task.items():
        rows, index, bases, controls = [], [], set(), set()
        langs = order_languages({c.lang for c in group})
        for cell in sorted(group, key=lambda c: langs.index(c.lang)):
            label = results.row(cell.model, cell.setting) + ("" if cell.layer == NO_LAYER else f" · L{cell.layer}")
            if cell.model in results.controls:
                controls.add(label)
            low = high = np.nan
            examples = np.nan
            if cell.runs:
                low, high, basis = st.bootstrap_ci(cell.runs, level)
                bases.add(basis)
                examples = len(cell.runs[0])
            index.append((label, cell.lang))
            rows.append([cell.mean, low, high, cell.n_seeds, examples])
        idx = pd.MultiIndex.from_tuples(index, names=["model", "lang"])
        columns = ["score", f"{pct} CI low", f"{pct} CI high", "seeds", "examples"]
        mean = pd.DataFrame(rows, index=idx, columns=columns)
        metric = group[0].metric
        notes = [f"{metric} (points); percentile bootstrap, {st.N_BOOTSTRAP} replicates, fixed seed; "
                 "seeds = how many seeds the score averages",
                 "CI over examples for cells with 1-2 seeds; over seeds and examples (two-level) for 3 or more"]
        if mean[f"{pct} CI low"].isna().any():
            notes.append("empty CI: no per-example outcomes stored for that cell (older record, or BUCC)")
        unbound = [c for c in group if c.problem]
        if unbound:
            notes.append(f"empty CI for {len(unbound)} cell(s) whose outcomes file is not their record's (another "
                         f"run's, or edited), e.g. {unbound[0].lang}: rerun those units with --overwrite")
        tables.append(Table(key=f"ci:{task}", title=f"{task_title(task)}: {pct} confidence intervals", mean=mean,
                            no_bold=set(columns), digits={"seeds": 0, "examples": 0}, notes=notes,
                            controls=controls, lower_columns={"score"} if lower_is_better(metric) else set()))
    return tables


# ------------------------------------------------------------------------------------- paired significance


@dataclass
class Significance:
    rows: pd.DataFrame  # task, lang, metric, a, b, diff, p, p_holm, significant, better, n
    models: tuple[str, str]
    alpha: float
    skipped: list[str]

    def summary(self) -> str:
        rows = self.rows
        sig = rows[rows["significant"]]
        better, worse = int(sig["better"].sum()), int((~sig["better"]).sum())
        total = len(rows)
        a, b = self.models
        return (f"{b} vs {a}: better on {better} of {total} (task, language) cells, worse on {worse}, "
                f"no significant difference on {total - better - worse} (paired permutation test, "
                f"{st.N_PERMUTATIONS:,} swaps; p < {self.alpha:g} after Holm–Bonferroni across each task's languages)")


def significance(results_a, model_a: str, results_b, model_b: str, alpha: float = 0.05) -> Significance:
    """Paired test per (task, setting, language) that both models have with outcomes on the same examples."""
    a_cells = {(c.task, c.setting, c.lang): c for c in cells(results_a) if c.model == model_a}
    b_cells = {(c.task, c.setting, c.lang): c for c in cells(results_b) if c.model == model_b}
    shared = [k for k in a_cells if k in b_cells]
    if not shared:
        raise UserError(f"no (task, language) that both {model_a} and {model_b} have: nothing to test")
    rows, skipped = [], []
    for key in shared:
        a, b = a_cells[key], b_cells[key]
        if not a.runs or not b.runs:
            unbound = a.problem or b.problem
            skipped.append(f"{key[0]}/{key[2]}: " + (f"outcomes not the record's ({unbound})" if unbound
                                                      else "no per-example outcomes"))
            continue
        if a.metric != b.metric or a.split != b.split or a.ids != b.ids:
            skipped.append(f"{key[0]}/{key[2]}: different examples or metric")
            continue
        diff, p = st.paired_permutation(st.seed_average(a.runs), st.seed_average(b.runs))
        better = diff < 0 if lower_is_better(a.metric) else diff > 0
        rows.append({"task": key[0], "setting": key[1], "lang": key[2], "metric": a.metric, "a": a.mean, "b": b.mean,
                     "diff": b.mean - a.mean, "p": p, "better": bool(better), "n": len(a.ids or []),
                     "seeds": f"{a.n_seeds}/{b.n_seeds}"})
    if not rows:
        raise UserError("no cell has per-example outcomes on both sides: " + "; ".join(skipped))
    frame = pd.DataFrame(rows)
    frame["p_holm"] = np.nan
    for _, idx in frame.groupby(["task", "setting"], sort=False).groups.items():
        frame.loc[idx, "p_holm"] = st.holm(frame.loc[idx, "p"].tolist())
    frame["significant"] = frame["p_holm"] < alpha
    return Significance(frame, (model_a, model_b), alpha, skipped)


def render_significance(result: Significance) -> str:
    """The summary line, then per task a Markdown table; * marks a significant cell."""
    a, b = result.models
    lines = [result.summary(), "", f"A = {a}, B = {b}; Δ = B − A in points; * = significant after correction", ""]
    for (task, setting), group in result.rows.groupby(["task", "setting"], sort=False):
        sig = group[group["significant"]]
        title = task_title(task) + ("" if setting == "zero-shot" else f" ({setting})")
        lines += [f"### {title}: {group['metric'].iloc[0]}; B better on {int(sig['better'].sum())}, worse on "
                  f"{int((~sig['better']).sum())} of {len(group)} languages", "",
                  "| lang | A | B | Δ | p | p (Holm) | examples | seeds A/B |", "|:---|---:|---:|---:|---:|---:|---:|---:|"]
        for row in group.itertuples(index=False):
            mark = "*" if row.significant else ""
            lines.append(f"| {row.lang}{mark} | {row.a:.1f} | {row.b:.1f} | {row.diff:+.1f}{mark} | {row.p:.4f} | "
                         f"{row.p_holm:.4f} | {row.n} | {row.seeds} |")
        lines.append("")
    if result.skipped:
        lines.append("not tested: " + "; ".join(result.skipped))
    return "\n".join(lines).rstrip() + "\n"
