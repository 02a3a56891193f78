"""``report --table neutrality``: language neutrality per layer, a row per (model, measure), a column per layer:
the language-ID probe's cross-validated accuracy (and its chance level), CKA with English (mean over languages),
and raw and mean-centred retrieval accuracy for every retrieval probe run with ``--set center=true``. A control
(``--control random-init``) has rows of its own right after its model's."""

from __future__ import annotations

import pandas as pd

from xeval.base.errors import UserError
from xeval.report.tables.base import Table, control_note, task_title


def _per_layer(frame: pd.DataFrame, metric: str) -> dict[tuple[str, str], pd.Series]:
    picked = frame[(frame["metric"] == metric) & (frame["layer"] >= 0)]
    return {key: group.groupby(["layer", "lang"])["value"].mean().groupby("layer").mean()
            for key, group in picked.groupby(["model", "setting"], sort=False)}


def neutrality_table(results) -> Table:
    frame = results.sweep
    neutral = frame[frame["task"] == "neutrality"]
    measures = [("language ID accuracy (%)", _per_layer(neutral, "langid_accuracy")),
                ("language ID chance (%)", _per_layer(neutral, "langid_chance")),
                ("CKA with English × 100", _per_layer(neutral, "cka"))]
    for task in sorted(set(frame.loc[frame["metric"] == "centered_accuracy", "task"])):
        sub = frame[frame["task"] == task]
        measures += [(f"{task_title(task)} accuracy, raw", _per_layer(sub, "accuracy")),
                     (f"{task_title(task)} accuracy, centred", _per_layer(sub, "centered_accuracy"))]
    rows = {}
    for name, curves in measures:
        for (model, setting), series in curves.items():
            rows[(results.row(model, setting), name)] = series
    if not rows:
        raise UserError("no neutrality records (xeval run --tasks neutrality) and no retrieval run with "
                        "--set center=true: no neutrality table")
    order = list(dict.fromkeys(results.row(m, s) for m, s in results.sweep[["model", "setting"]].itertuples(index=False)))
    names = [n for n, _ in measures]
    index = sorted(rows, key=lambda k: (order.index(k[0]) if k[0] in order else len(order), names.index(k[1])))
    mean = pd.DataFrame([rows[k] for k in index], index=pd.MultiIndex.from_tuples(index, names=["model", "measure"]))
    mean = mean.sort_index(axis=1)
    mean.columns = [f"L{int(c)}" for c in mean.columns]
    controls = set(results.control_rows()) & set(mean.index.get_level_values("model"))
    notes = ["L = hidden_states index (0 = embeddings); FLORES-200 devtest sentences; means over languages",
             "language ID: LogisticRegression on standardised mean-pooled vectors, 5 folds grouped by sentence; "
             "lower = more language-neutral",
             "centred: each language's vectors minus their mean before cosine retrieval (Libovický et al. 2020)"]
    return Table(key="neutrality", title="Language neutrality per layer", mean=mean, no_bold=set(mean.columns),
                 notes=notes + (control_note(results, controls) if controls else []), controls=controls)
