"""The cleaning filters of the pre-training corpora (on by default; ``data.clean`` sets ``CleanConfig``'s fields).

A first measurement found placeholders in 27-37 % of gettext pairs, usually identical on both sides, which
contrastive objectives learn to match. So, for pairs: strip printf/format placeholders and menu accelerators, drop
ISO code-name catalogs (``iso_*``), pairs whose sides are identical or near-identical and very short pairs; for
monolingual text: drop man-page headers, short lines (option lists, table rows) and lines that are mostly not
letters. Each filter names itself, so the run log counts what it dropped per language (``Corpora.log_lines``).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

PLACEHOLDER = re.compile(
    r"%(?:\d+\$)?[-+ 0#']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|L|q|j|z|t|I64|I32)?[diouxXeEfFgGaAcCsSpn]"
    r"|%\([A-Za-z_]\w*\)[-+ 0#]*\d*(?:\.\d+)?[sdifrxX]"  # Python %(name)s
    r"|%%"
    r"|\{\d*(?::[^{}]*)?\}|\{[A-Za-z_][\w.]*(?::[^{}]*)?\}"  # {0} {} {name} {0:>3}
    r"|\$\{\w+\}|\$\w+"  # ${var} $var
    r"|%[A-Za-z_]+%"  # %NAME%
)
ACCEL_PAREN = re.compile(r"\s*[(（][_&~][^\W_][)）]")  # "文件(_F)", "ファイル(&F)"
ACCEL = re.compile(r"(?<![\w&])[_&~](?=[^\W\d_])(?![A-Za-z]+;)")  # "_File", "&Open", not "&amp;"
SPACES = re.compile(r"\s+")


EMPTY_QUOTES = re.compile(r"""(['"«“„‘‚「『]) *(['"»”“’‘」』])|\( *\)|\[ *\]""")  # left by a removed placeholder
NON_LETTERS = re.compile(r"[\W\d_]+")


def strip_markup(text: str) -> str:
    text = PLACEHOLDER.sub(" ", text)
    text = ACCEL_PAREN.sub("", text)
    text = ACCEL.sub("", text)
    text = EMPTY_QUOTES.sub(" ", text)
    return SPACES.sub(" ", text).strip(" \t:;,-|/")


def _letters(text: str) -> str:
    return NON_LETTERS.sub("", text.casefold())


@dataclass
class CleanConfig:
    enabled: bool = True
    min_letters: int = 3  # each side of a pair needs this many letters
    min_words_en: int = 2  # the English side of a pair needs this many words with a letter
    near_identical: float = 0.8  # drop pairs whose letter strings are this similar (difflib ratio)
    mono_min_chars: int = 20
    mono_min_letter_share: float = 0.5
    drop_catalogs: tuple[str, ...] = ("iso_",)  # gettext catalog domains to drop (prefixes)


def clean_pair(src: str, tgt: str, domain: str, cfg: CleanConfig) -> tuple[str, str] | str:
    """The cleaned pair, or the name of the filter that dropped it."""
    if not cfg.enabled:
        return (src, tgt) if src.strip() and tgt.strip() else "empty"
    if domain and any(domain.startswith(p) for p in cfg.drop_catalogs):
        return "iso_catalog"
    a, b = strip_markup(src), strip_markup(tgt)
    la, lb = _letters(a), _letters(b)
    if len(la) < cfg.min_letters or len(lb) < cfg.min_letters:
        return "short"
    if sum(1 for w in a.split() if any(c.isalpha() for c in w)) < cfg.min_words_en:
        return "short"
    if la == lb:
        return "identical"
    if _near_identical(la, lb, cfg.near_identical):
        return "near_identical"
    return a, b


def _near_identical(a: str, b: str, threshold: float) -> bool:
    """difflib's ratio >= threshold, with cheap rejections first (different scripts share almost no letters)."""
    if 2 * min(len(a), len(b)) / (len(a) + len(b)) < threshold:
        return False
    sa, sb = set(a), set(b)
    if len(sa & sb) < 0.5 * len(sa | sb):
        return False
    if len(a) + len(b) > 160:  # long sides: compare bags of 3-grams instead of aligning characters (fast)
        ga = Counter(a[i : i + 3] for i in range(len(a) - 2))
        gb = Counter(b[i : i + 3] for i in range(len(b) - 2))
        return 2 * sum((ga & gb).values()) / max(sum(ga.values()) + sum(gb.values()), 1) >= threshold
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return m.quick_ratio() >= threshold and m.ratio() >= threshold


def clean_mono(line: str, cfg: CleanConfig) -> str:
    """The cleaned line, or "\\0<filter name>" when a filter drops it."""
    text = line.replace("\\n", " ").replace("\\t", " ")
    text = SPACES.sub(" ", text).strip()
    if not cfg.enabled:
        return text if text else "\0empty"
    if text.startswith("### "):
        return "\0header"
    if len(text) < cfg.mono_min_chars:
        return "\0short"
    letters = len(NON_LETTERS.sub("", text))
    if letters < cfg.mono_min_letter_share * (len(text) - text.count(" ")):
        return "\0non_letters"
    return text
