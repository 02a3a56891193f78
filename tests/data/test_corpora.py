"""MUSE dictionaries and pre-training corpora (gettext pairs, line-aligned text, monolingual) readers."""

from __future__ import annotations

import gzip
import itertools
import re

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError
from xeval.data.corpora import iter_line_aligned, iter_monolingual, iter_parallel_tsv
from xeval.data.dictionaries import read_dictionary


def at(path, line: int):
    return pytest.raises(DataError, match=rf"^{re.escape(str(path))}:{line}: expected")


def test_muse_space_and_tab(data_root):
    full = require_file(data_root, "muse_dictionaries/full/en-de.txt")
    pairs = read_dictionary(full)
    with open(full, encoding="utf-8") as handle:
        assert len(pairs) == sum(1 for _ in handle) == 101931
    assert pairs[:2] == [("the", "die"), ("the", "der")]
    tab = read_dictionary(
        require_file(data_root, "muse_dictionaries/test_5000-6500_annotated/de-en.5000-6500.nw.txt")
    )
    assert len(tab) == 276 and tab[0] == ("regime", "regimes")


def test_dictionary_malformed(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("a b\nc d e\n")
    with at(path, 2):
        read_dictionary(path)


def test_gettext_pairs_first_items(data_root):
    path = require_file(data_root, "parallel/gettext_mo/en-de.tsv.gz")
    first = list(itertools.islice(iter_parallel_tsv(path), 100))
    assert first[0].src == "%a %b %e %H:%M:%S %Z %Y" and first[0].domain == "Linux-PAM"
    assert first[0].line == 2  # the '#' header is line 1
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        expected = [line.rstrip("\n").split("\t") for line in itertools.islice(handle, 1, 101)]
    assert [[p.src, p.tgt, p.domain] for p in first] == expected


def test_gettext_malformed(tmp_path):
    path = tmp_path / "en-xx.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("# en\txx\tdomain\nHello\tHallo\tapp\nOnly one side\n")
    items = iter_parallel_tsv(path)
    assert next(items).tgt == "Hallo"
    with at(path, 3):
        next(items)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "x.txt.gz"
    path.write_bytes(gzip.compress(b"line one\nline two\n" * 50)[:-30])
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:\d+: expected a readable gzip file"):
        list(iter_monolingual(path))


def test_multi30k_line_aligned(data_root):
    en = require_file(data_root, "parallel/multi30k_task1_raw/val.en.gz")
    de = require_file(data_root, "parallel/multi30k_task1_raw/val.de.gz")
    pairs = list(iter_line_aligned(en, de))
    assert len(pairs) == 1014


def test_wmt_plain_line_aligned(data_root):
    src = require_file(data_root, "parallel/wmt22_generaltest/generaltest2022.de-en.src.de")
    ref = require_file(data_root, "parallel/wmt22_generaltest/generaltest2022.de-en.ref.A.en")
    assert sum(1 for _ in iter_line_aligned(src, ref)) == 1984


def test_line_aligned_mismatch(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("1\n2\n3\n")
    b.write_text("1\n2\n")
    pairs = iter_line_aligned(a, b)
    assert [next(pairs), next(pairs)] == [("1", "1"), ("2", "2")]
    with at(a, 3):
        next(pairs)


def test_manpages_skip_headers_and_blanks(data_root):
    path = require_file(data_root, "monolingual/debian_manpages/de.txt.gz")
    first = list(itertools.islice(iter_monolingual(path), 3))
    assert first[0] == "AusweisApp2(1) General Commands Manual AusweisApp2(1)"  # the '### ...' header skipped
    assert not any(p.startswith("### ") or not p.strip() for p in first)


def test_fortunes_unescape(data_root):
    path = require_file(data_root, "monolingual/debian_fortunes/de.txt.gz")
    (raw,) = itertools.islice(iter_monolingual(path), 1)
    (text,) = itertools.islice(iter_monolingual(path, unescape_newlines=True), 1)
    assert "\\n" in raw and text == raw.replace("\\n", "\n")
