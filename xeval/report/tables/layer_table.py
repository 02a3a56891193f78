"""``report --table layers``: for probes, score vs layer (mean over languages) and the layer each probe is reported
at: chosen on the selection split (dev), else the card's fixed layer, else the last one; never on the reported
split."""

from __future__ import annotations

import pandas as pd

from xeval.base.errors import UserError
from xeval.report.frame import NO_LAYER, headline_metric, lower_is_better
from xeval.report.tables.base import Results, Table, control_note, layer_sweep, probe_tasks
from xeval.results.controls import MODEL_FREE


def sweeps(results: Results) -> dict[str, pd.DataFrame]:
    """Per probe: rows = model label, columns = layer, values = headline metric averaged over languages."""
    out = {}
    for task in probe_tasks(results):
        frame = results.sweep[(results.sweep["task"] == task) & (results.sweep["layer"] != NO_LAYER)]
        metric = headline_metric(task, frame["metric"])
        rows, flat = {}, {}
        for (model, setting), group in frame.groupby(["model", "setting"], sort=False):
            if model not in results.controls:  # a model's baseline rows follow its random-init rows
                rows.update(flat)
                flat = _flat_rows(results, task, metric, model, setting)
            rows[results.row(model, setting)] = layer_sweep(group).loc[metric]
        rows.update(flat)
        table = pd.DataFrame(rows).T.sort_index(axis=1)
        table.index.name = "model"
        table.attrs["metric"] = metric
        table.attrs["flat"] = {label for label in rows if label in _flat_labels(results)}
        out[task] = table
    return out


def _flat_labels(results: Results) -> set[str]:
    return {results.labels.get(key, key) for key, (_, kind) in results.controls.items() if kind in MODEL_FREE}


def _flat_rows(results: Results, task: str, metric: str, model: str, setting: str) -> dict[str, pd.Series]:
    """The rows of a control without layers run beside ``model`` (the char n-gram baseline): its one language mean
    under every layer of the model's sweep, a floor the curves are read against (a horizontal line in the figure)."""
    out = {}
    for key, (parent, kind) in results.controls.items():
        if parent != model or kind not in MODEL_FREE:
            continue
        rows = results.sweep[(results.sweep["model"] == key) & (results.sweep["task"] == task)
                             & (results.sweep["setting"] == setting) & (results.sweep["layer"] == NO_LAYER)
                             & (results.sweep["metric"] == metric)]
        if rows.empty:
            continue
        layers = sorted(int(k) for k in results.sweep[(results.sweep["model"] == model)
                                                      & (results.sweep["task"] == task)
                                                      & (results.sweep["layer"] != NO_LAYER)]["layer"].unique())
        value = float(rows.groupby("lang")["value"].mean().mean())  # seeds first (one: probes), then languages
        out[results.row(key, setting)] = pd.Series(value, index=layers, dtype=float)
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
                            + (control_note(results, here) if here else [])))
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
                           + (control_note(results, here) if here else []), controls=here))
    return tables
