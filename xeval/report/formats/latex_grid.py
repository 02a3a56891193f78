"""A ``Table`` as LaTeX lays it out, and how it is fitted to the text width (``latex.py`` draws it).

- **Widths are estimated** from the text (Computer Modern's digit widths at ``\\small``; a little generous).
- **Fitting, never scaling** (``fit``): a table that fits stays as it is. Else the ± std may go on a line under each
  number, the table may be turned (a row per column of the original; a per-language table becomes a row per
  language), and what is still too wide is cut into pieces of columns, each repeating the row labels. Pieces are
  stacked in ONE float (``floats``): a 3-model x 7-task summary is one float at a column's width as at a page's;
  only a table longer than ``MAX_ROWS`` lines continues in further floats.
- **Empty columns are left out** (a task that never ran), and header bands with them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from xeval.report.formats.cells import display_columns, index_cells, index_names

TEXT_WIDTH_PT = 345.0  # LaTeX article's \textwidth at 10 pt
WIDTHS = {"column": 219.0, "page": 455.0}  # ACL's \columnwidth (7.7 cm) and \textwidth (16 cm, a table* float)
MAX_ROWS = 36  # lines of body per float: POS's 33 languages + avg on one page, PAN-X's 40 in two halves
_DIGIT, _BOLD_DIGIT, _SMALL_DIGIT = 4.7, 5.4, 4.2  # pt per digit at \small, bold \small, \footnotesize
_PLUS_MINUS = 12.0  # "${}\pm{}$" at \footnotesize with its medium spaces (beside a number)
_PLUS_MINUS_BELOW = 7.0  # "$\pm$" at \footnotesize, no spaces (on the line under a number)
_UPPER, _WIDE, _LOWER, _OTHER = 6.7, 8.5, 4.8, 3.5  # pt per character of a label or header at \small (CM, generous)
_TABCOLSEP = 6.0  # LaTeX's default, on each side of a column


@dataclass
class Cell:
    mean: float | None
    std: float | None = None
    bold: bool = False
    mark: str = ""  # the marks after it (†‡§¶: xeval.report.deviations)


@dataclass
class Column:
    """One displayed column: its header and one or two parts ("F1 / EM"), each a list of cells (one per row)."""

    header: str
    parts: list[list[Cell]]
    digits: list[int]

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
    return sum(_WIDE if ch in "MWmw" else _UPPER if ch.isupper() else _LOWER if ch.isalnum() else _OTHER
               for ch in text)


def present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _cell_points(cell: Cell, digits: int, std_below: bool = False) -> float:
    if not present(cell.mean):
        return 0.0
    text = f"{cell.mean:.{digits}f}"
    width = sum(2.5 if ch == "." else _BOLD_DIGIT if cell.bold else _DIGIT for ch in text.lstrip("-"))
    if text.startswith("-"):
        width += 7.0
    if present(cell.std):
        std = (_PLUS_MINUS_BELOW if std_below else _PLUS_MINUS) + len(f"{cell.std:.{digits}f}") * _SMALL_DIGIT
        width = max(width, std) if std_below else width + std
    return width + 4.5 * len(cell.mark)


# ------------------------------------------------------------------------------------------- from Table


def grid(table) -> Grid:
    """The ``Table`` as drawn: columns as the renderers merge them (F1 / EM; ``cells.display_columns`` leaves out a
    task that never ran, and its header band with it), bold and marks as in Markdown."""
    best = table.best_mask()
    shown = display_columns(table)
    columns = []
    for header, cols in shown:
        parts = []
        for col in cols:
            cells = []
            for row in table.mean.index:
                std = None if table.std is None else table.std.at[row, col]
                cells.append(Cell(table.mean.at[row, col], std, bool(best.at[row, col])))
            parts.append(cells)
        for j, row in enumerate(table.mean.index):  # a merged cell's marks once, after its last part
            parts[-1][j].mark = table.mark_of(row, cols)
        columns.append(Column(header, parts, [table.digits.get(col, 1) for col in cols]))
    groups = []
    for header, cols in table.groups:
        members = [i for i, (_, dcols) in enumerate(shown) if set(dcols) & set(cols)]
        if members:
            groups.append((header, members))
    return Grid(title=table.title, label=label_of(table.key), label_names=index_names(table),
                rows=index_cells(table), columns=columns, groups=groups, notes=list(table.notes),
                stacked=table.stacked_headers)


def transposed(table) -> Grid:
    """The table turned: a row per column of the original (a merged "F1 / EM" column as two rows), a column per row
    of the original, headed by its last label level under a band naming its first (a per-language table: a row per
    language and avg, a column per metric under a band per model). Empty rows (a task that never ran) left out."""
    best = table.best_mask()
    index = list(table.mean.index)
    outer = [ix[0] if isinstance(ix, tuple) else ix for ix in index]
    models = list(dict.fromkeys(outer))
    per_model = {m: [ix for ix, o in zip(index, outer) if o == m] for m in models}
    originals = [col for col in (c for _, cols in display_columns(table) for c in cols)
                 if table.mean[col].notna().any()]
    columns, groups = [], []
    for model in models:
        members = []
        for ix in per_model[model]:
            header = ix[-1] if isinstance(ix, tuple) and len(per_model[model]) > 1 else str(model)
            cells = []
            for col in originals:
                std = None if table.std is None else table.std.at[ix, col]
                cells.append(Cell(table.mean.at[ix, col], std, bool(best.at[ix, col]), table.mark_of(ix, [col])))
            members.append(len(columns))
            columns.append(Column(str(header), [cells], [table.digits.get(originals[0], 1) if originals else 1]))
        if len(per_model[model]) > 1:
            groups.append((str(model), members))
    names = ["language"] if table.key.startswith("languages:") else [""]
    # model names as headers: two lines ("XLM-R" over "base"), as the summary's task headers
    return Grid(title=table.title, label=label_of(table.key), label_names=names, rows=[[str(c)] for c in originals],
                columns=columns, groups=groups, notes=list(table.notes), stacked=not table.key.startswith("languages:"))


def label_of(key: str) -> str:
    import re

    return "tab:" + re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-").lower()


def fit(table, text_width: float = TEXT_WIDTH_PT) -> Grid:
    """The layout to draw at ``text_width``: as it is where it fits; else the one of the table as it is, with the ±
    under the numbers, turned, and turned with the ± under, that takes the fewest floats, then the fewest pieces --
    the table's own orientation kept while it needs at most two pieces (a paper's summary has a row per model). A
    per-language table is turned whenever it is too wide and turned is narrower (a row per language)."""
    drawn = grid(table)
    if _points(drawn, range(len(drawn.columns))) <= text_width:
        return drawn  # what fits as it is stays as it is
    languages = table.key.startswith("languages:")
    turned = transposed(table) if len(table.mean.index) else None
    if languages and turned is not None:
        if _points(turned, range(len(turned.columns))) < _points(drawn, range(len(drawn.columns))):
            drawn = turned
        turned = None

    def best(g: Grid) -> tuple[tuple[int, int, bool], Grid]:
        layouts = [g]
        if any(present(c.std) for column in g.columns for part in column.parts for c in part):
            below = copy.copy(g)
            below.std_below = True
            layouts.append(below)
        scored = [((len(floats(x, text_width)), len(column_chunks(x, text_width)), x.std_below), x) for x in layouts]
        return min(scored, key=lambda pair: pair[0])

    (floats_o, pieces_o, _), kept = best(drawn)
    if turned is None:
        return kept
    (floats_t, pieces_t, _), other = best(turned)
    if floats_t < floats_o or (floats_t == floats_o and pieces_o > 2 and pieces_t < pieces_o):
        return other
    return kept


def floats(g: Grid, text_width: float = TEXT_WIDTH_PT) -> list[list[tuple[list[int], list[int]]]]:
    """The floats of a layout, each a list of pieces (column indices, row indices) drawn one under the other:
    every group of columns (``column_chunks``) with every block of at most ``MAX_ROWS`` lines of rows, and pieces
    packed into one float while their lines together stay within ``MAX_ROWS``."""
    n_blocks = max(1, math.ceil(len(g.rows) * g.lines_per_row() / MAX_ROWS))
    size = max(1, math.ceil(len(g.rows) / n_blocks))
    row_blocks = [list(range(i, min(i + size, len(g.rows)))) for i in range(0, len(g.rows), size)] or [[]]
    out: list[list[tuple[list[int], list[int]]]] = []
    used = 0
    for columns in column_chunks(g, text_width):
        for rows in row_blocks:
            lines = max(1, len(rows) * g.lines_per_row())
            if not out or used + lines > MAX_ROWS:
                out.append([])
                used = 0
            out[-1].append((columns, rows))
            used += lines
    return out


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
