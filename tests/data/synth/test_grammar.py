"""The synthetic grammar and lexicon: word order, adjective placement, morphology, vocabulary overlap."""

from __future__ import annotations

import gzip

import pytest

from xeval.base.errors import UserError
from xeval.data.synth import Sizes, WorldConfig, build_world
from xeval.data.synth.grammar import NP, PP, Clause, Sentence, alignment, realise, text
from xeval.data.synth.task_files import corpora
from xeval.data.synth.words import SCRIPTS, STOP, key

SMALL = Sizes(mono=120, parallel=40, train=0, dev=0, test=0, tatoeba=0, alignment=0)


def _sentence() -> Sentence:
    """Anna saw the big dogs in Paris . -- built by hand, node ids 1..9."""
    subj = NP("PER", (1, key("first", 0)))
    obj = NP("common", (5, key("noun", 0)), det=(3, key("det", 0)), adjs=((4, key("adj", 0)),), plural=True)
    pp = PP((6, key("adp", 0)), NP("LOC", (7, key("place", 0))))
    return Sentence((Clause(subj, (2, key("vt", 0)), obj, None, pp),), (), (9, STOP))


@pytest.fixture(scope="module")
def typology_world():
    return build_world(WorldConfig(languages=4, overlap=(1.0,), order=("SVO", "SOV", "VSO", "SVO"),
                                   adj=("before", "after", "before", "after"),
                                   morph=("plural", "plural+case", "none", "case"), sizes=SMALL))  # fmt: skip


def test_word_order_and_adjective_placement(typology_world):
    sentence = _sentence()
    orders = {}
    for lang in typology_world.languages:
        tokens = realise(sentence, lang)
        orders[lang.code] = [t.node for t in tokens]
        assert [t.ner for t in tokens if t.node in (1, 7)] == ["B-PER", "B-LOC"]
    # node ids: 1 subject, 2 verb, 3 det, 4 adj, 5 noun (object), 6 adposition, 7 place, 9 full stop
    assert orders["qaa"] == [1, 2, 3, 4, 5, 6, 7, 9]  # SVO, adjective before, preposition
    assert orders["qab"] == [1, 7, 6, 3, 5, 4, 2, 9]  # SOV: postposition, PP before the object; adjective after
    assert orders["qac"] == [2, 1, 3, 4, 5, 6, 7, 9]  # VSO
    assert orders["qad"] == [1, 2, 3, 5, 4, 6, 7, 9]  # SVO, adjective after


def test_morphology_suffixes(typology_world):
    sentence = _sentence()
    qaa, qab, qac, qad = typology_world.languages
    noun = key("noun", 0)
    pl, acc = qaa.forms["suf:000.0"], qaa.forms["suf:001.0"]  # overlap 1: every language uses the base forms
    words = {lang.code: {t.node: t.form for t in realise(sentence, lang)} for lang in typology_world.languages}
    assert words["qaa"][5] == qaa.forms[noun] + pl  # plural only
    assert words["qab"][5] == qaa.forms[noun] + pl + acc  # plural + accusative object
    assert words["qac"][5] == qaa.forms[noun]  # no morphology
    assert words["qad"][5] == qaa.forms[noun] + acc and words["qad"][1] == qaa.forms[key("first", 0)]  # subject unmarked
    assert qab.analyse(words["qab"][5]) == (noun, True, True)


def test_alignment_pairs_equal_nodes(typology_world):
    sentence = _sentence()
    qaa, qab = typology_world.languages[:2]
    src, tgt = realise(sentence, qab), realise(sentence, qaa)
    links = alignment(src, tgt)
    assert len(links) == len(src) == len(tgt)
    assert all(src[i].node == tgt[j].node for i, j in links)
    assert text(src).split()[-1] == "."


def _vocabularies(world) -> dict[str, set[str]]:
    files = corpora(world, set())
    return {
        lang.code: set(gzip.decompress(files[f"monolingual/{lang.code}.txt.gz"]).decode().split())
        for lang in world.languages
    }


def test_overlap_zero_gives_disjoint_vocabularies_and_scripts():
    world = build_world(WorldConfig(languages=5, overlap=(0.0,), sizes=SMALL))
    vocab = _vocabularies(world)
    codes = sorted(vocab)
    for i, a in enumerate(codes):
        for b in codes[i + 1 :]:
            assert not vocab[a] & vocab[b], (a, b)
            assert not set("".join(vocab[a])) & set("".join(vocab[b])), (a, b)  # not even a character
    for lang in world.derived:
        assert not lang.shared and not set(lang.forms.values()) & set(world.base.forms.values())


def test_overlap_one_shares_everything():
    world = build_world(WorldConfig(languages=3, overlap=(1.0,), morph=("plural",), sizes=SMALL))
    vocab = _vocabularies(world)
    for lang in world.derived:
        assert lang.forms == world.base.forms
        assert vocab[lang.code] <= {world.base.inflect(k, plural=p) for k in world.keys for p in (False, True)
                                    if not k.startswith("suf")}  # fmt: skip


def test_partial_overlap_is_exact_and_per_language():
    world = build_world(WorldConfig(languages=4, overlap=(0.0, 0.25, 0.5), sizes=SMALL))
    n = len(world.keys)
    assert [len(lang.shared) for lang in world.derived] == [0, round(0.25 * n), round(0.5 * n)]
    for lang in world.derived:
        assert sum(lang.forms[k] == world.base.forms[k] for k in world.keys) == len(lang.shared)


def test_scripts_are_disjoint_and_bad_configs_are_user_errors():
    letters = [set(s.vowels + s.consonants + s.reserved + s.stop + s.question) for s in SCRIPTS]
    assert all(not letters[i] & letters[j] for i in range(len(letters)) for j in range(i + 1, len(letters)))
    for bad in (WorldConfig(languages=len(SCRIPTS) + 1), WorldConfig(overlap=(1.5,)), WorldConfig(morph=("dual",))):
        with pytest.raises(UserError):
            build_world(bad)
