"""MLQA exact match and F1 with MLQA's per-language normalisation, reproducing the behaviour of the official
``mlqa_evaluation_v1.py`` (facebookresearch/MLQA), which XTREME downloads and calls with the context language.
Written here from that script's definition; the order of steps matters and is kept:

1. lowercase;
2. remove punctuation: every character whose Unicode category starts with "P" plus ASCII ``string.punctuation``
   (which adds the ASCII symbols ``$+<=>^`|~``);
3. remove articles, per language: en a/an/the, es un/una/unos/unas/el/la/los/las, de ein/eine/einen/einem/eines/
   einer/der/die/das/den/dem/des, vi của/là/cái/chiếc/những (all between ``\\b`` word boundaries); hi and zh none;
   ar: the published pattern ``\\sال^|ال``. Its first alternative can never match (``^`` after consumed
   characters), so the effect is: EVERY occurrence of "ال" is replaced by a space, at the start of a word or
   inside it ("مالك" becomes "م ك", two tokens). Reproduced as published, because that is what MLQA and XTREME
   numbers mean;
4. tokenise: whitespace for en es de vi ar hi; for zh "mixed segmentation": each character in U+4E00..U+9FA5
   (the script's range, not the whole CJK block) or in the punctuation set is its own token, runs of other
   characters are split on whitespace. Tokens are re-joined with single spaces.

EM compares the normalised strings; F1 is the token-overlap F1 (0 when nothing overlaps); maximum over gold
answers; unanswered questions score 0.
"""

from __future__ import annotations

import functools
import re
import string
import sys
import unicodedata
from collections.abc import Mapping, Sequence

from xeval.metrics.squad import corpus_scores, token_f1


@functools.cache
def punctuation() -> frozenset[str]:
    """MLQA's PUNCT set, built on first use (scanning every code point takes a fraction of a second).

    ``range(sys.maxunicode)`` as in the official script (it stops one short of U+10FFFF, not punctuation anyway).
    """
    unicode_p = {chr(i) for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P")}
    return frozenset(unicode_p | set(string.punctuation))


WHITESPACE_LANGS = ("en", "es", "hi", "vi", "de", "ar")
MIXED_SEGMENTATION_LANGS = ("zh",)
LANGUAGES = WHITESPACE_LANGS + MIXED_SEGMENTATION_LANGS

_ARTICLES = {
    "en": re.compile(r"\b(a|an|the)\b"),
    "es": re.compile(r"\b(un|una|unos|unas|el|la|los|las)\b"),
    "vi": re.compile(r"\b(của|là|cái|chiếc|những)\b"),
    "de": re.compile(r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b"),
    "ar": re.compile(r"\sال^|ال"),  # as published; see the module docstring
}
_HAN = re.compile(r"[\u4e00-\u9fa5]")


def _check(lang: str) -> None:
    if lang not in LANGUAGES:
        raise ValueError(f"MLQA normalisation is defined for {' '.join(LANGUAGES)}, not {lang!r}")


def mixed_segmentation(text: str) -> list[str]:
    """MLQA's Chinese tokenisation: Han characters and punctuation one token each, other runs split on spaces.

    >>> mixed_segmentation("北京大学 in 2019年")
    ['北', '京', '大', '学', 'in', '2019', '年']
    """
    punct = punctuation()
    tokens: list[str] = []
    run = ""
    for ch in text:
        if _HAN.search(ch) or ch in punct:
            if run:
                tokens.extend(run.split())
                run = ""
            tokens.append(ch)
        else:
            run += ch
    if run:
        tokens.extend(run.split())
    return tokens


def normalize_answer(text: str, lang: str) -> str:
    """MLQA normalisation for one answer.

    >>> normalize_answer("Die Hauptstadt, «Berlin»!", "de")
    'hauptstadt berlin'
    >>> normalize_answer("¿Los Ángeles?", "es")
    'ángeles'
    >>> normalize_answer("北京、上海", "zh")
    '北 京 上 海'
    >>> normalize_answer("الكتاب", "ar")
    'كتاب'
    >>> normalize_answer("مالك", "ar")
    'م ك'
    """
    _check(lang)
    punct = punctuation()
    text = text.lower()
    text = "".join(ch for ch in text if ch not in punct)
    if lang in _ARTICLES:
        text = _ARTICLES[lang].sub(" ", text)
    tokens = mixed_segmentation(text) if lang in MIXED_SEGMENTATION_LANGS else text.split()
    return " ".join(t for t in tokens if t.strip() != "")


def exact_match(prediction: str, gold: str, lang: str) -> bool:
    return normalize_answer(prediction, lang) == normalize_answer(gold, lang)


def f1(prediction: str, gold: str, lang: str) -> float:
    """Token-overlap F1 (0-1) after MLQA normalisation.

    >>> f1("北京大学", "北京", "zh")
    0.6666666666666666
    """
    return token_f1(normalize_answer(prediction, lang).split(), normalize_answer(gold, lang).split())


def example_scores(prediction: str, golds: Sequence[str], lang: str) -> tuple[float, float]:
    """(EM, F1) of one question, each the maximum over its gold answers (0-1)."""
    if not golds:
        raise ValueError("a question needs at least one gold answer")
    em = max(float(exact_match(prediction, g, lang)) for g in golds)
    return em, float(max(f1(prediction, g, lang) for g in golds))


def mlqa_scores(
    predictions: Mapping[str, str], gold: Mapping[str, Sequence[str]], lang: str
) -> dict[str, float]:
    """Corpus EM and F1 in percent; ``lang`` is the context (answer) language, as XTREME passes it.

    >>> gold = {"q1": ["el río Amazonas"], "q2": ["1990"]}
    >>> mlqa_scores({"q1": "Río Amazonas"}, gold, "es")
    {'exact_match': 50.0, 'f1': 50.0}
    """
    _check(lang)
    return corpus_scores(predictions, gold, lambda p, golds: example_scores(p, golds, lang))
