"""LaTeX tables that a paper can ``\\input`` as they are: booktabs, a ``\\label`` per table, numbers aligned on the
decimal point, real minus signs, ± over seeds, marks (†‡§¶) where a cell departs from XTREME's protocol, and no
text below 8 pt at the text width.

- **No scaling.** A table is never shrunk to fit (``\\resizebox`` set a 33-language table at ~2 pt). The body is
  ``\\small`` (9 pt in a 10 pt paper), the ± std and the notes ``\\footnotesize`` (8 pt), the floor.
- **One float per table** at the width asked for (``latex_grid.fit``: the ± under the numbers, the table turned,
  pieces of columns stacked in the float); only a table longer than a page continues in a "(continued)" float.
- **Widths**: ``column`` (ACL's 219 pt ``\\columnwidth``, a ``table`` float), ``page`` (455 pt, a ``table*``
  float spanning both columns), or a number of pt (a ``table`` in a one-column document; default 345, article's).
- **Decimal alignment**: ``decimals="align"`` (default) pairs each number column as ``r@{.}l`` (integer part,
  fraction part plus the ± and the marks), which needs no package; ``decimals="siunitx"`` draws siunitx ``S``
  columns (the paper loads ``siunitx``; ``--standalone`` does), and ``"auto"`` takes siunitx where this machine's
  TeX has it (``kpsewhich siunitx.sty``), else the fallback.
- **A fragment by default** (the floats only; the paper loads booktabs); ``standalone=True`` (``--standalone``)
  wraps it in a document that pdflatex compiles as is.
"""

from __future__ import annotations

import shutil
import subprocess

from xeval.base.errors import UserError
from xeval.report.formats.latex_grid import (  # noqa: F401 - the layout's API, re-exported for callers and tests
    MAX_ROWS,
    TEXT_WIDTH_PT,
    WIDTHS,
    Cell,
    Column,
    Grid,
    column_chunks,
    fit,
    floats,
    grid,
    present,
    transposed,
)

DECIMALS = ("align", "siunitx", "auto")

_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
             "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
             "±": r"$\pm$", "·": r"$\cdot$", "→": r"$\to$", "−": r"$-$", "†": r"\dag{}", "‡": r"\ddag{}",
             "§": r"\S{}", "¶": r"\P{}", "★": r"$\star$"}
# siunitx: bold numbers in S columns (\bfseries before the number; detect-weight), ± and marks as text after it
SIUNITX_SETUP = r"\sisetup{detect-weight=true, detect-family=true, mode=text}"


def escape(text: str) -> str:
    """Plain text to LaTeX: specials escaped, "−" a real minus, and "--" kept as two hyphens (not an en dash)."""
    out = "".join(_SPECIALS.get(ch, ch) for ch in str(text))
    while "--" in out:
        out = out.replace("--", "-{}-")
    return out


def resolve_width(width) -> tuple[float, bool]:
    """(points, page-wide float) of ``column`` | ``page`` | a number of pt (``--text-width``)."""
    if width is None:
        return TEXT_WIDTH_PT, False
    if isinstance(width, str) and width in WIDTHS:
        return WIDTHS[width], width == "page"
    try:
        points = float(width)
    except (TypeError, ValueError):
        raise UserError(f"--text-width: expected column, page or a width in pt, found {width!r}") from None
    if not 50 <= points <= 2000:
        raise UserError(f"--text-width: expected a width between 50 and 2000 pt, found {width!r}")
    return points, False


def resolve_decimals(decimals: str) -> bool:
    """True for siunitx ``S`` columns: asked for, or ``auto`` where this machine's TeX has siunitx."""
    if decimals not in DECIMALS:
        raise UserError(f"--decimals: expected one of {', '.join(DECIMALS)}, found {decimals!r}")
    if decimals == "auto":
        kpsewhich = shutil.which("kpsewhich")
        if kpsewhich is None:
            return False
        found = subprocess.run([kpsewhich, "siunitx.sty"], capture_output=True, text=True, check=False)
        return found.returncode == 0 and bool(found.stdout.strip())
    return decimals == "siunitx"


# ------------------------------------------------------------------------------------------- cells


def _extras(cell: Cell, digits: int, std_below: bool) -> str:
    extra = ""
    if present(cell.std) and not std_below:
        extra += rf"{{\footnotesize${{}}\pm{{}}${cell.std:.{digits}f}}}"
    return extra + (escape(cell.mark) if cell.mark else "")


