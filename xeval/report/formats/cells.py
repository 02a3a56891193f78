"""What every renderer draws a ``Table`` from: its displayed columns (a pair of columns merged into one "a / b"
column, F1 / EM), its row-label cells and the names of its index levels."""

from __future__ import annotations

from xeval.report.tables.base import Table


def display_columns(table: Table) -> list[tuple[str, list]]:
    """(header, underlying columns): a pair of columns becomes one "a / b" column; a column with no value in any
    row (a task that never ran) is left out."""
    paired = {a: (a, b, h) for a, b, h in table.pairs}
    skip = {b for _, b, _ in table.pairs}
    out = []
    for col in table.mean.columns:
        if col in skip:
            continue
        if not any(table.mean[c].notna().any() for c in paired.get(col, (col, col, ""))[:2]):
            continue
        if col in paired:
            a, b, header = paired[col]
            out.append((header, [a, b]))
        else:
            out.append((str(col), [col]))
    return out


def index_cells(table: Table) -> list[list[str]]:
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


def index_names(table: Table) -> list[str]:
    return [str(n or "") for n in table.mean.index.names]
