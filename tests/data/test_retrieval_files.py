"""Tatoeba and BUCC readers on the real files and on malformed ones."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError
from xeval.data.bucc_files import read_bucc
from xeval.data.tatoeba import TATOEBA_XTREME, TATOEBA_XTREME_R, read_tatoeba

XTREME_36 = "af ar bg bn de el es et eu fa fi fr he hi hu id it ja jv ka kk ko ml mr nl pt ru sw ta te th tl tr ur vi zh"


def test_xtreme_language_map():
    assert sorted(TATOEBA_XTREME) == XTREME_36.split()
    assert {TATOEBA_XTREME[k] for k in ("zh", "fa", "sw", "tl", "jv")} == {"cmn", "pes", "swh", "tgl", "jav"}
    assert set(TATOEBA_XTREME_R) - set(TATOEBA_XTREME) == {"az", "lt", "pl", "uk", "ro"}


def test_all_36_languages(data_root):
    folder = require_file(data_root, "tatoeba")
    total = 0
    for lang, iso3 in TATOEBA_XTREME.items():
        pairs = read_tatoeba(folder, lang)
        with open(folder / f"tatoeba.{iso3}-eng.eng", encoding="utf-8") as handle:
            assert len(pairs) == sum(1 for _ in handle)
        assert pairs[0].lang == lang and pairs[0].line == 1
        total += len(pairs)
    assert total == 31692
    assert len(read_tatoeba(folder, "cmn")) == len(read_tatoeba(folder, "zh")) == 1000  # iso3 works too
    jv = read_tatoeba(folder, "jv")
    assert (
        len(jv) == 205
        and jv[0].tgt == (folder / "tatoeba.jav-eng.eng").read_text(encoding="utf-8").split("\n")[0]
    )


def test_unequal_lengths(tmp_path):
    (tmp_path / "tatoeba.xyz-eng.xyz").write_text("a\nb\nc\n")
    (tmp_path / "tatoeba.xyz-eng.eng").write_text("A\nB\n")
    with pytest.raises(
        DataError, match=rf"^{re.escape(str(tmp_path / 'tatoeba.xyz-eng.xyz'))}:3: expected 2 lines"
    ):
        read_tatoeba(tmp_path, "xyz")
    with pytest.raises(DataError, match=r"tatoeba\.abc-eng\.abc: expected the Tatoeba file"):
        read_tatoeba(tmp_path, "abc")


def test_bucc_dev(data_root):
    folder = require_file(data_root, "bucc2018")
    corpus = read_bucc(folder, "zh-en", "dev")
    assert (len(corpus.src), len(corpus.tgt), len(corpus.gold)) == (
        8624,
        13589,
        257,
    )  # wc -l of the three files
    assert corpus.gold[0] == ("zh-000000057", "en-000008530")
    assert (
        corpus.tgt["en-000000003"]
        == "In response, Sunni sheiks banded together to drive insurgents from Ramadi."
    )


def write_bucc(tmp_path, zh="zh-1\t你好\n", en="en-1\thello\n", gold="zh-1\ten-1\n"):
    (tmp_path / "zh-en.dev.zh").write_text(zh)
    (tmp_path / "zh-en.dev.en").write_text(en)
    if gold is not None:
        (tmp_path / "zh-en.dev.gold").write_text(gold)


def test_bucc_without_gold(tmp_path):
    write_bucc(tmp_path, gold=None)
    assert read_bucc(tmp_path, require_gold=False).gold == []
    with pytest.raises(DataError, match=r"zh-en\.dev\.gold: expected a readable file"):
        read_bucc(tmp_path)


@pytest.mark.parametrize(
    "kwargs, name, line",
    [
        ({"zh": "zh-1\t你好\nzh-2\n"}, "zh", 2),  # no tab
        ({"zh": "zh-1\t你好\nzh-1\t再见\n"}, "zh", 2),  # duplicate id
        ({"en": "en-1\thello\tworld\n"}, "en", 1),  # a tab inside the sentence
        ({"gold": "zh-1\ten-1\nzh-9\ten-1\n"}, "gold", 2),  # unknown id
        ({"gold": "zh-1 en-1\n"}, "gold", 1),  # space instead of tab
    ],
)
def test_bucc_malformed(tmp_path, kwargs, name, line):
    write_bucc(tmp_path, **kwargs)
    path = tmp_path / f"zh-en.dev.{name}"
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:{line}: expected"):
        read_bucc(tmp_path)
