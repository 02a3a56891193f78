"""Draw ``Table``s as GitHub Markdown, as a LaTeX document (booktabs) that compiles as is, or as CSV.

Written by hand rather than with ``DataFrame.to_markdown``/``Styler.to_latex``: those need optional packages
(tabulate, jinja2), and neither merges F1 / EM cells, draws the paper's header band or bolds the best value per
column the way papers do (lower is better for AER and transfer gaps).
"""

from __future__ import annotations

import io
import math

import pandas as pd

from xeval.report.tables import Table


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


# ---------------------------------------------------------------- LaTeX

_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                   "±": r"$\pm$", "·": r"$\cdot$", "→": r"$\to$", "−": "-", "†": r"$^\dagger$"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text))


def _latex_header(text: str, stacked: bool) -> str:
    """``XQuAD F1 / EM`` as two centred lines (task over metric), as the XLM-E table prints it; a group header
    ("Structured Prediction") likewise, so it does not widen the columns below it."""
    head, _, rest = text.partition(" ")
    if not stacked or not rest:
        return latex_escape(text)
    return rf"\begin{{tabular}}[b]{{@{{}}c@{{}}}}{latex_escape(head)}\\ {latex_escape(rest)}\end{{tabular}}"


def latex_table(table: Table) -> str:
    display = _display_columns(table)
    names = _index_names(table)
    n_index = len(names)
    cells = _cells(table, lambda t: rf"\textbf{{{t}}}", lambda s: rf"{{\scriptsize${{}}\pm{{}}${s}}}", " / ",
                   r"$^\dagger$")
    numeric = "c" if table.stacked_headers else "r"  # centred under two-line headers, as the paper prints it
    spec = "l" * n_index + "".join("c" if len(cols) > 1 else numeric for _, cols in display)
    lines = [r"\begin{table}[ht]", r"\centering", rf"\caption{{{latex_escape(table.title)}}}"]
    # shrink to the text width only when wider than it (graphicx's \width is the natural width)
    lines.append(r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%")
    lines.append(rf"\begin{{tabular}}{{{spec}}}")
    lines.append(r"\toprule")
    if table.groups:
        band, rules, position = [""] * n_index, [], n_index + 1
        spans = {}
        for header, cols in table.groups:
            span = [i for i, (_, dcols) in enumerate(display) if set(dcols) & set(cols)]
            if span:
                spans[span[0]] = (header, len(span))
        i = 0
        while i < len(display):
            if i in spans:
                header, width = spans[i]
                band.append(rf"\multicolumn{{{width}}}{{c}}{{{_latex_header(header, table.stacked_headers)}}}")
                rules.append(rf"\cmidrule(lr){{{position + i}-{position + i + width - 1}}}")
                i += width
            else:
                band.append("")
                i += 1
        lines.append(" & ".join(band) + r" \\")
        lines.append(" ".join(rules))
    header = [latex_escape(n) for n in names] + [_latex_header(h, table.stacked_headers) for h, _ in display]
    lines.append(" & ".join(header) + r" \\")
    lines.append(r"\midrule")
    for idx, row in zip(_index_cells(table), cells):
        lines.append(" & ".join([latex_escape(x) for x in idx] + row) + r" \\")
    lines.append(r"\bottomrule")
    lines.append(r"\end{tabular}}")
    for note in table.notes:
        lines.append(rf"\par\smallskip{{\footnotesize {latex_escape(note)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def latex(tables: list[Table], standalone: bool = True) -> str:
    """A complete document (``pdflatex`` compiles it as is) or, with ``standalone=False``, the table floats
    only, for ``\\input`` into a paper that loads booktabs and graphicx."""
    body = "\n".join(latex_table(t) for t in tables)
    if not standalone:
        return body
    return "\n".join([
        r"\documentclass{article}",
        r"\usepackage{booktabs}",
        r"\usepackage{graphicx}",
        r"\begin{document}",
        body,
        r"\end{document}",
        "",
    ])


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


def render(tables: list[Table], fmt: str, heading: str | None = None, preamble: list[str] | None = None) -> str:
    if fmt == "md":
        return markdown(tables, heading=heading, preamble=preamble)
    if fmt == "latex":
        return latex(tables)
    if fmt == "csv":
        return csv(tables)
    raise ValueError(f"unknown format {fmt!r}")
