"""Tatoeba retrieval test set in the LASER layout: ``tatoeba.XXX-eng.XXX`` and ``tatoeba.XXX-eng.eng``.

Line i of one file translates line i of the other (ISO 639-3 names). XTREME evaluates 36 of the 112 languages under
2-letter codes; ``TATOEBA_XTREME`` is the mapping of XTREME's ``utils_preprocess.py`` (``tatoeba_preprocess``:
``cmn`` → zh, ``pes`` → fa, ``swh`` → sw, ``tgl`` → tl, ``jav`` → jv, …), and ``TATOEBA_XTREME_R`` adds the five
languages XTREME-R added (az lt pl uk ro). Note: XTREME's own copy (``<xx>-en.<xx>`` / ``<xx>-en.en`` in its download) sorts the
English side to hide the gold order (``tatoeba_preprocess``); the LASER files keep it, so the gold of line i is line i
there, and ``gold_order_known`` tells the two apart.
"""

from __future__ import annotations

from pathlib import Path

from xeval.base.errors import DataError
from xeval.data._text import iter_lines
from xeval.data.examples import Bitext

TATOEBA_XTREME: dict[str, str] = {
    "af": "afr", "ar": "ara", "bg": "bul", "bn": "ben", "de": "deu", "el": "ell", "es": "spa", "et": "est",
    "eu": "eus", "fa": "pes", "fi": "fin", "fr": "fra", "he": "heb", "hi": "hin", "hu": "hun", "id": "ind",
    "it": "ita", "ja": "jpn", "jv": "jav", "ka": "kat", "kk": "kaz", "ko": "kor", "ml": "mal", "mr": "mar",
    "nl": "nld", "pt": "por", "ru": "rus", "sw": "swh", "ta": "tam", "te": "tel", "th": "tha", "tl": "tgl",
    "tr": "tur", "ur": "urd", "vi": "vie", "zh": "cmn",
}  # fmt: skip
TATOEBA_XTREME_R: dict[str, str] = {
    **TATOEBA_XTREME,
    "az": "aze",
    "lt": "lit",
    "pl": "pol",
    "uk": "ukr",
    "ro": "ron",
}
_ISO2 = {iso3: iso2 for iso2, iso3 in TATOEBA_XTREME_R.items()}


def tatoeba_files(folder: str | Path, lang: str) -> tuple[Path, Path]:
    """The (xx side, English side) files for a 2-letter XTREME code or an ISO 639-3 code."""
    iso3 = TATOEBA_XTREME_R.get(lang, lang)
    folder = Path(folder)
    return folder / f"tatoeba.{iso3}-eng.{iso3}", folder / f"tatoeba.{iso3}-eng.eng"


def read_tatoeba(folder: str | Path, lang: str) -> list[Bitext]:
    """Read one language's pairs (``src`` = xx, ``tgt`` = English); ``lang`` is 2-letter (XTREME) or ISO 639-3."""
    src_path, tgt_path = tatoeba_files(folder, lang)
    iso3 = src_path.suffix[1:]
    code = _ISO2.get(iso3, iso3)
    for path in (src_path, tgt_path):
        if not path.is_file():
            raise DataError(path, None, f"expected the Tatoeba file for {lang!r}, found none")
    src = [line for _, line in iter_lines(src_path)]
    tgt = [line for _, line in iter_lines(tgt_path)]
    if len(src) != len(tgt):
        longer, n_long, n_short, other = (
            (src_path, len(src), len(tgt), tgt_path)
            if len(src) > len(tgt)
            else (tgt_path, len(tgt), len(src), src_path)
        )
        raise DataError(
            longer,
            n_short + 1,
            f"expected {n_short} lines like {other.name}, found {n_long} (files must be line-aligned)",
        )
    pairs = []
    for i, (a, b) in enumerate(zip(src, tgt), 1):
        if not a.strip() or not b.strip():
            raise DataError(
                src_path if not a.strip() else tgt_path, i, "expected a sentence, found an empty line"
            )
        pairs.append(Bitext(a, b, code, "test", str(src_path), i))
    return pairs


def gold_order_known(pairs: list[Bitext]) -> bool:
    """False when the English side is in sorted order, as XTREME's ``tatoeba_preprocess`` writes it (stripped lines,
    ``sorted`` by text): line i no longer translates line i and the gold is unknown, so the pairs are label-free
    (predictions exported, never scored). LASER files are never sorted (their order is Tatoeba's), and fewer than
    three pairs cannot tell (sorted by chance).

    >>> pairs = [Bitext(x, e, "de", "test", "de-en.de", i) for i, (x, e) in enumerate([("b", "B"), ("a", "A"), ("c", "C")])]
    >>> gold_order_known(pairs), gold_order_known(sorted(pairs, key=lambda p: p.tgt))
    (True, False)
    """
    english = [p.tgt.strip() for p in pairs]
    return len(english) < 3 or english != sorted(english)
