"""``report --table gap``: the transfer gap, English minus the mean over the other languages, per task (headline
metric; F1 for QA, as XTREME's gap table), one row per model. Lower is better. A gap over dev-set languages,
subsampled sets or substitute data is marked (``xeval.report.deviations``)."""

from __future__ import annotations

import pandas as pd

from xeval.base.errors import UserError
from xeval.report.deviations import deviation_notes, mark_cells, task_deviations, union
from xeval.report.frame import XTREME_TASKS, xtreme_task
from xeval.report.tables.base import AVG, Results, Table, control_note, headline_groups


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
    mean.columns = [gap_column(t) for t in tasks]
    complete = mean.notna().all(axis=1)
    mean[AVG] = mean.mean(axis=1).where(complete)
    notes = ["transfer gap = English score minus the mean over the other languages (points; lower is better); "
             "headline metric per task (F1 for QA)",
             "avg over tasks only for rows that have every task"]
    marks, found = gap_marks(results, mean)
    notes += deviation_notes(found, gap_column, tasks)
    controls = set(results.control_rows()) & set(mean.index)
    return Table(key="gap", title="Cross-lingual transfer gap", mean=mean, lower_columns=set(mean.columns),
                 notes=notes + (control_note(results, controls) if controls else []), controls=controls, marks=marks)


def gap_marks(results: Results, mean: pd.DataFrame) -> tuple[pd.DataFrame | None, dict]:
    """The marks of the gap cells (``xeval.report.deviations``: a gap between an English test score and dev-set
    scores of other languages is marked, as are subsampled and substitute-data ones); avg carries its cells'."""
    marks = pd.DataFrame("", index=mean.index, columns=mean.columns)
    found: dict = {}
    for (model, setting, task), dev in task_deviations(results).items():
        row, column = results.row(model, setting), gap_column(task)
        if row in mean.index and column in mean.columns and pd.notna(mean.at[row, column]):
            mark_cells(marks, row, [column], dev, found)
    columns = [c for c in mean.columns if c != AVG]
    marks[AVG] = [union(marks.loc[row, columns]) if pd.notna(mean.at[row, AVG]) else "" for row in mean.index]
    return (marks if (marks != "").any().any() else None), found


def gap_column(task: str) -> str:
    """The column a task heads in the gap table (and the gap figure): its XTREME name, else the task."""
    return XTREME_TASKS.get(xtreme_task(task) or "", task)
