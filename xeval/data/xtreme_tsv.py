"""XTREME's tab-separated task files: tagging (udpos, panx) and sentence pairs (xnli, pawsx).

Tagging files (``udpos/*.tsv``, ``panx/*.tsv``): ``token<TAB>tag`` one word a line, a blank line between sentences.
XTREME's label-free official test files hold the token only (``tags`` is then None). The files in XTREME's download
end without a final blank line; a trailing blank line, CRLF line ends or several blank lines are tolerated too.

PAN-X before XTREME's preprocessing (``panx_dataset/<lang>/<split>`` from the WikiANN download) prefixes every token
with its language, ``en:word``; XTREME's ``panx_preprocess`` cuts everything up to the first ``:``. ``read_tagging``
strips the prefix when the file's first token starts with ``<lang>:`` (``lang_prefix="auto"``) and then requires it on
every token. It never strips on a guess alone: XTREME's processed files keep real tokens such as ``at:1994`` (Turkish
test set), which must stay as they are.

Pair files: XTREME writes them with Python's ``csv.writer(delimiter="\\t")``, so a field holding a quote is wrapped in
quotes with inner quotes doubled (``"Die ""IPA"" besteht …"``, PAWS-X); we undo that quoting. XTREME's own loader
reads these files without unquoting; the text of the original PAWS-X files (no csv quoting) shows the unquoted form
is the real sentence. The XTREME files have CRLF line ends and no header. The original PAWS-X files
(``x-final/<lang>/dev_2k.tsv``: ``id sentence1 sentence2 label``) and the original XNLI files (``xnli.dev.tsv``:
``language gold_label … sentence1 sentence2 …``) have a header row: columns are then picked by name, the fields are
taken verbatim (no csv quoting there) and stripped as XTREME's preprocessing strips them, and with a ``language``
column only the rows of ``lang`` are kept. XNLI's ``contradictory`` (MultiNLI train) becomes ``contradiction`` as in
XTREME's ``xnli_preprocess``.
"""

from __future__ import annotations

import csv
from pathlib import Path

from xeval.base.errors import DataError
from xeval.data._text import iter_lines
from xeval.data.examples import SentencePair, TaggedSentence


