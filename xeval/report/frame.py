"""Result records as one tidy pandas frame, and the few facts about tasks and metrics that reports need.

The tidy ("long") frame has one row per (unit, metric):

    model  task  lang  split  setting  layer  seed  metric  value

``layer`` is -1 for units without a layer (fine-tuning tasks), so pandas can group on it; ``seed_stats`` turns
seeds into mean, std and a count. Everything downstream (tables, plots, compare) starts from these two frames.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

import pandas as pd

from xeval.base.console import log
from xeval.base.errors import UserError
from xeval.results.layers import reported_split
from xeval.results.store import Record

NO_LAYER = -1
UNIT_COLUMNS = ["model", "task", "lang", "split", "setting", "layer", "seed"]
KEY_COLUMNS = ["model", "task", "split", "setting", "layer", "lang", "metric"]  # a value's identity across seeds

# The XTREME tasks in the order of the XLM-E paper's main table, with the names the paper prints.
XTREME_TASKS = {
    "udpos": "POS",
    "panx": "NER",
    "xquad": "XQuAD",
    "mlqa": "MLQA",
    "tydiqa": "TyDiQA",
    "xnli": "XNLI",
    "pawsx": "PAWS-X",
}
QA_TASKS = ("xquad", "mlqa", "tydiqa")
XTREME_GROUPS = {  # the paper's header row above the task names
    "Structured Prediction": ("udpos", "panx"),
    "Question Answering": QA_TASKS,
    "Sentence Classification": ("xnli", "pawsx"),
}
_ALIASES = {"pos": "udpos", "udpos": "udpos", "ner": "panx", "panx": "panx", "wikiann": "panx",
            "xquad": "xquad", "mlqa": "mlqa", "tydiqa": "tydiqa", "tydiqagoldp": "tydiqa",
            "xnli": "xnli", "pawsx": "pawsx"}

# Which metric a task is judged by when a table or plot shows one number per language. Tried in order; the
# first one a task's records carry wins. POS is seqeval F1 as XTREME reports it (token accuracy is separate).
_HEADLINE = {
    "udpos": ("f1",), "panx": ("f1",), "xnli": ("accuracy", "acc"), "pawsx": ("accuracy", "acc"),
    "xquad": ("f1",), "mlqa": ("f1",), "tydiqa": ("f1",),
}
# For everything else (probes) the order of the probes' own layer sweep (xeval/results/layers.py): AER for word
# alignment (its records also carry precision/recall/f1), Tatoeba's official en->xx accuracy, BUCC F1, P@1.
_HEADLINE_ANY = ("aer", "accuracy", "f1", "precision_at_1", "acc", "accuracy_mean", "map_at_20", "exact_match", "em")

# Metrics for which a smaller number is better (the rest: larger is better).
_LOWER_IS_BETTER = ("aer", "gap", "loss", "perplexity", "ppl", "error", "unk_rate", "unknown_rate", "fertility",
                    "byte_fallback_rate", "tokens_per_char")

# Tasks that describe a model's tokenizer rather than score it (xeval/adapters/probes/tokenization.py): never a transfer
# gap, a correlation target or a typology row of their own.
DIAGNOSTIC_TASKS = ("tokenizer",)


def xtreme_task(task: str) -> str | None:
    """The XTREME task a card name stands for (``PAN-X`` -> ``panx``), or None."""
    return _ALIASES.get(re.sub(r"[^a-z0-9]", "", task.lower()))


def lower_is_better(metric: str) -> bool:
    name = metric.lower()
    return any(name == w or name.endswith("_" + w) or name.startswith(w + "_") for w in _LOWER_IS_BETTER)


def headline_metric(task: str, metrics: Iterable[str]) -> str:
    """The metric that stands for ``task`` in one-number-per-language views."""
    available = list(dict.fromkeys(metrics))
    for name in _HEADLINE.get(xtreme_task(task) or "", ()) + _HEADLINE_ANY:
        if name in available:
            return name
    means = [m for m in available if "mean" in m]
    return means[0] if means else sorted(available)[0]


_DIRECTIONS = (("xx_en", "en_xx"), ("xx2en", "en2xx"))


def _with_direction_means(metrics: dict[str, float]) -> dict[str, float]:
    """Add the mean of the two retrieval directions when a record has ``…xx_en`` and ``…en_xx`` but not their
    mean (Tatoeba is reported in both directions and their mean)."""
    out = dict(metrics)
    for name in metrics:
        for one, other in _DIRECTIONS:
            if one in name:
                pair, mean = name.replace(one, other), name.replace("_" + one, "_mean").replace(one, "mean")
                if pair in metrics and mean not in metrics:
                    out[mean] = (metrics[name] + metrics[pair]) / 2
    return out


def with_compat_setting(records: Iterable[Record]) -> list[Record]:
    """Records run under ``--compat xtreme`` (``config["compat"]``) get the setting "<setting>, compat xtreme": their
    own table rows, never averaged with (or taken for) the default mode's, and every table names the mode."""
    out = []
    for rec in records:
        mode = (rec.config or {}).get("compat")
        if mode and mode != "none":
            rec = replace(rec, unit=replace(rec.unit, setting=f"{rec.unit.setting}, compat {mode}"))
        out.append(rec)
    return out


