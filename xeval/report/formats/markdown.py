"""Draw ``Table``s as GitHub Markdown, as LaTeX (``xeval.report.formats.latex``: booktabs floats, or a document), or as CSV.

Written by hand rather than with ``DataFrame.to_markdown``/``Styler.to_latex``: those need optional packages
(tabulate, jinja2), and neither merges F1 / EM cells, draws the paper's header band or bolds the best value per
column the way papers do (lower is better for AER and transfer gaps).
"""

from __future__ import annotations

import io
import math

import pandas as pd

from xeval.report.tables.base import Table


def _is_empty(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value, digits: int) -> str:
    return "" if _is_empty(value) else f"{value:.{digits}f}"


def _display_columns(table: Table) -> list[tuple[str, list]]:
    """(header, underlying columns): a pair of columns becomes one "a / b" column."""
    paired = {a: (a, b, h) for a, b, h in table.pairs}
    skip = {b for _, b, _ in table.pairs}
    out = []
    for col in table.mean.columns:
        if col in skip:
            continue
        if col in paired:
            a, b, header = paired[col]
            out.append((header, [a, b]))
        else:
            out.append((str(col), [col]))
    return out


def _cells(table: Table, bold, spread, join: str, mark: str = "") -> list[list[str]]:
    """Formatted body cells; ``bold(text)`` wraps a best value, ``spread(text)`` draws a std after the mean,
    ``mark`` follows a cell ``table.marked`` flags (once per merged "a / b" cell)."""
    best = table.best_mask()
    rows = []
    for row in table.mean.index:
        cells = []
        for _, cols in _display_columns(table):
            parts = []
            for col in cols:
                digits = table.digits.get(col, 1)
                text = _number(table.mean.at[row, col], digits)
                if text and best.at[row, col]:
                    text = bold(text)
                std = None if table.std is None else table.std.at[row, col]
                if text and not _is_empty(std):
                    text += spread(_number(std, digits))
                parts.append(text)
            text = join.join(parts) if any(parts) else ""
            if text and table.marked is not None and any(table.marked.at[row, col] for col in cols):
                text += mark
            cells.append(text)
        rows.append(cells)
    return rows


def _index_cells(table: Table) -> list[list[str]]:
    """Row labels, one cell per index level; a repeated outer label is left blank (as papers print them)."""
    out, previous = [], None
    for row in table.mean.index:
        labels = [str(x) for x in (row if isinstance(row, tuple) else (row,))]
        shown = list(labels)
        if previous is not None and len(labels) > 1 and labels[0] == previous[0]:
            shown[0] = ""
        out.append(shown)
        previous = labels
    return out


def _index_names(table: Table) -> list[str]:
    return [str(n or "") for n in table.mean.index.names]


# ---------------------------------------------------------------- Markdown


_MD_SPECIALS = {"\\": "\\\\", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "[": "\\[", "]": "\\]",
                "`": "\\`"}


def md_escape(text: str) -> str:
    """Text (model names, languages, notes) as literal Markdown: no table-breaking '|', no raw HTML, no links."""
    return "".join(_MD_SPECIALS.get(ch, ch) for ch in str(text))



def markdown_table(table: Table, level: int = 3) -> str:
    headers = _index_names(table) + [h for h, _ in _display_columns(table)]
    n_index = len(_index_names(table))
    body = [idx + cells for idx, cells in
            zip(_index_cells(table), _cells(table, lambda t: f"**{t}**", lambda s: f" ± {s}", " / ", "†"))]
    lines = [f"{'#' * level} {md_escape(table.title)}", ""]
    lines.append("| " + " | ".join(md_escape(h) for h in headers) + " |")
    lines.append("|" + "|".join([":---"] * n_index + ["---:"] * (len(headers) - n_index)) + "|")
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in body]
    if table.notes:
        lines.append("")
        lines += [f"<sub>{md_escape(note)}</sub><br>" for note in table.notes[:-1]]
        lines.append(f"<sub>{md_escape(table.notes[-1])}</sub>")
    return "\n".join(lines) + "\n"


def markdown(tables: list[Table], heading: str | None = None, preamble: list[str] | None = None) -> str:
    parts = []
    if heading:
        parts.append(f"# {heading}\n" + ("\n" + "\n".join(preamble) + "\n" if preamble else ""))
    parts += [markdown_table(t, level=2 if heading else 3) for t in tables]
    return "\n".join(parts)


# ---------------------------------------------------------------- LaTeX (xeval/report/formats/latex.py)


def latex_escape(text: str) -> str:
    from xeval.report.formats.latex import escape

    return escape(text)


def latex(tables: list[Table], standalone: bool = False, text_width: float | None = None) -> str:
    """The table floats for ``\\input`` into a paper (booktabs), or with ``standalone`` a whole document."""
    from xeval.report.formats.latex import TEXT_WIDTH_PT
    from xeval.report.formats.latex import latex as draw

    return draw(tables, standalone=standalone, text_width=text_width or TEXT_WIDTH_PT)


# ---------------------------------------------------------------- CSV


def csv(tables: list[Table]) -> str:
    """One table: the wide frame (``<column> std`` beside columns that have one). Several: one tidy frame
    (table, row labels, column, mean, std), empty cells kept as empty values."""
    buffer = io.StringIO()
    if len(tables) == 1:
        table = tables[0]
        frame = table.mean.copy()
        if table.std is not None:
            for col in table.mean.columns:
                if table.std[col].notna().any():
                    frame.insert(frame.columns.get_loc(col) + 1, f"{col} std", table.std[col])
        if table.marked is not None:  # "<column> partial": True where the renderers draw a dagger
            for col in table.mean.columns:
                if table.marked[col].any():
                    frame.insert(frame.columns.get_loc(col) + 1, f"{col} partial", table.marked[col])
        frame.to_csv(buffer, float_format="%.4f")
        return buffer.getvalue()
    parts = []
    for table in tables:
        mean = table.mean.reset_index().melt(id_vars=_index_names(table), var_name="column", value_name="mean")
        if table.std is not None:
            std = table.std.reset_index().melt(id_vars=_index_names(table), var_name="column", value_name="std")
            mean["std"] = std["std"].to_numpy()
        if table.marked is not None:
            marked = table.marked.reset_index().melt(id_vars=_index_names(table), var_name="column",
                                                     value_name="partial")
            mean["partial"] = marked["partial"].to_numpy()
        mean.insert(0, "table", table.key)
        parts.append(mean)
    pd.concat(parts, ignore_index=True).to_csv(buffer, index=False, float_format="%.4f")
    return buffer.getvalue()


def render(tables: list[Table], fmt: str, heading: str | None = None, preamble: list[str] | None = None,
           standalone: bool = False, text_width: float | None = None) -> str:
    if fmt == "md":
        return markdown(tables, heading=heading, preamble=preamble)
    if fmt == "latex":
        return latex(tables, standalone=standalone, text_width=text_width)
    if fmt == "csv":
        return csv(tables)
    raise ValueError(f"unknown format {fmt!r}")
