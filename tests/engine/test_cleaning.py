"""Engine cleaning: placeholders and accelerators stripped, each filter naming the reason it dropped a line."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import require_file
from xeval.engine.cleaning import CleanConfig, clean_mono, clean_pair, strip_markup
from xeval.engine.corpus import load_corpora

CFG = CleanConfig()


@pytest.mark.parametrize("text, expected", [
    ("%s: cannot open file %d", "cannot open file"),
    ("Deleted %1$s of %2$d items", "Deleted of items"),
    ("Open {0} in {name}", "Open in"),
    ("Value %(count)s is ${HOME}", "Value is"),
    ("_File", "File"), ("&Open", "Open"), ("Save &As…", "Save As…"), ("fish &amp; chips", "fish &amp; chips"),
    ("文件(_F)", "文件"), ("ファイル(&F)", "ファイル"), ("unable to read link '%s'", "unable to read link"),
    ("file_name is 100%", "file_name is 100%"),
])  # fmt: skip
def test_placeholders_and_accelerators_are_stripped(text, expected):
    assert strip_markup(text) == expected


def test_pair_filters_name_their_reason():
    assert clean_pair("Germany", "Deutschland", "iso_3166-1", CFG) == "iso_catalog"
    assert clean_pair("OK", "OK", "gtk", CFG) == "short"
    assert clean_pair("GNU Emacs editor", "GNU Emacs editor", "x", CFG) == "identical"
    assert clean_pair("Firefox web browser help", "Firefox web-browser help!", "x", CFG) == "identical"
    assert clean_pair("Configure the Bluetooth adapters", "Configurer les adaptateurs Bluetooth", "x", CFG) == (
        "Configure the Bluetooth adapters", "Configurer les adaptateurs Bluetooth")
    assert clean_pair("Color management tools", "Colour management tool", "x", CFG) == "near_identical"
    assert clean_pair("%s", "%s", "x", CleanConfig(enabled=False)) == ("%s", "%s")
    assert clean_mono("### manpages-de:man1/ls.1", CFG) == "\0header"
    assert clean_mono("-h, --help", CFG) == "\0short"
    assert clean_mono("1234 5678 9012 3456 7890 1234 5678", CFG) == "\0non_letters"
    assert clean_mono("A fortune\\nwith two lines of wisdom", CFG) == "A fortune with two lines of wisdom"


def test_real_gettext_cleaning_drops_iso_and_placeholders(data_root):
    require_file(data_root, "parallel/gettext_mo/en-de.tsv.gz")
    c = load_corpora(data_root, parallel=["gettext"], monolingual=[], languages=["de"], max_lines=3000)
    report = c.report["pairs"]["en-de"]
    assert report["iso_catalog"] > 0 and report["short"] > 0
    assert not any("%s" in a or "%d" in a for a, _ in c.pairs["en-de"])
    counts = Counter(len(a.split()) for a, _ in c.pairs["en-de"])
    assert counts[1] == 0  # one-word pairs are "very short"
