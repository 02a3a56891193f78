"""``report --format``: draw ``Table``s as GitHub Markdown (``markdown.py``), LaTeX (``latex.py``: booktabs floats,
or a document) or CSV (``csv_text.py``).

Written by hand rather than with ``DataFrame.to_markdown``/``Styler.to_latex``: those need optional packages
(tabulate, jinja2), and neither merges F1 / EM cells, draws the paper's header band or bolds the best value per
column the way papers do (lower is better for AER and transfer gaps).
"""

from __future__ import annotations

from xeval.report.formats import latex
from xeval.report.formats.csv_text import csv
from xeval.report.formats.markdown import markdown
from xeval.report.tables.base import Table


def render(tables: list[Table], fmt: str, heading: str | None = None, preamble: list[str] | None = None,
           standalone: bool = False, text_width: float | str | None = None, decimals: str = "align") -> str:
    """``fmt``: md | latex (the table floats for ``\\input`` into a paper, or with ``standalone`` a whole document;
    ``text_width``: column | page | pt; ``decimals``: align | siunitx | auto) | csv."""
    if fmt == "md":
        return markdown(tables, heading=heading, preamble=preamble)
    if fmt == "latex":
        return latex.latex(tables, standalone=standalone, text_width=text_width or latex.TEXT_WIDTH_PT,
                           decimals=decimals)
    if fmt == "csv":
        return csv(tables)
    raise ValueError(f"unknown format {fmt!r}")