def _number(cell: Cell, digits: int, std_below: bool = False, siunitx: bool = False) -> list[str]:
    """The tabular cells of one number: [integer part, fraction part + extras] (one cell when ``digits`` is 0), or
    with siunitx [the number in its S column, extras]."""
    if siunitx:
        if not present(cell.mean):
            return ["{}", ""]
        text = f"{cell.mean:.{digits}f}"
        if float(text) == 0.0:
            text = text.lstrip("-")  # no "-0.0"
        return [(r"\bfseries " if cell.bold else "") + text, _extras(cell, digits, std_below)]
    if not present(cell.mean):
        return [r"\multicolumn{2}{c}{}"] if digits > 0 else [""]
    text = f"{cell.mean:.{digits}f}"
    negative = text.startswith("-") and float(text) != 0.0
    whole, _, fraction = text.lstrip("-").partition(".")
    if cell.bold:
        whole, fraction = rf"\textbf{{{whole}}}", (rf"\textbf{{{fraction}}}" if fraction else "")
    whole = ("$-$" if negative else "") + whole
    extra = _extras(cell, digits, std_below)
    return [whole, fraction + extra] if digits > 0 else [whole + extra]


def _part_width(digits: int, siunitx: bool) -> int:
    """Tabular columns of one number: two (integer . fraction, or S + extras) or one (no decimals, no siunitx)."""
    return 2 if siunitx or digits > 0 else 1


def _part_spec(cells: list[Cell], digits: int, siunitx: bool) -> str:
    if not siunitx:
        return "r@{.}l" if digits > 0 else "r"
    values = [f"{c.mean:.{digits}f}" for c in cells if present(c.mean)]
    whole = max((len(v.lstrip("-").split(".")[0]) for v in values), default=1)
    sign = "-" if any(v.startswith("-") and float(v) != 0 for v in values) else ""
    return f"S[table-format={sign}{whole}.{digits}]@{{}}l"


def _width(column: Column, siunitx: bool) -> int:
    return sum(_part_width(d, siunitx) for d in column.digits)


def _spec(column: Column, siunitx: bool) -> str:
    return r"@{\,/\,}".join(_part_spec(cells, d, siunitx) for cells, d in zip(column.parts, column.digits))


def _std_line(cell: Cell, digits: int, siunitx: bool) -> str:
    """The ± of a number on the line under it, centred across its two columns."""
    span = _part_width(digits, siunitx)
    if not (present(cell.mean) and present(cell.std)):
        return rf"\multicolumn{{{span}}}{{c}}{{}}"
    return rf"\multicolumn{{{span}}}{{c}}{{\footnotesize$\pm${cell.std:.{digits}f}}}"


def _header(text: str, stacked: bool) -> str:
    head, _, rest = text.partition(" ")
    if not stacked or not rest:
        return escape(text)
    return rf"\begin{{tabular}}[b]{{@{{}}c@{{}}}}{escape(head)}\\ {escape(rest)}\end{{tabular}}"


# ----------------------------------------------------------------------------------------------- drawing


