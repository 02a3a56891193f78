"""BUCC 2018 parallel-sentence mining, as XTREME lays it out: ``<pair>.<split>.<lang>`` files of ``id<TAB>sentence``
(e.g. ``zh-en.dev.zh`` with ids ``zh-000000001``) and a gold file ``<pair>.<split>.gold`` of ``src-id<TAB>tgt-id``.
The official test gold is not public: pass ``require_gold=False`` to read a split without one (``gold`` is empty).
"""

from __future__ import annotations

from pathlib import Path

from xeval.base.errors import DataError
from xeval.data._text import iter_lines
from xeval.data.examples import BuccCorpus


def _read_sentences(path: Path) -> dict[str, str]:
    sentences: dict[str, str] = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(
                path, number, f"expected id<TAB>sentence, found {len(fields)} tab-separated fields"
            )
        sid, text = fields
        if not sid or not text.strip():
            raise DataError(path, number, "expected a non-empty id and sentence, found an empty field")
        if sid in sentences:
            raise DataError(path, number, f"expected unique sentence ids, found {sid!r} again")
        sentences[sid] = text
    return sentences


def read_bucc(
    folder: str | Path, pair: str = "zh-en", split: str = "dev", *, require_gold: bool = True
) -> BuccCorpus:
    """Read the two monolingual sides and the gold pairs of one BUCC language pair (``src-tgt``, e.g. ``zh-en``)."""
    src_lang, sep, tgt_lang = pair.partition("-")
    if not sep or not src_lang or not tgt_lang:
        raise ValueError(f"pair must look like 'zh-en', not {pair!r}")
    prefix = Path(folder) / f"{pair}.{split}"
    src = _read_sentences(Path(f"{prefix}.{src_lang}"))
    tgt = _read_sentences(Path(f"{prefix}.{tgt_lang}"))
    gold_path = Path(f"{prefix}.gold")
    gold: list[tuple[str, str]] = []
    if gold_path.is_file() or require_gold:
        for number, line in iter_lines(gold_path):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise DataError(
                    gold_path, number, f"expected {src_lang}-id<TAB>{tgt_lang}-id, found {len(fields)} fields"
                )
            if fields[0] not in src:
                raise DataError(
                    gold_path, number, f"expected an id of {prefix.name}.{src_lang}, found {fields[0]!r}"
                )
            if fields[1] not in tgt:
                raise DataError(
                    gold_path, number, f"expected an id of {prefix.name}.{tgt_lang}, found {fields[1]!r}"
                )
            gold.append((fields[0], fields[1]))
    return BuccCorpus(src, tgt, gold, src_lang, split, str(prefix))