def one_per_cell(records: Iterable[Record]) -> list[Record]:
    """One record per table cell (model key, task, language, split, setting, layer, seed), never dropping one
    without a word. The same unit given twice (one run listed twice) counts once, with a warning if the numbers
    differ. Records of one cell under different config hashes (a rerun with other settings, stored beside the
    first) keep the newest, with a warning naming what was left out: ``xeval run --name TAG`` makes such runs two
    rows instead."""
    by_cell: dict[tuple, list[Record]] = {}
    order: dict[int, int] = {}  # a tie on the timestamp (one-second resolution): the later given wins
    for rec in records:
        order[id(rec)] = len(order)
        by_cell.setdefault(rec.unit.cell(), []).append(rec)
    kept, differing, dropped = [], [], []
    for cell, recs in by_cell.items():
        if len(recs) == 1:
            kept.append(recs[0])
            continue
        configs = {r.unit.config_hash for r in recs}
        newest = max(recs, key=lambda r: (str((r.provenance or {}).get("timestamp", "")), order[id(r)]))
        if len(configs) == 1:
            if any(r.metrics != recs[0].metrics for r in recs):
                differing.append(cell)
            kept.append(recs[-1])
        else:
            kept.append(newest)
            dropped.append((cell, newest, [r for r in recs if r is not newest]))
    if differing:
        first = differing[0]
        log.warning(f"report: {len(differing)} unit(s) appear twice with the same config but other numbers "
                    f"(e.g. {' '.join(map(str, first[1:4]))} of {first[0]}); the last given is shown")
    if dropped:
        (model, task, lang, split, *_), newest, others = dropped[0]  # Unit's first fields (Unit.cell)
        other = ", ".join(f"config {r.unit.config_hash or 'none'} of {(r.provenance or {}).get('timestamp', '?')}"
                          for r in others)
        log.warning(f"report: {len(dropped)} cell(s) hold records of several configs; the newest of each is shown "
                    f"(e.g. {task} {lang} {split} of {model}: config {newest.unit.config_hash or 'none'} of "
                    f"{(newest.provenance or {}).get('timestamp', '?')} over {other}); label runs with "
                    "xeval run --name TAG to show each as its own row")
    return kept


def shown_records(records: Iterable[Record]) -> list[Record]:
    """The records the tables show: compat runs relabelled (``with_compat_setting``), one per cell
    (``one_per_cell``). Anything read from a record beside its numbers (per-example outcomes) must come from these,
    or an interval could describe another config's run than the score it is printed next to."""
    return one_per_cell(with_compat_setting(records))


def long_frame(records: Iterable[Record], shown: bool = False) -> pd.DataFrame:
    """One row per (unit, metric), one record per cell; ``shown``: ``records`` already are ``shown_records``."""
    rows = []
    records = records if shown else shown_records(records)
    for rec in records:
        u = rec.unit
        layer = NO_LAYER if u.layer is None else int(u.layer)
        setting = setting_label(u)
        for metric, value in _with_direction_means(rec.metrics).items():
            rows.append((u.model, u.task, u.lang, u.split, setting, layer, int(u.seed), metric, float(value)))
    frame = pd.DataFrame(rows, columns=[*UNIT_COLUMNS, "metric", "value"])
    if frame.empty and records:
        # Label-free test files (an official XTREME download) give records with no metrics: nothing to tabulate.
        raise UserError(f"the given runs hold {len(records)} record(s), all unscored (their labels are withheld): "
                        "score the submission of xeval run --export-predictions with xeval score --labels DIR")
    if frame.empty:
        raise UserError("no result records found in the given runs")
    return frame.drop_duplicates([*UNIT_COLUMNS, "metric"], keep="last").reset_index(drop=True)


def setting_label(unit) -> str:
    """The frame's ``setting``: the unit's setting, with ``probe`` for frozen-encoder units (``--mode probe``), so
    tables keep them in rows of their own and never average them with fine-tuning numbers."""
    if getattr(unit, "mode", "finetune") == "finetune":
        return unit.setting
    return unit.mode if unit.setting == "zero-shot" else f"{unit.setting}, {unit.mode}"


def seed_stats(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, sample standard deviation (ddof=1; NaN for one seed) and number of seeds per value. A value that is
    NaN in one seed makes the mean NaN (shown and gated as missing), never a mean over the other seeds alone."""
    grouped = frame.groupby(KEY_COLUMNS, sort=False)["value"]
    return grouped.agg(mean=lambda v: v.mean(skipna=False), std=lambda v: v.std(skipna=False),
                       n_seeds="size").reset_index()


def pick_split(frame: pd.DataFrame, split: str | None = None) -> pd.DataFrame:
    """Keep one split per (model, task, language): ``split`` if given, else the reported one
    (``xeval.results.layers.reported_split``: ``test`` where present, else a split other than the selection split --
    FLORES-200 reports ``devtest`` and selects on ``dev``, which sorts first --, else the only one). Per language
    because suites evaluate some languages on dev where no labelled test exists."""
    if split is not None:
        kept = frame[frame["split"] == split]
        if kept.empty:
            found = ", ".join(sorted(frame["split"].unique()))
            raise UserError(f"no records for split {split!r}; the runs have: {found}")
        return kept
    parts = []
    for _, group in frame.groupby(["model", "task", "lang"], sort=False):
        chosen = reported_split(group["split"].unique())
        parts.append(group[group["split"] == chosen])
    return pd.concat(parts, ignore_index=True)


def model_labels(keys: Iterable[str]) -> dict[str, str]:
    """Short row labels: the name before ``@`` unless two models share it, then the full key."""
    keys = list(dict.fromkeys(keys))
    names = [k.split("@", 1)[0] for k in keys]
    return {k: (n if names.count(n) == 1 else k) for k, n in zip(keys, names)}


def row_label(model: str, setting: str, labels: dict[str, str]) -> str:
    base = labels.get(model, model)
    return base if setting == "zero-shot" else f"{base} ({setting})"
