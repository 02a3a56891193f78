"""Bilingual dictionaries (MUSE): one ``src tgt`` pair a line, separated by a tab or by a single run of spaces.

MUSE's full dictionaries (``en-de.txt``) use a space; its POS-annotated 5000–6500 test splits use a tab. A word may
have several translations (one line each); order and duplicates are kept as in the file.
"""

from __future__ import annotations

from pathlib import Path

from xeval.base.errors import DataError
from xeval.data._text import iter_lines


def read_dictionary(path: str | Path) -> list[tuple[str, str]]:
    """Read a bilingual dictionary into (source word, target word) pairs in file order."""
    path = Path(path)
    pairs: list[tuple[str, str]] = []
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        fields = [f.strip() for f in fields]
        if len(fields) != 2 or not all(fields):
            raise DataError(
                path, number, f"expected 'source target' (space or tab separated), found {line!r}"
            )
        pairs.append((fields[0], fields[1]))
    return pairs
