"""``report --table typology``: the transfer gap grouped by language family, script and word order.

A language's gap is the English score minus that language's score (headline metric per task, seed means; the
task's transfer gap is the mean of these over its non-English languages). Per model, a row per (attribute, value):
the mean gap of the languages with that value and how many languages it averages, per task. Facts from
``xeval/data/typology.tsv`` (Glottolog, ISO 15924, WALS 81A); languages it lacks are listed in a note.
"""

from __future__ import annotations

import pandas as pd

from xeval.base.errors import UserError
from xeval.data.typology import ATTRIBUTE_TITLES, ATTRIBUTES, base_language, typology
from xeval.report.tables.base import Table, language_gaps, task_title


def typology_tables(results) -> list[Table]:
    gaps = language_gaps(results)
    if gaps.empty:
        raise UserError("no task with English and another language: no transfer gap to group by typology")
    facts = typology()
    gaps["base"] = gaps["lang"].map(base_language)
    unknown = sorted(set(gaps.loc[~gaps["base"].isin(facts.index), "lang"]))
    gaps = gaps[gaps["base"].isin(facts.index)]
    tables = []
    for row, group in gaps.groupby("row", sort=False):
        tasks = list(dict.fromkeys(group["task"]))
        blocks = []
        for name in ATTRIBUTES:
            values = group.assign(value=group["base"].map(facts[name]))
            mean = values.pivot_table(index="value", columns="task", values="gap", aggfunc="mean")
            count = values.pivot_table(index="value", columns="task", values="gap", aggfunc="count")
            block = pd.DataFrame(index=mean.index)
            for task in tasks:
                block[task_title(task)] = mean.get(task)
                block[f"n {task}"] = count.get(task)
            block.index = pd.MultiIndex.from_tuples([(ATTRIBUTE_TITLES[name], v) for v in block.index],
                                                    names=["attribute", "value"])
            blocks.append(block)
        mean = pd.concat(blocks)
        counts = [c for c in mean.columns if str(c).startswith("n ")]
        notes = ["gap = English minus the language (points, headline metric per task; lower is better); "
                 "n = languages averaged",
                 "family: Glottolog 5.0; script: ISO 15924; word order: WALS 81A (Dryer 2013), ND = no dominant "
                 "order (xeval/data/typology.tsv)"]
        if unknown:
            notes.append("not in xeval's typology table (left out): " + ", ".join(unknown))
        tables.append(Table(key=f"typology:{row}", title=f"Transfer gap by typology: {row}", mean=mean,
                            lower_columns=set(mean.columns) - set(counts), no_bold=set(mean.columns),
                            digits={c: 0 for c in counts}, notes=notes))
    return tables
