"""Draw ``Table``s as CSV: one table as its wide frame, several as one tidy frame."""

from __future__ import annotations

import io

import pandas as pd

from xeval.report.formats.cells import index_names
from xeval.report.tables.base import Table


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
        if table.marks is not None:  # "<column> marks": the marks the renderers draw after a cell (†‡§¶)
            for col in table.mean.columns:
                if (table.marks[col] != "").any():
                    frame.insert(frame.columns.get_loc(col) + 1, f"{col} marks", table.marks[col])
        frame.to_csv(buffer, float_format="%.4f")
        return buffer.getvalue()
    parts = []
    for table in tables:
        mean = table.mean.reset_index().melt(id_vars=index_names(table), var_name="column", value_name="mean")
        if table.std is not None:
            std = table.std.reset_index().melt(id_vars=index_names(table), var_name="column", value_name="std")
            mean["std"] = std["std"].to_numpy()
        if table.marks is not None:
            marks = table.marks.reset_index().melt(id_vars=index_names(table), var_name="column", value_name="marks")
            mean["marks"] = marks["marks"].to_numpy()
        mean.insert(0, "table", table.key)
        parts.append(mean)
    pd.concat(parts, ignore_index=True).to_csv(buffer, index=False, float_format="%.4f")
    return buffer.getvalue()
