"""``report --table languages``: per task, one row per (model, metric), one column per language plus ``avg``; seeds
as mean ± std. Tatoeba shows both directions and their mean; alignment shows AER (and P/R) per language pair. A
language scored on dev where the task reports test is marked ‡, and avg carries every mark of its languages
(``xeval.report.deviations``), so an average over dev and test languages never reads as a test number."""

from __future__ import annotations

import pandas as pd

from xeval.base.errors import UserError
from xeval.report.deviations import DEV, SYMBOLS, deviation_notes, symbols, task_deviations
from xeval.report.frame import NO_LAYER, headline_metric
from xeval.report.tables.base import AVG, Results, Table, control_note, order_languages, task_title

HELD_OUT = "_held_out"
HELD_OUT_NOTE = ("f1_held_out = F1 with each half of the source sentences cut at the threshold tuned on the other "
                 "half's gold (xeval's addition, not XTREME's number); f1 tunes it on the gold it scores, so "
                 "f1 − f1_held_out is (usually) that tuning's optimism")


def _seed_average_std(long: pd.DataFrame, langs: list[str]) -> float:
    """Std over seeds of the per-seed average over ``langs`` (only seeds that cover every language)."""
    per_seed = long.pivot_table(index="seed", columns="lang", values="value", aggfunc="mean")
    per_seed = per_seed.reindex(columns=langs).dropna()
    return float(per_seed.mean(axis=1).std()) if len(per_seed) >= 2 else float("nan")


def language_tables(results: Results, tasks: list[str] | None = None) -> list[Table]:
    tables = []
    departures = task_deviations(results)
    for task in tasks or results.tasks():
        stats = results.stats[results.stats["task"] == task]
        if stats.empty:
            raise UserError(f"no records for task {task!r}; the runs have: {', '.join(results.tasks())}")
        langs = order_languages(stats["lang"])
        mean_rows, std_rows, mark_rows, index, controls, found = [], [], [], [], set(), {}
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
            mark_rows.append(_marks(departures.get((model, setting, task)), [*langs, AVG], means, avg, found))
        idx = pd.MultiIndex.from_tuples(index, names=["model", "metric"])
        mean = pd.DataFrame(mean_rows, index=idx, columns=[*langs, AVG])
        std = pd.DataFrame(std_rows, index=idx, columns=[*langs, AVG])
        marks = pd.DataFrame(mark_rows, index=idx, columns=[*langs, AVG])
        head = headline_metric(task, mean.index.get_level_values("metric"))
        mean, dropped = _drop_duplicate_metrics(mean)
        mean = _order_metrics(mean, dropped.get(head, head))
        std, marks = std.loc[mean.index], marks.loc[mean.index]
        seeds = int(stats["n_seeds"].max())
        notes = [f"{_splits_note(stats, langs)}; seeds: {seeds}" + (" (mean ± std over seeds)" if seeds > 1 else "")]
        if (stats["layer"] != NO_LAYER).any():
            notes.append("probes: L = hidden_states index (0 = embeddings); " + (results.layer_note(task) or ""))
        for name, same in dropped.items():
            notes.append(f"{name} equals {same} (left out)")
        if mean[AVG].isna().any():
            notes.append("avg left empty for rows that miss languages other rows have")
        notes += deviation_notes(found, task_title)
        if any(m.endswith(HELD_OUT) for m in mean.index.get_level_values("metric")):
            notes.append(HELD_OUT_NOTE)
        if controls:
            notes += control_note(results, controls)
        tables.append(Table(key=f"languages:{task}", title=task_title(task), mean=mean, std=std,
                            bold_within="metric", notes=notes, controls=controls,
                            marks=marks if (marks != "").any().any() else None))
    return tables


def _marks(dev, columns: list[str], means: pd.Series, avg: float, found: dict) -> list[str]:
    """A row's marks: ‡ on a language scored on dev where the task reports test, and on avg every mark of the
    row's languages (``xeval.report.deviations``: dev, subsampled, substitute data)."""
    if dev is None:
        return [""] * len(columns)
    out = [SYMBOLS[DEV] if lang in dev.on_dev and pd.notna(means.get(lang)) else "" for lang in columns[:-1]]
    if pd.notna(avg):
        kinds = dev.kinds([lang for lang in columns[:-1] if pd.notna(means.get(lang))])
        for kind in kinds:
            found.setdefault(kind, []).append(dev)
        out.append(symbols(kinds))
    else:
        if any(out):
            found.setdefault(DEV, []).append(dev)
        out.append("")
    return out


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
            if other.endswith(HELD_OUT):  # another way of computing it (BUCC), equal by chance, never by definition
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
