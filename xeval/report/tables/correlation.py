"""``report --table correlation``: does a probe predict transfer? Spearman's ρ across languages between each probe
(Tatoeba, FLORES, word alignment AER, lexicon induction; at the layer the report selects) and each fine-tuning task's
zero-shot score and per-language transfer gap (English minus the language).

Per model, and pooled over models (the (model, language) points of every model that is not a control) when the
runs hold several. A probe over language pairs (``de-en``, ``en-de``) counts for its non-English language; both
directions of one pair are averaged. Languages: the non-English ones both sides have; ρ needs at least 3.
The interval is a percentile bootstrap over languages (1,000 replicates, fixed seed; replicates where a side is
constant are left out); p is scipy's (t-approximation, two-sided). AER is lower-is-better: a probe that predicts
transfer well then has a *negative* ρ with scores and a positive one with gaps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from xeval.base.errors import UserError
from xeval.data.typology import base_language
from xeval.report.tables.base import Table, headline_groups, probe_tasks

MIN_LANGUAGES = 3
N_BOOTSTRAP = 1000
POOLED = "pooled"


def per_language(results) -> pd.DataFrame:
    """Tidy frame: row label, kind (probe | task), name, measure (score | gap), lang, value; seed means."""
    probes = set(probe_tasks(results))
    rows = []
    for task, metric, model, setting, group in headline_groups(results):
        label = results.row(model, setting)
        values = group.assign(base=group["lang"].map(base_language)).groupby("base")["mean"].mean()
        if task in probes:
            rows += [(label, model, "probe", f"{task} ({metric})", "score", lang, v)
                     for lang, v in values.items() if lang != "en"]
            continue
        rows += [(label, model, "task", task, "score", lang, v) for lang, v in values.items() if lang != "en"]
        if "en" in values.index:
            rows += [(label, model, "task", task, "gap", lang, values["en"] - v)
                     for lang, v in values.items() if lang != "en"]
    return pd.DataFrame(rows, columns=["row", "model", "kind", "name", "measure", "lang", "value"])


def spearman_ci(x: np.ndarray, y: np.ndarray, n_boot: int = N_BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(x), size=(n_boot, len(x)))
    values = []
    for idx in picks:
        xs, ys = x[idx], y[idx]
        if np.ptp(xs) == 0 or np.ptp(ys) == 0:
            continue  # ρ undefined for a constant side
        values.append(sps.spearmanr(xs, ys).statistic)
    if len(values) < n_boot / 2:
        return float("nan"), float("nan")
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)


def pairs(frame: pd.DataFrame, controls: set[str]) -> list[tuple[str, str, str, str, pd.DataFrame]]:
    """(row, probe, task, measure, joined points) for every model and, with 2+ models, pooled over the models."""
    probes = frame[frame["kind"] == "probe"]
    tasks = frame[frame["kind"] == "task"]
    out = []
    groups = [(row, probes[probes["row"] == row], tasks[tasks["row"] == row]) for row in dict.fromkeys(frame["row"])]
    models = [r for r in dict.fromkeys(frame["row"]) if r not in controls]
    if len(models) > 1:
        groups.append((POOLED, probes[probes["row"].isin(models)], tasks[tasks["row"].isin(models)]))
    for row, p, t in groups:
        for probe in dict.fromkeys(p["name"]):
            for (task, measure), target in t.groupby(["name", "measure"], sort=False):
                joined = p[p["name"] == probe].merge(target, on=["row", "lang"], suffixes=("_probe", "_task"))
                if len(joined):
                    out.append((row, probe, task, measure, joined))
    return out


def correlation_table(results) -> Table:
    frame = per_language(results)
    if frame.empty or not (frame["kind"] == "probe").any() or not (frame["kind"] == "task").any():
        raise UserError("a correlation needs probe records (tatoeba, flores, alignment, lexicon) and fine-tuning "
                        "records of the same model(s) in the given runs")
    controls = set(results.control_rows())
    rows, index = [], []
    for row, probe, task, measure, joined in pairs(frame, controls):
        if len(joined) < MIN_LANGUAGES:
            continue
        x, y = joined["value_probe"].to_numpy(), joined["value_task"].to_numpy()
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            rho = low = high = p = float("nan")
        else:
            test = sps.spearmanr(x, y)
            rho, p = float(test.statistic), float(test.pvalue)
            low, high = spearman_ci(x, y)
        index.append((row, probe, f"{task} {'zero-shot score' if measure == 'score' else 'gap'}"))
        rows.append([rho, low, high, len(joined), p])
    if not rows:
        raise UserError(f"no probe and task share {MIN_LANGUAGES} or more non-English languages: no correlation")
    idx = pd.MultiIndex.from_tuples(index, names=["model", "probe", "target"])
    mean = pd.DataFrame(rows, index=idx, columns=["Spearman rho", "95% CI low", "95% CI high", "n languages", "p"])
    notes = ["Spearman rho across the non-English languages both sides have; 95% CI: percentile bootstrap over "
             "languages (1000 replicates); p: two-sided (scipy)",
             "gap = English minus the language; AER is lower-is-better, so a good predictor has rho < 0 with scores",
             "probes at the layer the report selects (best by mean over languages unless --layer)"]
    if (idx.get_level_values("model") == POOLED).any():
        notes.append("pooled: the (model, language) points of every model that is not a control")
    return Table(key="correlation", title="Probe-to-transfer correlation", mean=mean, no_bold=set(mean.columns),
                 digits={"Spearman rho": 2, "95% CI low": 2, "95% CI high": 2, "n languages": 0, "p": 3},
                 notes=notes)
