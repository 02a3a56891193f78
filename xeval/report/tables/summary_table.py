"""``report --table summary``: one row per model in the layout of the XLM-E paper's main table (POS F1, NER F1,
XQuAD / MLQA / TyDiQA F1 / EM, XNLI acc, PAWS-X acc, "Avg (7 tasks)"), plus BUCC F1, Tatoeba Acc and the "XTREME
score" when retrieval records are there.

A task not run is an empty cell; "Avg (7 tasks)" only when all seven fine-tuning tasks are there, the XTREME score
(XTREME's evaluate.py ``all_task``, nine tasks) only when all nine are, never an average over whatever happened to
run. A cell averaged over another language set than XTREME's official one (xtreme-mini, CI runs) is marked † with a
footnote of the counts; a cell scored on dev sets where XTREME reports test (‡), subsampled (§) or trained on data
that stands in for XTREME's (¶) is marked too, each with its reason (``xeval.report.deviations``), and the table is
then titled as not XTREME's numbers. A row's averages carry the marks of its cells.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xeval.base.errors import UserError
from xeval.metrics.xtreme import XTREME, overall_scores, task_summary
from xeval.report.deviations import (
    SYMBOLS,
    WARNED,
    deviation_notes,
    mark_cells,
    not_xtremes,
    task_deviations,
    union,
)
from xeval.report.frame import QA_TASKS, XTREME_GROUPS, XTREME_TASKS, xtreme_task
from xeval.report.tables.base import Results, Table, control_note

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


def _departures(results: Results) -> dict[tuple[str, str], list]:
    """{(row label, XTREME task): the departures of its records from XTREME's protocol} (one per task name: a
    task and its alias, e.g. bucc / bucc2018, share a cell)."""
    out: dict[tuple[str, str], list] = {}
    for (model, setting, task), dev in task_deviations(results).items():
        canon = _scorer_task(task)
        if canon is not None:
            out.setdefault((results.row(model, setting), canon), []).append(dev)
    return out


def _column_title(task: str) -> str:
    canon = _scorer_task(task) or task
    return XTREME_TASKS.get(canon) or RETRIEVAL_COLUMNS.get(canon, task).split()[0]


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
    # a cell averaged over another language set than XTREME's official one is marked † (xtreme-mini, CI runs), a cell
    # that departs from XTREME's protocol ‡ § ¶ (xeval.report.deviations), and a row's averages carry its cells'
    # marks: then they are not XTREME's numbers
    marks = pd.DataFrame("", index=mean.index, columns=mean.columns)
    counts: dict[str, set[tuple[int, int, int]]] = {}
    departures = _departures(results)
    found: dict[str, list] = {}
    for row, by_task in task_languages(results).items():
        for task, langs in by_task.items():
            if row not in mean.index:
                continue
            cells = [c for c, (t, _) in sources.items() if t == task and not np.isnan(mean.at[row, c])]
            if not cells:
                continue
            official = set(XTREME.tasks[task].langs)
            if langs != official:
                marks.loc[row, cells] = SYMBOLS["languages"]
                counts.setdefault(task, set()).add((len(langs & official), len(official), len(langs - official)))
            for dev in departures.get((row, task), []):
                mark_cells(marks, row, cells, dev, found)
    for total in totals:
        marks[total] = [union(marks.loc[row, columns]) if not np.isnan(mean.at[row, total]) else ""
                        for row in mean.index]
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
    notes += deviation_notes(found, _column_title, [*XTREME_TASKS, *RETRIEVAL_TASKS])
    for total in totals:
        used = "".join(dict.fromkeys("".join(marks[total])))
        if used:
            notes.append(f"{total}{used}: a mean over marked cells, not XTREME's number")
    controls = set(results.control_rows()) & set(mean.index)
    std = _summary_std(results, sources, mean)
    if std.notna().any().any():
        notes.append("± = standard deviation over seeds of the cell computed per seed")
    marked = (marks != "").any().any()
    departed = any(devs for kind, devs in found.items() if kind != WARNED)  # a warning is not a protocol departure
    return Table(key="summary", title=not_xtremes("XTREME summary") if departed else "XTREME summary", mean=mean, std=std if std.notna().any().any() else None,
                 pairs=pairs, groups=groups,
                 notes=notes + (control_note(results, controls) if controls else []), stacked_headers=True, controls=controls,
                 marks=marks if marked else None)