def read_tagging(
    path: str | Path, lang: str, split: str, *, lang_prefix: str | bool = "auto"
) -> list[TaggedSentence]:
    """Read an XTREME udpos / panx file. ``lang_prefix``: "auto" (strip ``<lang>:`` when the first token has it),
    True (require and strip it on every token), False (leave tokens untouched)."""
    path = Path(path)
    source = str(path)
    prefix = f"{lang}:"
    strip: bool | None = None if lang_prefix == "auto" else bool(lang_prefix)
    ncols: int | None = None  # 1 (label-free) or 2, fixed by the first token line
    first_line = 0
    sentences: list[TaggedSentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    start = 0

    def flush() -> None:
        if tokens:
            sentences.append(
                TaggedSentence(list(tokens), list(tags) if ncols == 2 else None, lang, split, source, start)
            )
            tokens.clear()
            tags.clear()

    for number, line in iter_lines(path):
        if not line.strip():
            flush()
            continue
        fields = line.split("\t")
        if len(fields) not in (1, 2):
            raise DataError(
                path,
                number,
                f"expected token<TAB>tag (or a token alone), found {len(fields)} tab-separated fields",
            )
        if ncols is None:
            ncols, first_line = len(fields), number
        elif len(fields) != ncols:
            what = "token<TAB>tag" if ncols == 2 else "a token alone (label-free file)"
            raise DataError(
                path, number, f"expected {what} like line {first_line}, found {len(fields)} field(s)"
            )
        token = fields[0]
        if strip is None:
            strip = token.startswith(prefix)
        if strip:
            if not token.startswith(prefix):
                raise DataError(
                    path,
                    number,
                    f"expected a token prefixed {prefix!r} like line {first_line}, found {token!r}",
                )
            token = token[len(prefix) :]
        if not token.strip():
            raise DataError(path, number, "expected a token, found an empty field")
        if ncols == 2 and not fields[1].strip():
            raise DataError(path, number, f"expected a tag after token {token!r}, found an empty field")
        if not tokens:
            start = number
        tokens.append(token)
        if ncols == 2:
            tags.append(fields[1].strip())
    flush()
    return sentences


_TEXT_A = ("sentence1", "premise")
_TEXT_B = ("sentence2", "hypothesis")
_LABEL = ("label", "gold_label")


def _header_columns(fields: list[str]) -> dict[str, int] | None:
    """Column indices by role when ``fields`` is a header row of a known layout, else None."""
    names = [f.strip().lower() for f in fields]
    if not any(n in names for n in _TEXT_A) or not any(n in names for n in _TEXT_B):
        return None
    cols = {
        "a": next(names.index(n) for n in _TEXT_A if n in names),
        "b": next(names.index(n) for n in _TEXT_B if n in names),
    }
    for n in _LABEL:
        if n in names:
            cols["label"] = names.index(n)
            break
    if "language" in names:
        cols["language"] = names.index("language")
    return cols


def _csv_fields(path: Path, number: int, line: str) -> list[str]:
    try:
        return next(csv.reader([line], delimiter="\t", quotechar='"', strict=True))
    except csv.Error as err:
        raise DataError(
            path, number, f'expected csv-style quoted fields ("" inside quotes), found bad quoting ({err})'
        ) from None


def _label(value: str) -> str:
    value = value.strip()
    return "contradiction" if value == "contradictory" else value


def read_pairs(path: str | Path, lang: str, split: str, *, quoting: str = "auto") -> list[SentencePair]:
    """Read an XNLI / PAWS-X pair file (XTREME layout or an original file with a header row).

    ``quoting``: "auto" (csv-style quotes in header-less XTREME files, verbatim fields under a header), "csv", "none".
    """
    if quoting not in ("auto", "csv", "none"):
        raise ValueError(f"quoting must be 'auto', 'csv' or 'none', not {quoting!r}")
    path = Path(path)
    source = str(path)
    pairs: list[SentencePair] = []
    header: dict[str, int] | None = None
    ncols: int | None = None
    first_line = 0
    for number, line in iter_lines(path):
        if not line.strip():
            continue  # a trailing blank line
        if number == 1:
            header = _header_columns(line.split("\t"))
            if header is not None:
                ncols = len(line.split("\t"))
                continue
        use_csv = quoting == "csv" or (quoting == "auto" and header is None)
        fields = _csv_fields(path, number, line) if use_csv else line.split("\t")
        if header is not None:
            if len(fields) != ncols:
                raise DataError(
                    path,
                    number,
                    f"expected {ncols} tab-separated fields like the header, found {len(fields)}",
                )
            if "language" in header and fields[header["language"]].strip() != lang:
                continue
            text_a, text_b = fields[header["a"]].strip(), fields[header["b"]].strip()
            label = _label(fields[header["label"]]) if "label" in header else None
        else:
            if len(fields) not in (2, 3):
                raise DataError(
                    path,
                    number,
                    f"expected text<TAB>text<TAB>label (or two texts), found {len(fields)} fields",
                )
            if ncols is None:
                ncols, first_line = len(fields), number
            elif len(fields) != ncols:
                raise DataError(
                    path, number, f"expected {ncols} fields like line {first_line}, found {len(fields)}"
                )
            text_a, text_b = fields[0], fields[1]
            label = _label(fields[2]) if ncols == 3 else None
        if not text_a.strip() or not text_b.strip():
            raise DataError(path, number, "expected two non-empty texts, found an empty one")
        if label is not None and not label:
            raise DataError(path, number, "expected a label in the last field, found an empty field")
        pairs.append(SentencePair(text_a, text_b, label, lang, split, source, number))
    return pairs
