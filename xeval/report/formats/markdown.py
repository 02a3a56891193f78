"""Draw ``Table``s as GitHub Markdown: the best value per column bold, ± std over seeds, F1 / EM in one cell,
marks (†‡§¶) on cells that depart from XTREME's protocol, the notes in small print below."""

from __future__ import annotations

import math

from xeval.report.formats.cells import display_columns, index_cells, index_names
from xeval.report.tables.base import Table


def _is_empty(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value, digits: int) -> str:
    return "" if _is_empty(value) else f"{value:.{digits}f}"


def _cells(table: Table, bold, spread, join: str, mark: bool = True) -> list[list[str]]:
    """Formatted body cells; ``bold(text)`` wraps a best value, ``spread(text)`` draws a std after the mean,
    ``mark``: a cell's marks (``table.marks``) follow it, once per merged "a / b" cell."""
    best = table.best_mask()
    rows = []
    for row in table.mean.index:
        cells = []
        for _, cols in display_columns(table):
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
            if text and mark:
                text += table.mark_of(row, cols)
            cells.append(text)
        rows.append(cells)
    return rows


_MD_SPECIALS = {"\\": "\\\\", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "[": "\\[", "]": "\\]",
                "`": "\\`"}


def md_escape(text: str) -> str:
    """Text (model names, languages, notes) as literal Markdown: no table-breaking '|', no raw HTML, no links."""
    return "".join(_MD_SPECIALS.get(ch, ch) for ch in str(text))


def markdown_table(table: Table, level: int = 3) -> str:
    headers = index_names(table) + [h for h, _ in display_columns(table)]
    n_index = len(index_names(table))
    body = [idx + cells for idx, cells in
            zip(index_cells(table), _cells(table, lambda t: f"**{t}**", lambda s: f" ± {s}", " / "))]
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
