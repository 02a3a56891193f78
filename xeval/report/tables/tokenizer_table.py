"""``report --table tokenizer`` and ``--plot tokenizer``: the tokenizer diagnostics (``xeval run --tasks
tokenizer``, see ``xeval/adapters/probes/tokenization.py``) per language, beside each task's per-language transfer gap.

A control (``--control random-init``) shares its model's tokenizer, so only models' rows are shown.
"""

from __future__ import annotations

import pandas as pd

from xeval.base.errors import UserError
from xeval.data.typology import base_language
from xeval.report.tables.base import Table, language_gaps, order_languages, task_title

METRICS = {"fertility": "subwords / word", "tokens_per_char": "subwords / char", "unk_rate": "unk %",
           "byte_fallback_rate": "byte-fallback %", "shared_types_with_en": "types shared with en %"}
TASK = "tokenizer"


def tokenizer_frame(results) -> pd.DataFrame:
    """row, lang, and one column per diagnostic (seed means; models only)."""
    stats = results.stats[(results.stats["task"] == TASK) & ~results.stats["model"].isin(list(results.controls))]
    if stats.empty:
        raise UserError("no tokenizer diagnostics in the given runs (run: xeval run --suite probes --tasks tokenizer)")
    frame = stats.assign(row=[results.row(m, s) for m, s in zip(stats["model"], stats["setting"])])
    return frame.pivot_table(index=["row", "lang"], columns="metric", values="mean", sort=False).reset_index()


def tokenizer_table(results) -> Table:
    frame = tokenizer_frame(results)
    gaps = language_gaps(results)
    gaps = gaps.assign(lang=gaps["lang"].map(base_language))
    gaps = gaps.groupby(["row", "task", "lang"], sort=False)["gap"].mean().reset_index()
    index, rows, gap_columns = [], [], list(dict.fromkeys(gaps["task"]))
    for row, group in frame.groupby("row", sort=False):
        by_lang = group.set_index("lang")
        for lang in order_languages(by_lang.index):
            values = [by_lang.at[lang, m] if m in by_lang.columns else float("nan") for m in METRICS]
            for task in gap_columns:
                hit = gaps[(gaps["row"] == row) & (gaps["task"] == task) & (gaps["lang"] == base_language(lang))]
                values.append(float(hit["gap"].iloc[0]) if len(hit) else float("nan"))
            index.append((row, lang))
            rows.append(values)
    columns = list(METRICS.values()) + [f"{task_title(t)} gap" for t in gap_columns]
    mean = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["model", "lang"]), columns=columns)
    notes = ["FLORES-200 devtest; subwords / word counts whitespace words (not comparable for zh, ja, th: read "
             "subwords / char); special tokens left out",
             "types shared with en %: of the subword types a language uses, the share English's sentences use too"]
    if gap_columns:
        notes.append("gap = English minus the language on that task (points; headline metric)")
    return Table(key="tokenizer", title="Tokenizer diagnostics", mean=mean, no_bold=set(columns),
                 digits={"subwords / word": 2, "subwords / char": 2}, notes=notes)


def fertility_points(results) -> pd.DataFrame:
    """row, task, lang, fertility, tokens_per_char, gap: one point per (model, task, non-English language)."""
    frame = tokenizer_frame(results)
    gaps = language_gaps(results)
    if gaps.empty:
        raise UserError("no task with English and another language: no transfer gap to plot against fertility")
    gaps = gaps.assign(lang=gaps["lang"].map(base_language))
    return gaps.merge(frame, on=["row", "lang"])
