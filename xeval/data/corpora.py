"""Pre-training corpora, read lazily (iterators) because they can be large; ``.gz`` files are decompressed on the fly.

- ``iter_parallel_tsv``: gettext pairs ``en-xx.tsv.gz``: ``msgid<TAB>msgstr<TAB>catalog``, an optional first line
  starting with ``#`` as header; the general-domain pool's ``English<TAB>xx<TAB>source tag<TAB>licence tag``
  (``parallel/general/``) reads the same way, the source tag as domain (the licence tag is not needed for training).
- ``iter_line_aligned``: two line-aligned files (Multi30k ``train.en.gz``/``train.de.gz``, WMT ``*.src.de`` /
  ``*.ref.A.en``, FLORES); unequal lengths are a ``DataError`` at the first line one file lacks.
- ``iter_monolingual``: one paragraph a line (Debian man pages: ``### <package>:<section>/<page>`` header lines and
  blank lines between pages are skipped; fortunes: ``\\n`` escapes can be turned into newlines).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from xeval.base.errors import DataError
from xeval.data._text import iter_lines


class ParallelPair(NamedTuple):
    src: str
    tgt: str
    domain: str  # gettext catalog (e.g. "coreutils"); "" when the file has no third column
    line: int


def iter_parallel_tsv(path: str | Path) -> Iterator[ParallelPair]:
    """Yield ``ParallelPair``s of a ``src<TAB>tgt[<TAB>domain]`` file (header line ``# …`` skipped)."""
    path = Path(path)
    ncols = 0
    for number, line in iter_lines(path):
        if number == 1 and line.startswith("#"):
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3, 4):
            raise DataError(
                path, number, f"expected src<TAB>tgt<TAB>catalog[<TAB>licence], found {len(fields)} tab-separated fields"
            )
        if ncols and len(fields) != ncols:
            raise DataError(
                path, number, f"expected {ncols} fields like the lines before, found {len(fields)}"
            )
        ncols = len(fields)
        if not fields[0].strip() or not fields[1].strip():
            raise DataError(path, number, "expected text on both sides, found an empty side")
        yield ParallelPair(fields[0], fields[1], fields[2] if ncols >= 3 else "", number)


def iter_line_aligned(a: str | Path, b: str | Path) -> Iterator[tuple[str, str]]:
    """Yield (line of ``a``, line of ``b``) pairs; a length mismatch raises ``DataError`` when it is reached."""
    a, b = Path(a), Path(b)
    lines_a, lines_b = iter_lines(a), iter_lines(b)
    number = 0
    while True:
        item_a = next(lines_a, None)
        item_b = next(lines_b, None)
        if item_a is None and item_b is None:
            return
        number += 1
        if item_a is None or item_b is None:
            longer, shorter = (b, a) if item_a is None else (a, b)
            raise DataError(
                longer,
                number,
                f"expected {number - 1} lines like {shorter.name} (line-aligned files), found more",
            )
        yield item_a[1], item_b[1]


def iter_monolingual(
    path: str | Path, *, header_prefix: str | None = "### ", unescape_newlines: bool = False
) -> Iterator[str]:
    """Yield the non-blank lines (paragraphs) of a text file, skipping lines that start with ``header_prefix``."""
    for _, line in iter_lines(path):
        if not line.strip() or (header_prefix and line.startswith(header_prefix)):
            continue
        yield line.replace("\\n", "\n") if unescape_newlines else line
