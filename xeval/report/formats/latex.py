"""LaTeX tables that a paper can ``\\input`` as they are: booktabs, a ``\\label`` per table, numbers aligned on the
decimal point, real minus signs, ± over seeds, and no text below 8 pt at the text width.

- **No scaling.** A table is never shrunk to fit (``\\resizebox`` set a 33-language table at ~2 pt). The body is
  ``\\small`` (9 pt in a 10 pt paper), the ± std and the notes ``\\footnotesize`` (8 pt), the floor.
- **Fitting instead.** The width of every column is estimated from its text (Computer Modern's digit widths; a
  little generous). A per-language table wider than the text width is *transposed* (a row per language, a column
  per model and metric); a table still too wide is *split* into several tabulars, each repeating the row labels;
  a table longer than ``MAX_ROWS`` rows continues in a second float.
- **Decimal alignment** without extra packages: each number column is a pair of columns ``r@{.}l`` (integer part,
  fraction part plus the ± and the dagger), so points line up whatever follows them (the effect of siunitx's S
  columns, which texlive-latex-recommended does not ship).
- **A fragment by default** (the floats only; the paper loads booktabs); ``standalone=True`` (``--standalone``)
  wraps it in a document that pdflatex compiles as is.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field

from xeval.report.formats.cells import display_columns, index_cells, index_names

TEXT_WIDTH_PT = 345.0  # LaTeX article's \textwidth at 10 pt; ACL's is 455 pt, so what fits here fits there
MAX_ROWS = 36  # body rows per float: POS's 33 languages + avg on one page, PAN-X's 40 in two halves
_DIGIT, _BOLD_DIGIT, _SMALL_DIGIT = 4.7, 5.4, 4.2  # pt per digit at \small, bold \small, \footnotesize
_PLUS_MINUS = 12.0  # "${}\pm{}$" at \footnotesize with its medium spaces
_UPPER, _LOWER, _OTHER = 7.0, 4.8, 3.5  # pt per character of a label or header at \small (CM, generous)
_TABCOLSEP = 6.0  # LaTeX's default, on each side of a column

_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
             "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
             "±": r"$\pm$", "·": r"$\cdot$", "→": r"$\to$", "−": r"$-$", "†": r"\dag{}", "★": r"$\star$"}


def escape(text: str) -> str:
    """Plain text to LaTeX: specials escaped, "−" a real minus, and "--" kept as two hyphens (not an en dash)."""
    out = "".join(_SPECIALS.get(ch, ch) for ch in str(text))
    while "--" in out:
        out = out.replace("--", "-{}-")
    return out


@dataclass
class Cell:
    mean: float | None
    std: float | None = None
    bold: bool = False
    mark: bool = False  # a dagger after it


@dataclass
class Column:
    """One displayed column: its header and one or two parts ("F1 / EM"), each a list of cells (one per row)."""

    header: str
    parts: list[list[Cell]]
    digits: list[int]

    def spec(self) -> str:
        return r"@{\,/\,}".join("r@{.}l" if d > 0 else "r" for d in self.digits)

    @property
    def width(self) -> int:
        """Number of tabular columns."""
        return sum(2 if d > 0 else 1 for d in self.digits)

    def points(self, stacked: bool, std_below: bool = False) -> float:
        """Estimated width in pt, the header's or the widest cell's, plus the column separation."""
        lines = self.header.split(" ", 1) if stacked else [self.header]
        header = max(_text_points(x) for x in lines)
        body = 0.0
        for row in range(len(self.parts[0])):
            width = 0.0
            for cells, digits in zip(self.parts, self.digits):
                width += _cell_points(cells[row], digits, std_below)
            body = max(body, width + 5.5 * (len(self.parts) - 1))  # the " / " between two parts
        return max(header, body) + 2 * _TABCOLSEP


@dataclass
class Grid:
    """A table as LaTeX draws it: row labels (one list per row, one string per level), columns, header bands."""

    title: str
    label: str
    label_names: list[str]
    rows: list[list[str]]
    columns: list[Column]
    groups: list[tuple[str, list[int]]] = field(default_factory=list)  # (header, column indices)
    notes: list[str] = field(default_factory=list)
    stacked: bool = False
    std_below: bool = False  # the ± std on a line of its own under each row (a table that is too wide otherwise)

    def lines_per_row(self) -> int:
        return 2 if self.std_below else 1


def _text_points(text: str) -> float:
    return sum(_UPPER if ch.isupper() or ch in "MW" else _LOWER if ch.isalnum() else _OTHER for ch in text)


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _cell_points(cell: Cell, digits: int, std_below: bool = False) -> float:
    if not _present(cell.mean):
        return 0.0
    text = f"{cell.mean:.{digits}f}"
    width = sum(2.5 if ch == "." else _BOLD_DIGIT if cell.bold else _DIGIT for ch in text.lstrip("-"))
    if text.startswith("-"):
        width += 7.0
    if _present(cell.std):
        std = _PLUS_MINUS + len(f"{cell.std:.{digits}f}") * _SMALL_DIGIT
        width = max(width, std) if std_below else width + std
    if cell.mark:
        width += 4.5
    return width


def _number(cell: Cell, digits: int, std_below: bool = False) -> list[str]:
    """The tabular cells of one number: [integer part, fraction part + extras] (one cell when ``digits`` is 0)."""
    if not _present(cell.mean):
        return [r"\multicolumn{2}{c}{}"] if digits > 0 else [""]
    text = f"{cell.mean:.{digits}f}"
    negative = text.startswith("-") and float(text) != 0.0
    whole, _, fraction = text.lstrip("-").partition(".")
    if cell.bold:
        whole, fraction = rf"\textbf{{{whole}}}", (rf"\textbf{{{fraction}}}" if fraction else "")
    whole = ("$-$" if negative else "") + whole
    extra = ""
    if _present(cell.std) and not std_below:
        extra += rf"{{\footnotesize${{}}\pm{{}}${cell.std:.{digits}f}}}"
    if cell.mark:
        extra += r"\dag{}"
    return [whole, fraction + extra] if digits > 0 else [whole + extra]


def _std_line(cell: Cell, digits: int) -> str:
    """The ± of a number on the line under it, centred across its integer and fraction columns."""
    span = 2 if digits > 0 else 1
    if not (_present(cell.mean) and _present(cell.std)):
        return rf"\multicolumn{{{span}}}{{c}}{{}}"
    return rf"\multicolumn{{{span}}}{{c}}{{\footnotesize$\pm${cell.std:.{digits}f}}}"


def _header(text: str, stacked: bool) -> str:
    head, _, rest = text.partition(" ")
    if not stacked or not rest:
        return escape(text)
    return rf"\begin{{tabular}}[b]{{@{{}}c@{{}}}}{escape(head)}\\ {escape(rest)}\end{{tabular}}"


# ------------------------------------------------------------------------------------------- from Table


def grid(table) -> Grid:
    """The ``Table`` as drawn: columns as the renderers merge them (F1 / EM), bold and daggers as in Markdown."""
    best = table.best_mask()
    columns = []
    for header, cols in display_columns(table):
        parts = []
        for col in cols:
            cells = []
            for row in table.mean.index:
                std = None if table.std is None else table.std.at[row, col]
                cells.append(Cell(table.mean.at[row, col], std, bool(best.at[row, col])))
            parts.append(cells)
        if table.marked is not None:  # one dagger per merged cell, after its last part
            for i, row in enumerate(table.mean.index):
                parts[-1][i].mark = any(bool(table.marked.at[row, col]) for col in cols)
        columns.append(Column(header, parts, [table.digits.get(col, 1) for col in cols]))
    groups = []
    for header, cols in table.groups:
        members = [i for i, (_, dcols) in enumerate(display_columns(table)) if set(dcols) & set(cols)]
        if members:
            groups.append((header, members))
    return Grid(title=table.title, label=_label(table.key), label_names=index_names(table),
                rows=index_cells(table), columns=columns, groups=groups, notes=list(table.notes),
                stacked=table.stacked_headers)


def transposed(table) -> Grid:
    """A per-language table turned: a row per language (and avg), a column per (model, metric) of the original,
    headed by the metric under a band naming the model (only the model when it has one metric)."""
    best = table.best_mask()
    index = list(table.mean.index)
    models = list(dict.fromkeys(ix[0] if isinstance(ix, tuple) else ix for ix in index))
    per_model = {m: [ix for ix in index if (ix[0] if isinstance(ix, tuple) else ix) == m] for m in models}
    langs = [cols[0] for _, cols in display_columns(table)]
    columns, groups = [], []
    for model in models:
        members = []
        for ix in per_model[model]:
            metric = ix[1] if isinstance(ix, tuple) and len(per_model[model]) > 1 else (
                ix[0] if not isinstance(ix, tuple) else model)
            cells = []
            for lang in langs:
                std = None if table.std is None else table.std.at[ix, lang]
                cells.append(Cell(table.mean.at[ix, lang], std, bool(best.at[ix, lang])))
            members.append(len(columns))
            columns.append(Column(str(metric), [cells], [table.digits.get(lang, 1) for lang in langs[:1]]))
        if len(per_model[model]) > 1:
            groups.append((str(model), members))
    return Grid(title=table.title, label=_label(table.key), label_names=["language"], rows=[[x] for x in langs],
                columns=columns, groups=groups, notes=list(table.notes))


def _label(key: str) -> str:
    return "tab:" + re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-").lower()


def fit(table, text_width: float = TEXT_WIDTH_PT) -> Grid:
    """The grid to draw: a per-language table transposed when it is wider than the text width (and the turned one
    is narrower), any other as it is."""
    drawn = grid(table)
    if table.key.startswith("languages:") and _points(drawn, range(len(drawn.columns))) > text_width:
        turned = transposed(table)
        if _points(turned, range(len(turned.columns))) < _points(drawn, range(len(drawn.columns))):
            drawn = turned
    if any(_present(c.std) for column in drawn.columns for part in column.parts for c in part):
        below = copy.copy(drawn)
        below.std_below = True
        if len(column_chunks(below, text_width)) < len(column_chunks(drawn, text_width)):
            return below  # fewer pieces with the ± under the numbers than beside them
    return drawn


def _label_points(g: Grid) -> float:
    widths = [max(_text_points(x) for x in [*(r[i] for r in g.rows), g.label_names[i]])
              for i in range(len(g.label_names))]
    return sum(w + 2 * _TABCOLSEP for w in widths)


def _points(g: Grid, columns) -> float:
    return _label_points(g) + sum(g.columns[i].points(g.stacked, g.std_below) for i in columns)


def column_chunks(g: Grid, text_width: float = TEXT_WIDTH_PT) -> list[list[int]]:
    """Column indices per tabular, so that each fits the text width: header bands kept whole where they fit,
    columns added left to right."""
    units: list[list[int]] = []  # groups (band members) or single columns, in column order
    grouped = {i: members for _, members in g.groups for i in members}
    for i in range(len(g.columns)):
        if i in grouped:
            if grouped[i][0] == i:
                units.append(list(grouped[i]))
        else:
            units.append([i])
    chunks: list[list[int]] = [[]]
    room = text_width - _label_points(g)
    used = 0.0
    for unit in units:
        widths = {i: g.columns[i].points(g.stacked, g.std_below) for i in unit}
        for piece in ([unit] if sum(widths.values()) <= room else [[i] for i in unit]):
            width = sum(widths[i] for i in piece)
            if chunks[-1] and used + width > room:
                chunks.append([])
                used = 0.0
            chunks[-1].extend(piece)
            used += width
    return chunks


# ----------------------------------------------------------------------------------------------- drawing


def _tabular(g: Grid, columns: list[int], rows: list[int]) -> list[str]:
    n_labels = len(g.label_names)
    spec = "l" * n_labels + "".join(g.columns[i].spec() for i in columns)
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    start = {}
    position = n_labels + 1
    for i in columns:
        start[i] = position
        position += g.columns[i].width
    bands = [(header, [i for i in members if i in columns]) for header, members in g.groups]
    bands = [(header, members) for header, members in bands if members]
    if bands:
        band, rules, i = [""] * n_labels, [], 0
        first = {members[0]: (header, members) for header, members in bands}
        while i < len(columns):
            col = columns[i]
            if col in first:
                header, members = first[col]
                span = sum(g.columns[m].width for m in members)
                band.append(rf"\multicolumn{{{span}}}{{c}}{{{_header(header, g.stacked)}}}")
                rules.append(rf"\cmidrule(lr){{{start[col]}-{start[col] + span - 1}}}")
                i += len(members)
            else:
                band.append(rf"\multicolumn{{{g.columns[col].width}}}{{c}}{{}}")
                i += 1
        lines += [" & ".join(band) + r" \\", " ".join(rules)]
    header = [escape(n) for n in g.label_names]
    header += [rf"\multicolumn{{{g.columns[i].width}}}{{c}}{{{_header(g.columns[i].header, g.stacked)}}}"
               for i in columns]
    lines += [" & ".join(header) + r" \\", r"\midrule"]
    for r in rows:
        cells = [escape(x) for x in g.rows[r]]
        for i in columns:
            column = g.columns[i]
            for cells_of_part, digits in zip(column.parts, column.digits):
                cells += _number(cells_of_part[r], digits, g.std_below)
        lines.append(" & ".join(cells) + r" \\")
        if g.std_below and any(_present(g.columns[i].parts[p][r].std) for i in columns
                               for p in range(len(g.columns[i].parts))):
            below = [""] * len(g.label_names)
            for i in columns:
                column = g.columns[i]
                below += [_std_line(part[r], digits) for part, digits in zip(column.parts, column.digits)]
            lines.append(" & ".join(below) + r" \\[1pt]")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def latex_table(table, text_width: float = TEXT_WIDTH_PT) -> str:
    """One table as one float, fitted to ``text_width`` pt; a table too wide continues in further floats (a group
    of columns each, the row labels repeated), one too long likewise (rows split evenly, at most ``MAX_ROWS``)."""
    g = fit(table, text_width)
    chunks = column_chunks(g, text_width)
    n_blocks = max(1, math.ceil(len(g.rows) * g.lines_per_row() / MAX_ROWS))
    size = max(1, math.ceil(len(g.rows) / n_blocks))
    row_blocks = [list(range(i, min(i + size, len(g.rows)))) for i in range(0, len(g.rows), size)] or [[]]
    pieces = [(columns, rows) for columns in chunks for rows in row_blocks]
    floats = []
    for k, (columns, rows) in enumerate(pieces):
        title = escape(g.title) + (" (continued)" if k else "")
        lines = [r"\begin{table}[tbp]", r"\centering", r"\small", rf"\caption{{{title}}}"]
        if k == 0:
            lines.append(rf"\label{{{g.label}}}")
        lines += _tabular(g, columns, rows)
        if k == len(pieces) - 1:
            for note in g.notes:
                lines.append(rf"\par\smallskip{{\footnotesize {escape(note)}\par}}")
        lines.append(r"\end{table}")
        floats.append("\n".join(lines))
    return "\n".join(floats) + "\n"


def latex(tables, standalone: bool = False, text_width: float = TEXT_WIDTH_PT) -> str:
    """The tables' floats, for ``\\input`` into a paper that loads booktabs; ``standalone``: a whole document."""
    if not standalone:
        body = "\n".join(latex_table(t, text_width) for t in tables)
        return (f"% xeval report: \\input this file into a document that loads booktabs (tables fitted to a "
                f"{text_width:g} pt text width)\n" + body)
    width = []
    if text_width != TEXT_WIDTH_PT:  # the page the tables were fitted to, centred
        width = [rf"\setlength{{\textwidth}}{{{text_width:g}pt}}",
                 r"\setlength{\oddsidemargin}{\dimexpr(\paperwidth-\textwidth)/2-1in\relax}",
                 r"\setlength{\evensidemargin}{\oddsidemargin}"]
    # a page break after each table's floats: LaTeX holds at most 18 floats it has not placed yet
    body = "\\clearpage\n".join(latex_table(t, text_width) for t in tables)
    return "\n".join([r"\documentclass{article}", r"\usepackage{booktabs}", *width, r"\begin{document}", body,
                      r"\end{document}", ""])
