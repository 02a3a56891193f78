"""Word alignment: ``src tokens ||| tgt tokens`` text files and Pharaoh-style link files.

A link file has one line per sentence pair: ``i-j`` is a sure link, ``ipj`` a possible one. Gold standards usually
come 1-based (``deen.gold``, ``enfr.gold``, ``roen.gold`` here); aligners (awesome-align, Cross-Align ``*.out``)
write 0-based predictions. The base is always an explicit argument, never guessed, and links are 0-based in memory.

An index below the base or beyond the sentence length is a ``DataError`` by default; ``on_out_of_range="skip"``
drops such links with one ``warnings.warn`` per file instead. A link listed both sure and possible counts as sure
(``AlignedPair.possible`` holds the possible-only links; P = sure ∪ possible).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from xeval.base.errors import DataError
from xeval.data._text import iter_lines
from xeval.data.examples import AlignedPair

Links = set[tuple[int, int]]
_LINK = re.compile(r"(\d+)([-p])(\d+)")


def read_text_pairs(path: str | Path) -> list[tuple[list[str], list[str]]]:
    """Read ``src tokens ||| tgt tokens`` lines (words separated by ASCII spaces) into token lists."""
    path = Path(path)
    pairs = []
    for number, line in iter_lines(path):
        parts = line.split(" ||| ")
        if len(parts) != 2:
            raise DataError(
                path,
                number,
                f"expected 'src tokens ||| tgt tokens', found {len(parts) - 1} ' ||| ' separators",
            )
        # Words are separated by ASCII spaces, as the format defines: an ideographic space U+3000 (published gold
        # derived from KFTT) is a word of its own, and str.split() would drop it and shift every later index.
        src, tgt = _words(parts[0]), _words(parts[1])
        if not src or not tgt:
            raise DataError(path, number, "expected tokens on both sides of ' ||| ', found an empty side")
        pairs.append((src, tgt))
    return pairs


def _words(text: str) -> list[str]:
    return [w for w in text.split(" ") if w]


def read_links(
    path: str | Path,
    base: int,
    *,
    sizes: list[tuple[int, int]] | None = None,
    on_out_of_range: str = "error",
) -> list[tuple[Links, Links]]:
    """Read a link file into (sure, possible-only) sets of 0-based (src, tgt) links, one entry per line.

    ``base``: 0 or 1, the base of the file's indices. ``sizes``: the (src, tgt) sentence lengths per line, to check
    the upper bound (and the line count) against the text.
    """
    if base not in (0, 1):
        raise ValueError(f"base must be 0 or 1, not {base!r}")
    if on_out_of_range not in ("error", "skip"):
        raise ValueError(f"on_out_of_range must be 'error' or 'skip', not {on_out_of_range!r}")
    path = Path(path)
    result: list[tuple[Links, Links]] = []
    skipped = 0
    first_skip = ""
    for number, line in iter_lines(path):
        if sizes is not None and number > len(sizes):
            if not line.strip() and number == len(sizes) + 1:
                continue  # tolerate one trailing blank line
            raise DataError(path, number, f"expected {len(sizes)} lines like the text file, found more")
        sure: Links = set()
        possible: Links = set()
        for item in line.split():
            match = _LINK.fullmatch(item)
            if match is None:
                raise DataError(
                    path, number, f"expected links like 3-4 (sure) or 3p4 (possible), found {item!r}"
                )
            i, j = int(match[1]) - base, int(match[3]) - base
            problem = ""
            if i < 0 or j < 0:
                problem = f"expected {base}-based indices (>= {base}), found {item!r}"
            elif sizes is not None and (i >= sizes[number - 1][0] or j >= sizes[number - 1][1]):
                n_src, n_tgt = sizes[number - 1]
                problem = (
                    f"expected {base}-based indices within {n_src} source and {n_tgt} target words, "
                    f"found {item!r}"
                )
            if problem:
                if on_out_of_range == "error":
                    raise DataError(path, number, problem)
                skipped += 1
                first_skip = first_skip or f"line {number}: {item}"
                continue
            (possible if match[2] == "p" else sure).add((i, j))
        result.append((sure, possible - sure))
    if sizes is not None and len(result) < len(sizes):
        raise DataError(
            path, len(result) + 1, f"expected {len(sizes)} lines like the text file, found {len(result)}"
        )
    if skipped:
        warnings.warn(f"{path}: skipped {skipped} out-of-range link(s) (first: {first_skip})", stacklevel=2)
    return result


def read_alignment(
    text_path: str | Path,
    gold_path: str | Path,
    lang: str,
    gold_base: int = 1,
    *,
    on_out_of_range: str = "error",
) -> list[AlignedPair]:
    """Read a text file and its link file (gold, or predictions with ``gold_base=0``) into ``AlignedPair``s."""
    text = read_text_pairs(text_path)
    links = read_links(
        gold_path, gold_base, sizes=[(len(s), len(t)) for s, t in text], on_out_of_range=on_out_of_range
    )
    return [
        AlignedPair(src, tgt, sure, possible, lang, str(text_path), number)
        for number, ((src, tgt), (sure, possible)) in enumerate(zip(text, links), 1)
    ]
