"""Word-alignment reader: 1-based gold with possible links, 0-based predictions, malformed files."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError
from xeval.data.alignment_gold import read_alignment, read_links, read_text_pairs


def count_links(path) -> tuple[int, int]:
    items = path.read_text().split()
    return sum("p" in x for x in items), sum("-" in x for x in items)


@pytest.mark.parametrize(
    "pair, system, n",
    [("deen", "cross-align", 508), ("enfr", "awesome-align", 447), ("roen", "awesome-align", 248)],
)
def test_real_gold_and_predictions(data_root, pair, system, n):
    text = require_file(data_root, f"word_alignment/{pair}.src-tgt")
    gold_path = require_file(data_root, f"word_alignment/{pair}.gold")
    gold = read_alignment(text, gold_path, pair, gold_base=1)
    assert len(gold) == n
    n_possible, n_sure = count_links(gold_path)
    assert sum(len(p.sure) for p in gold) == n_sure
    assert sum(len(p.possible) for p in gold) == n_possible
    assert all(i < len(p.src_tokens) and j < len(p.tgt_tokens) for p in gold for i, j in p.sure | p.possible)
    assert min(min(i, j) for p in gold for i, j in p.sure) == 0  # 1-based file, 0-based in memory
    pred_path = require_file(data_root, f"word_alignment/{pair}.{system}.out")
    pred = read_alignment(text, pred_path, pair, gold_base=0)
    assert sum(len(p.sure) for p in pred) == count_links(pred_path)[1]


def test_deen_first_pair(data_root):
    gold = read_alignment(
        require_file(data_root, "word_alignment/deen.src-tgt"),
        require_file(data_root, "word_alignment/deen.gold"),
        "de-en",
    )
    first = gold[0]
    assert first.src_tokens[:3] == ["Wir", "glauben", "nicht"] and first.tgt_tokens[-1] == "."
    assert (0, 0) in first.sure and (8, 7) in first.sure  # "1-1", "9-8"
    assert (first.lang, first.line) == ("de-en", 1)


def test_possible_links_and_overlap(tmp_path):
    links = tmp_path / "x.gold"
    links.write_text("1-1 2p2 2-2 3p1\n\n")
    (sure, possible), (s2, p2) = read_links(links, 1)
    assert sure == {(0, 0), (1, 1)} and possible == {(2, 0)}  # 2p2 is also sure: counted once, as sure
    assert s2 == set() and p2 == set()  # a pair without links


def write_pair(tmp_path, text, links):
    (tmp_path / "t.src-tgt").write_text(text)
    (tmp_path / "t.gold").write_text(links)
    return tmp_path / "t.src-tgt", tmp_path / "t.gold"


@pytest.mark.parametrize(
    "text, links, base, bad, line",
    [
        ("a b ||| x y\n", "0-1\n", 1, "gold", 1),  # 0 in a 1-based file
        ("a b ||| x y\n", "3-1\n", 1, "gold", 1),  # beyond the source length
        ("a b ||| x y\n", "1-2\n", 0, "gold", 1),  # 0-based: 2 is past "y"
        ("a b ||| x y\n", "1-1 2x2\n", 1, "gold", 1),  # not a link
        ("a b ||| x y\nc ||| z\n", "1-1\n", 1, "gold", 2),  # fewer link lines than text lines
        ("a b ||| x y\n", "1-1\n1-1\n", 1, "gold", 2),  # more link lines
        ("a b x y\n", "1-1\n", 1, "src-tgt", 1),  # no separator
        ("a b ||| \n", "1-1\n", 1, "src-tgt", 1),  # empty side
    ],
)
def test_malformed(tmp_path, text, links, base, bad, line):
    text_path, links_path = write_pair(tmp_path, text, links)
    path = text_path if bad == "src-tgt" else links_path
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:{line}: expected"):
        read_alignment(text_path, links_path, "xx-yy", gold_base=base)


def test_skip_out_of_range_with_warning(tmp_path):
    text_path, links_path = write_pair(tmp_path, "a b ||| x y\n", "1-1 3-1 2p2\n")
    with pytest.warns(UserWarning, match="skipped 1 out-of-range"):
        (pair,) = read_alignment(text_path, links_path, "xx-yy", on_out_of_range="skip")
    assert pair.sure == {(0, 0)} and pair.possible == {(1, 1)}


def test_base_is_explicit(tmp_path):
    _, links_path = write_pair(tmp_path, "a ||| x\n", "0-0\n")
    with pytest.raises(ValueError):
        read_links(links_path, 2)
    assert read_text_pairs(tmp_path / "t.src-tgt") == [(["a"], ["x"])]
