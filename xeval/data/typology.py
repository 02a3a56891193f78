"""The language facts xeval's analyses join to results: family, script, basic word order (``typology.tsv``, shipped
with the package; its header cites the sources: Glottolog 5.0 for families, ISO 15924 for scripts, WALS feature 81A
for word order) and the FLORES-200 file code of each language.

Result records name languages by XTREME's codes (``de``), probes by pairs (``de-en``, ``en-de``): ``base_language``
maps a pair to its non-English side, so a probe's language joins the same row as a task's.
"""

from __future__ import annotations

import csv
import io
from functools import lru_cache
from importlib import resources

import pandas as pd

ATTRIBUTES = ("family", "script", "word_order")
ATTRIBUTE_TITLES = {"family": "family (Glottolog)", "script": "script (ISO 15924)",
                    "word_order": "word order (WALS 81A)"}


@lru_cache(maxsize=1)
def typology() -> pd.DataFrame:
    """One row per language code (index ``lang``): iso639_3, name, family, script, word_order, flores, notes."""
    text = resources.files("xeval.data").joinpath("typology.tsv").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines)), delimiter="\t"))
    return pd.DataFrame(rows).set_index("lang").fillna("")


def base_language(code: str) -> str:
    """``de-en`` / ``en-de`` -> ``de``; a plain code is returned as is (``en-en`` stays ``en``)."""
    parts = code.split("-")
    if len(parts) == 2 and "en" in parts and parts[0] != parts[1] and len(parts[0]) <= 3 and len(parts[1]) <= 3:
        return parts[0] if parts[1] == "en" else parts[1]
    return code


def flores_code(lang: str) -> str | None:
    table = typology()
    code = table["flores"].get(base_language(lang), "")
    return code or None


def language_for_flores(code: str) -> str | None:
    """The xeval language code of a FLORES-200 file code (``deu_Latn`` -> ``de``)."""
    table = typology()
    hits = table.index[table["flores"] == code]
    return str(hits[0]) if len(hits) else None


def attribute(lang: str, name: str) -> str | None:
    table = typology()
    lang = base_language(lang)
    return str(table.at[lang, name]) if lang in table.index else None
