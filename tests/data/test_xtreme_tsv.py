"""XTREME tsv readers (udpos / panx tagging, xnli / pawsx pairs) on the real files and on malformed ones."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError
from xeval.data.xtreme_tsv import read_pairs, read_tagging


def count_blocks(path) -> int:
    """Sentences = runs of non-blank lines, counted independently of the reader."""
    text = path.read_text(encoding="utf-8")
    return len([b for b in re.split(r"\n\s*\n", text) if b.strip()])


def raises_at(path, line: int):
    return pytest.raises(DataError, match=rf"^{re.escape(str(path))}:{line}: expected")


# --- tagging on real data ---------------------------------------------------------------------------------------


def test_udpos_train_en_counts(data_root):
    path = require_file(data_root, "udpos_xtreme/train-en.tsv")
    sents = read_tagging(path, "en", "train")
    assert len(sents) == 21253 == count_blocks(path)  # the data README's number
    n_lines = sum(1 for line in path.open(encoding="utf-8") if line.strip())
    assert sum(len(s.tokens) for s in sents) == n_lines
    first = sents[0]
    assert (first.lang, first.split, first.line, first.source) == ("en", "train", 1, str(path))
    assert all(len(s.tokens) == len(s.tags) for s in sents)


def test_udpos_dev_de_first_sentence(data_root):
    sents = read_tagging(require_file(data_root, "udpos_xtreme/dev-de.tsv"), "de", "dev")
    assert sents[0].tokens == ["Manasse", "ist", "ein", "einzigartiger", "Parfümeur", "."]
    assert sents[0].tags == ["PROPN", "AUX", "DET", "ADJ", "NOUN", "PUNCT"]
    assert sents[1].line == 8  # 6 words + 1 blank line before it


def test_panx_dev_and_test(data_root):
    dev = read_tagging(require_file(data_root, "panx_xtreme/dev-de.tsv"), "de", "dev")
    assert len(dev) == 10000
    labels = set(require_file(data_root, "panx_xtreme/labels.txt").read_text().split())
    assert {t for s in dev for t in s.tags} <= labels
    test_tr = require_file(data_root, "panx_xtreme/test-tr.tsv")
    sents = read_tagging(test_tr, "tr", "test")
    assert len(sents) == count_blocks(test_tr) == 10000
    # a real token with a colon is not a language prefix: it stays as it is
    assert any("at:1994" in s.tokens for s in sents)


# --- tagging variants on small files ------------------------------------------------------------------------------


def test_label_free_crlf_trailing_blank(tmp_path):
    path = tmp_path / "test-de.tsv"
    path.write_bytes(b"Das\r\nist\r\n\r\ngut\r\n\r\n\r\n")
    sents = read_tagging(path, "de", "test")
    assert [s.tokens for s in sents] == [["Das", "ist"], ["gut"]]
    assert all(s.tags is None for s in sents)
    assert [s.line for s in sents] == [1, 4]


def test_missing_final_blank_line(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_text("a\tO\n\nb\tB-PER")
    assert [s.tags for s in read_tagging(path, "en", "dev")] == [["O"], ["B-PER"]]


def test_raw_panx_language_prefix(tmp_path):
    path = tmp_path / "en-dev"
    path.write_text("en:John\tB-PER\nen:at:home\tO\n\nen:x\tO\n")
    sents = read_tagging(path, "en", "dev")
    assert sents[0].tokens == ["John", "at:home"] and sents[1].tokens == ["x"]
    assert read_tagging(path, "en", "dev", lang_prefix=False)[0].tokens[0] == "en:John"
    bad = tmp_path / "mixed"
    bad.write_text("en:John\tB-PER\nSmith\tI-PER\n")
    with raises_at(bad, 2):
        read_tagging(bad, "en", "dev")


@pytest.mark.parametrize(
    "content, line",
    [
        ("a\tO\nb\tO\textra\n", 2),  # three fields
        ("a\tO\nb\n", 2),  # labelled file, then a label-free line
        ("a\tO\n\tO\n", 2),  # empty token
        ("a\tO\nb\t \n", 2),  # empty tag
    ],
)
def test_tagging_malformed(tmp_path, content, line):
    path = tmp_path / "bad.tsv"
    path.write_text(content)
    with raises_at(path, line):
        read_tagging(path, "en", "dev")


def test_bad_utf8_names_the_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_bytes(b"a\tO\n\xff\tO\n")
    with raises_at(path, 2):
        read_tagging(path, "en", "dev")


# --- pairs on real data -------------------------------------------------------------------------------------------


def test_xnli_dev_crlf(data_root):
    path = require_file(data_root, "xnli_xtreme/dev-de.tsv")
    assert b"\r\n" in path.read_bytes()[:2000]
    pairs = read_pairs(path, "de", "dev")
    assert len(pairs) == 2490
    assert {p.label for p in pairs} == {"entailment", "neutral", "contradiction"}
    assert not any(p.label.endswith("\r") or p.text_b.endswith("\r") for p in pairs)
    assert pairs[0].text_a == "und er hat gesagt, Mama ich bin daheim."


def test_xnli_test_labeled_de(data_root):
    pairs = read_pairs(require_file(data_root, "xnli_xtreme/test_labeled_de/xnli.test.de.tsv"), "de", "test")
    assert len(pairs) == 5010


def test_pawsx_csv_quoting_matches_original(data_root):
    xtreme = read_pairs(require_file(data_root, "pawsx_xtreme/dev-de.tsv"), "de", "dev")
    original = read_pairs(require_file(data_root, "pawsx_xtreme/labeled_de/pawsx.dev.de.tsv"), "de", "dev")
    assert len(xtreme) == len(original) == 2000
    assert [(p.text_a, p.text_b, p.label) for p in xtreme] == [
        (p.text_a, p.text_b, p.label) for p in original
    ]
    quoted = next(p for p in xtreme if "IPA" in p.text_a)
    assert quoted.text_a.startswith('Die "IPA" besteht')
    assert original[0].line == 2  # the header is line 1


def test_pawsx_other_languages(data_root):
    for lang in ("en", "fr", "ko"):
        pairs = read_pairs(require_file(data_root, f"pawsx_xtreme/dev-{lang}.tsv"), lang, "dev")
        assert len(pairs) == 2000 and {p.label for p in pairs} == {"0", "1"}


# --- pair variants on small files ---------------------------------------------------------------------------------


def test_original_xnli_header_by_name(tmp_path):
    path = tmp_path / "xnli.dev.tsv"
    header = (
        "language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\tpromptID\tsentence1\tsentence2"
    )
    path.write_text(
        header + "\n"
        "de\tneutral\t(x)\t(y)\t1\tEin Satz.\tNoch einer.\n"
        'en\tcontradictory\t(x)\t(y)\t1\tA "quoted" one.\tAnother.\n'
    )
    de = read_pairs(path, "de", "dev")
    assert [(p.text_a, p.text_b, p.label, p.line) for p in de] == [("Ein Satz.", "Noch einer.", "neutral", 2)]
    en = read_pairs(path, "en", "dev")
    assert en[0].label == "contradiction" and en[0].text_a == 'A "quoted" one.'  # header files: verbatim


def test_label_free_pairs(tmp_path):
    path = tmp_path / "test-de.tsv"
    path.write_bytes(b'"a ""b"" c"\td\r\ne\tf\r\n')
    pairs = read_pairs(path, "de", "test")
    assert [(p.text_a, p.text_b, p.label) for p in pairs] == [('a "b" c', "d", None), ("e", "f", None)]


@pytest.mark.parametrize(
    "content, line",
    [
        ("a\tb\t1\na\tb\n", 2),  # column count changes
        ("a\tb\t1\na\tb\t1\tx\n", 2),  # four fields
        ('a\tb\t1\n"a"x\tb\t1\n', 2),  # text after a closing quote
        ('a\tb\t1\n"a\tb\t1\n', 2),  # unterminated quote
        ("a\tb\t1\n\tb\t1\n", 2),  # empty text
        ("id\tsentence1\tsentence2\tlabel\n1\ta\tb\n", 2),  # fewer fields than the header
    ],
)
def test_pairs_malformed(tmp_path, content, line):
    path = tmp_path / "bad.tsv"
    path.write_text(content)
    with raises_at(path, line):
        read_pairs(path, "de", "dev")