def _tabular(g: Grid, columns: list[int], rows: list[int], siunitx: bool = False) -> list[str]:
    n_labels = len(g.label_names)
    spec = "l" * n_labels + "".join(_spec(g.columns[i], siunitx) for i in columns)
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    start = {}
    position = n_labels + 1
    for i in columns:
        start[i] = position
        position += _width(g.columns[i], siunitx)
    bands = [(header, [i for i in members if i in columns]) for header, members in g.groups]
    bands = [(header, members) for header, members in bands if members]
    if bands:
        band, rules, i = [""] * n_labels, [], 0
        first = {members[0]: (header, members) for header, members in bands}
        while i < len(columns):
            col = columns[i]
            if col in first:
                header, members = first[col]
                span = sum(_width(g.columns[m], siunitx) for m in members)
                band.append(rf"\multicolumn{{{span}}}{{c}}{{{_header(header, g.stacked)}}}")
                rules.append(rf"\cmidrule(lr){{{start[col]}-{start[col] + span - 1}}}")
                i += len(members)
            else:
                band.append(rf"\multicolumn{{{_width(g.columns[col], siunitx)}}}{{c}}{{}}")
                i += 1
        lines += [" & ".join(band) + r" \\", " ".join(rules)]
    header = [escape(n) for n in g.label_names]
    header += [rf"\multicolumn{{{_width(g.columns[i], siunitx)}}}{{c}}{{{_header(g.columns[i].header, g.stacked)}}}"
               for i in columns]
    lines += [" & ".join(header) + r" \\", r"\midrule"]
    for r in rows:
        cells = [escape(x) for x in g.rows[r]]
        for i in columns:
            column = g.columns[i]
            for cells_of_part, digits in zip(column.parts, column.digits):
                cells += _number(cells_of_part[r], digits, g.std_below, siunitx)
        lines.append(" & ".join(cells) + r" \\")
        if g.std_below and any(present(g.columns[i].parts[p][r].std) for i in columns
                               for p in range(len(g.columns[i].parts))):
            below = [""] * len(g.label_names)
            for i in columns:
                column = g.columns[i]
                below += [_std_line(part[r], digits, siunitx) for part, digits in zip(column.parts, column.digits)]
            lines.append(" & ".join(below) + r" \\[1pt]")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def latex_table(table, text_width=TEXT_WIDTH_PT, decimals: str = "align") -> str:
    """One table as one float, fitted to ``text_width`` (``column``, ``page`` or pt): its pieces one under the other
    in that float; a table longer than ``MAX_ROWS`` lines continues in further floats (the row labels repeated)."""
    points, page = resolve_width(text_width)
    siunitx = resolve_decimals(decimals)
    g = fit(table, points)
    env = "table*" if page else "table"
    out = []
    packed = floats(g, points)
    for k, pieces in enumerate(packed):
        title = escape(g.title) + (" (continued)" if k else "")
        lines = [rf"\begin{{{env}}}[tbp]", r"\centering", r"\small", rf"\caption{{{title}}}"]
        if k == 0:
            lines.append(rf"\label{{{g.label}}}")
        for p, (columns, rows) in enumerate(pieces):
            if p:
                lines.append(r"\par\medskip")
            lines += _tabular(g, columns, rows, siunitx)
        if k == len(packed) - 1:
            for note in g.notes:
                lines.append(rf"\par\smallskip{{\footnotesize {escape(note)}\par}}")
        lines.append(rf"\end{{{env}}}")
        out.append("\n".join(lines))
    return "\n".join(out) + "\n"


def latex(tables, standalone: bool = False, text_width=TEXT_WIDTH_PT, decimals: str = "align") -> str:
    """The tables' floats, for ``\\input`` into a paper that loads booktabs (and siunitx for ``decimals="siunitx"``);
    ``standalone``: a whole document (two columns for ``text_width="column"`` / ``"page"``, as the paper's)."""
    points, _ = resolve_width(text_width)
    siunitx = resolve_decimals(decimals)
    decimals = "siunitx" if siunitx else "align"
    packages = "booktabs" + (" and siunitx (with " + SIUNITX_SETUP + ")" if siunitx else "")
    if not standalone:
        body = "\n".join(latex_table(t, text_width, decimals) for t in tables)
        return (f"% xeval report: \\input this file into a document that loads {packages} (tables fitted to a "
                f"{points:g} pt {'column' if text_width == 'column' else 'text'} width)\n" + body)
    setup = [r"\usepackage{booktabs}"] + ([r"\usepackage{siunitx}", SIUNITX_SETUP] if siunitx else [])
    if text_width in WIDTHS:  # a two-column page of ACL's measures: 455 pt of text, columns of 219 pt
        layout = [r"\documentclass[twocolumn]{article}", r"\setlength{\textwidth}{455pt}",
                  r"\setlength{\columnsep}{17pt}"]
    else:
        layout = [r"\documentclass{article}"]
        if points != TEXT_WIDTH_PT:
            layout.append(rf"\setlength{{\textwidth}}{{{points:g}pt}}")
    if len(layout) > 1:  # the text block centred on the page
        layout += [r"\setlength{\oddsidemargin}{\dimexpr(\paperwidth-\textwidth)/2-1in\relax}",
                   r"\setlength{\evensidemargin}{\oddsidemargin}"]
    # a page break after each table's floats: LaTeX holds at most 18 floats it has not placed yet
    body = "\\clearpage\n".join(latex_table(t, text_width, decimals) for t in tables)
    return "\n".join([*layout, *setup, r"\begin{document}", body, r"\end{document}", ""])
