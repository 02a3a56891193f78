"""CoNLL-U reader: XTREME's fused-form default checked against XTREME's own udpos files, plus malformed input."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError
from xeval.data.conllu import read_conllu
from xeval.data.xtreme_tsv import read_tagging

SAMPLE = """# sent_id = s1
# text = Ich gehe zum Haus.
1\tIch\tich\tPRON\tPPER\t_\t2\tnsubj\t_\t_
2\tgehe\tgehen\tVERB\tVVFIN\t_\t0\troot\t_\t_
2.1\tgehe\tgehen\tVERB\t_\t_\t_\t_\t0:root\t_
3-4\tzum\t_\t_\t_\t_\t_\t_\t_\t_
3\tzu\tzu\tADP\tAPPR\t_\t5\tcase\t_\t_
4\tdem\tder\tDET\tART\t_\t5\tdet\t_\t_
5\tHaus\tHaus\tNOUN\tNN\t_\t2\tobl\t_\t_
6\t.\t.\tPUNCT\t$.\t_\t2\tpunct\t_\t_

# sent_id = s2
1-2\tdámelo\t_\t_\t_\t_\t_\t_\t_\t_
1\tda\tdar\tVERB\t_\t_\t0\troot\t_\t_
2\tmelo\tyo\tPRON\t_\t_\t1\tiobj\t_\t_
3\thải quân\thải quân\tNOUN\t_\t_\t1\tobj\t_\t_
"""


def test_multiword_surface_and_words(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_text(SAMPLE)
    surface = read_conllu(path, "de", "dev")
    # zum: both words hang off "Haus" (a tie) -> ADP outranks DET; dámelo: "da" is the span's head -> VERB
    assert [(s.tokens, s.tags) for s in surface] == [
        (["Ich", "gehe", "zum", "Haus", "."], ["PRON", "VERB", "ADP", "NOUN", "PUNCT"]),
        (["dámelo", "hảiquân"], ["VERB", "NOUN"]),  # XTREME removes spaces inside words
    ]
    assert [s.line for s in surface] == [3, 13]
    words = read_conllu(path, "de", "dev", multiword="words", xtreme_normalize=False)
    assert words[0].tokens == ["Ich", "gehe", "zu", "dem", "Haus", "."]  # empty node 2.1 skipped
    assert words[1].tokens == ["da", "melo", "hải quân"]


def test_underscore_sentences_dropped_like_xtreme(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_text("1\t_\t_\tNOUN\t_\t_\t0\troot\t_\t_\n2\t_\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n" + SAMPLE)
    assert len(read_conllu(path, "de", "dev")) == 2
    assert len(read_conllu(path, "de", "dev", xtreme_normalize=False)) == 3


@pytest.mark.parametrize(
    "treebank, tsv, lang, prefix_only",
    [
        (
            "UD_Hebrew-HTB/he_htb-ud-dev.conllu",
            "udpos_xtreme/dev-he.tsv",
            "he",
            False,
        ),  # many multi-word tokens
        ("UD_Turkish-IMST/tr_imst-ud-dev.conllu", "udpos_xtreme/dev-tr.tsv", "tr", False),
        ("UD_Vietnamese-VTB/vi_vtb-ud-dev.conllu", "udpos_xtreme/dev-vi.tsv", "vi", False),  # spaces in words
        ("UD_German-GSD/de_gsd-ud-dev.conllu", "udpos_xtreme/dev-de.tsv", "de", True),  # GSD first, then HDT
        ("UD_English-EWT/en_ewt-ud-dev.conllu", "udpos_xtreme/dev-en.tsv", "en", True),  # empty nodes
    ],
)
def test_default_reproduces_xtreme_udpos(data_root, treebank, tsv, lang, prefix_only):
    ours = read_conllu(require_file(data_root, f"ud_v2.5/{treebank}"), lang, "dev")
    xtreme = read_tagging(require_file(data_root, tsv), lang, "dev")
    if prefix_only:
        xtreme = xtreme[: len(ours)]
    assert len(ours) == len(xtreme)
    assert [(s.tokens, s.tags) for s in ours] == [(s.tokens, s.tags) for s in xtreme]


def test_german_contractions(data_root):
    path = require_file(data_root, "ud_v2.5/UD_German-GSD/de_gsd-ud-dev.conllu")
    surface = read_conllu(path, "de", "dev")
    words = read_conllu(path, "de", "dev", multiword="words")
    ranges = sum(1 for line in path.open(encoding="utf-8") if re.match(r"^\d+-\d+\t", line))
    n_surface = sum(len(s.tokens) for s in surface)
    n_words = sum(len(s.tokens) for s in words)
    assert ranges > 100 and n_words - n_surface == ranges  # every range here spans two words
    im = next(s for s in surface if "im" in s.tokens)
    assert im.tags[im.tokens.index("im")] == "ADP"


@pytest.mark.parametrize(
    "content, line",
    [
        ("1\ta\ta\tNOUN\t_\t_\t0\troot\t_\n", 1),  # 9 columns
        ("1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n3\tb\tb\tNOUN\t_\t_\t1\tdep\t_\t_\n", 2),  # id jumps
        ("1\ta\ta\t_\t_\t_\t0\troot\t_\t_\n", 1),  # no UPOS
        ("1\ta\ta\tNOUN\t_\t_\tx\troot\t_\t_\n", 1),  # bad head
        ("1\ta\ta\tNOUN\t_\t_\t5\troot\t_\t_\n", 1),  # head outside the sentence
        ("2-1\tab\t_\t_\t_\t_\t_\t_\t_\t_\n", 1),  # bad range
        (
            "# c\n1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n",
            2,
        ),  # range past the end
        ("1.x\ta\ta\tNOUN\t_\t_\t_\t_\t_\t_\n", 1),  # bad empty node id
    ],
)
def test_conllu_malformed(tmp_path, content, line):
    path = tmp_path / "bad.conllu"
    path.write_text(content)
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:{line}: expected"):
        read_conllu(path, "xx", "dev")
