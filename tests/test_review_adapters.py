"""Review of the fine-tuning adapters against XTREME's official code (google-research/xtreme ``third_party/``):
each test pins one behaviour where xeval differed from it on a tiny case."""

from __future__ import annotations

import copy

import pytest
import torch

from tests import helpers_transfer
from tests.helpers_transfer import context
from xeval.adapters import tagging
from xeval.adapters.training import IGNORE_INDEX, Recipe
from xeval.data.examples import TaggedSentence
from xeval.tasks import load_suite


@pytest.fixture(scope="module")
def tiny_encoder(data_root):
    return helpers_transfer.tiny_encoder(data_root)


def _sentence(tokens, tags=None):
    return TaggedSentence(list(tokens), list(tags) if tags else None, "en", "test", "<test>", 1)


def _tagging(encoder, tmp_path, data_root, **recipe):
    card = load_suite("xtreme-mini").card("udpos")
    ctx = context(encoder, data_root, tmp_path, recipe=recipe)
    fam = tagging.Tagging(card, ctx, Recipe.build(card.recipe, ctx.options["recipe"]))
    fam.setup([])
    return fam


# Zero-width and format characters (U+200B, U+200E/F, U+FEFF, U+FFFD ...) occur as whole "words" in the UD
# treebanks (he, ko, zh, ta, it dev sets). BERT-style normalisers delete them, so the word has no subword.
# XTREME's utils_tag.py tokenizes such a word as the unknown token, so it keeps its label and is predicted.
ZERO_TOKEN_WORDS = ["\u200b", "\u200f\u200f", "\ufeff", "\ufffd"]


@pytest.mark.parametrize("word", ZERO_TOKEN_WORDS)
def test_a_word_without_subwords_is_the_unknown_token(tiny_encoder, tmp_path, data_root, word):
    tok = tiny_encoder.tokenizer
    assert tok.tokenize(word) == [], "the test needs a word this tokenizer maps to nothing"
    fam = _tagging(tiny_encoder, tmp_path, data_root)
    words, tags = ["the", word, "cat"], ["DET", "PUNCT", "NOUN"]
    [feat] = fam.features([_sentence(words, tags)])
    labelled = [(i, y) for i, y in zip(feat["input_ids"], feat["labels"]) if y != IGNORE_INDEX]
    assert [y for _, y in labelled] == [fam.index[t] for t in tags], "every word keeps its label"
    assert labelled[1][0] == tok.unk_token_id


def test_a_word_without_subwords_is_predicted_by_the_model(tiny_encoder, tmp_path, data_root):
    fam = _tagging(tiny_encoder, tmp_path, data_root)
    model = fam.build_model(copy.deepcopy(tiny_encoder.model)).eval()
    with torch.no_grad():  # a head that says NOUN everywhere
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[fam.index["NOUN"]] = 10.0
    assert fam.predict(model, [_sentence(["the", "\u200b", "cat"])]) == [["NOUN", "NOUN", "NOUN"]]
