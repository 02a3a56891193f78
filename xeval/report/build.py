"""``report --table NAME``: the table modules by name, imported when asked for (a registry in the style of
lm-evaluation-harness), so ``--table summary`` never loads scipy for the correlation table.

Every entry is ``module:function``; the function takes ``Results`` and returns a ``Table`` or a list of them.
"""

from __future__ import annotations

from importlib import import_module

from xeval.base.errors import UserError
from xeval.report.tables.base import Results, Table

TABLES = {
    "languages": "xeval.report.tables.language_table:language_tables",
    "summary": "xeval.report.tables.summary_table:summary_table",
    "gap": "xeval.report.tables.gap_table:gap_table",
    "layers": "xeval.report.tables.layer_table:layer_tables",
    "ci": "xeval.report.tables.uncertainty:ci_tables",
    "correlation": "xeval.report.tables.correlation:correlation_table",
    "typology": "xeval.report.tables.typology_table:typology_tables",
    "tokenizer": "xeval.report.tables.tokenizer_table:tokenizer_table",
    "neutrality": "xeval.report.tables.neutrality_table:neutrality_table",
}
# the order of ``--table all``
ALL = ("summary", "gap", "layers", "languages", "ci", "correlation", "typology", "tokenizer", "neutrality")


def table_function(which: str):
    """The function that builds the table(s) named ``which`` (its module imported now)."""
    module, _, name = TABLES[which].partition(":")
    return getattr(import_module(module), name)


def build(results: Results, which: str) -> list[Table]:
    """The tables for ``--table``: languages | summary | gap | layers | ci | correlation | typology | tokenizer |
    neutrality | all (those the runs can fill)."""
    if which == "all":
        out = []
        for kind in ALL:
            try:
                out += build(results, kind)
            except UserError:
                continue  # a table the runs cannot fill is left out of the full report
        return out
    if which not in TABLES:
        raise UserError(f"unknown table {which!r}; expected {', '.join(TABLES)} or all")
    built = table_function(which)(results)
    return built if isinstance(built, list) else [built]
