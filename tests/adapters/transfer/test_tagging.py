import copy

import pytest
import torch

from tests.helpers.transfer import FAST, context
from xeval.adapters.transfer import base as transfer_base
from xeval.adapters.transfer import tagging
from xeval.adapters.transfer.fine_tuning import IGNORE_INDEX, fine_tune, set_seed
from xeval.adapters.transfer.recipe import Recipe
from xeval.base.errors import ConfigError
from xeval.cards.catalog import load_suite
from xeval.data.examples import TaggedSentence


@pytest.fixture(scope="module")
def udpos():
    return load_suite("xtreme-mini").card("udpos")


def sentence(tokens, tags=None):
    return TaggedSentence(list(tokens), list(tags) if tags else None, "en", "test", "<test>", 1)


def family(encoder, card, tmp_path, data_root, **recipe):
    ctx = context(encoder, data_root, tmp_path, recipe=recipe)
    fam = tagging.Tagging(card, ctx, Recipe.build(card.recipe, ctx.tasks.recipe))
    fam.setup([])
    return fam


def test_word_windows():
    assert tagging.word_windows([1, 2, 1, 3, 1], 4) == [(0, 3), (3, 5)]
    assert tagging.word_windows([5, 1], 4) == [(0, 1), (1, 2)]
    assert tagging.word_windows([], 4) == []


def test_first_subword_carries_the_label(tiny_encoder, udpos, tmp_path, data_root):
    fam = family(tiny_encoder, udpos, tmp_path, data_root)
    words = ["Unbelievably", "quick", "foxes", "jumped"]
    tags = ["ADV", "ADJ", "NOUN", "VERB"]
    [feat] = fam.features([sentence(words, tags)])
    word_ids = tiny_encoder.tokenizer(words, is_split_into_words=True).word_ids()
    assert word_ids.count(0) > 1, "the test needs a word split into several subwords"
    expected, previous = [], None
    for w in word_ids:
        expected.append(IGNORE_INDEX if w is None or w == previous else fam.index[tags[w]])
        previous = w
    assert feat["labels"] == expected
    assert sum(label != IGNORE_INDEX for label in feat["labels"]) == len(words)


def test_long_sentence_is_split_and_rejoined(tiny_encoder, udpos, tmp_path, data_root):
    fam = family(tiny_encoder, udpos, tmp_path, data_root, max_length=8)
    words = ("the European Commission said on Thursday it disagreed with German advice to consumers to shun "
             "British lamb until scientists determine whether mad cow disease can be transmitted").split()
    spans = fam.windows([words])
    assert len(spans) > 3 and spans[0][1] == 0 and spans[-1][2] == len(words)
    assert all(a[2] == b[1] for a, b in zip(spans, spans[1:])), "windows are consecutive, nothing dropped"
    enc, _ = fam.encode([words], spans)
    assert max(len(ids) for ids in enc["input_ids"]) <= 8
    model = fam.build_model(copy.deepcopy(tiny_encoder.model)).eval()
    [tags] = fam.predict(model, [sentence(words)])
    assert len(tags) == len(words)
    # Re-joining = predicting each window as a sentence of its own, in order.
    pieces = fam.predict(model, [sentence(words[s:e]) for _, s, e in spans])
    assert tags == [t for piece in pieces for t in piece]
    # Training features cover every word of every window.
    feats = fam.features([sentence(words, ["NOUN"] * len(words))])
    assert sum(sum(x != IGNORE_INDEX for x in f["labels"]) for f in feats) == len(words)


def test_a_word_longer_than_the_window_keeps_its_label(tiny_encoder, udpos, tmp_path, data_root):
    fam = family(tiny_encoder, udpos, tmp_path, data_root, max_length=4)
    words = ["a", "Supercalifragilisticexpialidocious", "b"]
    feats = fam.features([sentence(words, ["DET", "ADJ", "X"])])
    assert [sum(x != IGNORE_INDEX for x in f["labels"]) for f in feats] == [1, 1, 1]
    model = fam.build_model(copy.deepcopy(tiny_encoder.model)).eval()
    assert len(fam.predict(model, [sentence(words)])[0]) == 3


def test_training_is_deterministic(tiny_encoder, udpos, tmp_path, data_root):
    fam = family(tiny_encoder, udpos, tmp_path, data_root)
    feats = fam.features([sentence("the cat sat on the mat".split(), ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]),
                          sentence("der Hund schläft".split(), ["DET", "NOUN", "VERB"])] * 4)
    recipe = Recipe.build({"batch_size": 4, "epochs": 2, "learning_rate": 1e-3})
    states = []
    for _ in range(2):
        set_seed(3)
        model = fam.build_model(copy.deepcopy(tiny_encoder.model))
        report = fine_tune(model, feats, recipe, seed=3, pad_token_id=0)
        states.append(model.state_dict())
    assert report.steps == 4 and report.examples == 16
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])


def test_bf16_training_is_deterministic_close_to_fp32_and_not_equal(tiny_encoder, udpos, tmp_path, data_root):
    """recipe precision=bf16: training under bf16 autocast keeps fp32 weights, repeats bit for bit, and lands
    near the fp32 weights (not on them: the autocast is really on)."""
    fam = family(tiny_encoder, udpos, tmp_path, data_root)
    feats = fam.features([sentence("the cat sat on the mat".split(), ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]),
                          sentence("der Hund schläft".split(), ["DET", "NOUN", "VERB"])] * 4)
    states = {}
    for precision in ("fp32", "bf16", "bf16"):
        set_seed(3)
        model = fam.build_model(copy.deepcopy(tiny_encoder.model))
        recipe = Recipe.build({"batch_size": 4, "epochs": 1, "learning_rate": 1e-3, "precision": precision})
        fine_tune(model, feats, recipe, seed=3, pad_token_id=0)
        state = model.state_dict()
        assert all(v.dtype != torch.bfloat16 for v in state.values())
        if precision in states:
            assert all(torch.equal(states[precision][k], state[k]) for k in state)
        states[precision] = state
    gap = max(float((states["bf16"][k].float() - states["fp32"][k].float()).abs().max()) for k in state)
    assert 0 < gap < 0.05
    with pytest.raises(ConfigError, match="precision"):
        Recipe.build({"precision": "fp16"})


@pytest.mark.slow
def test_run_stores_records_and_resumes(tiny_encoder, udpos, tmp_path, data_root, monkeypatch):
    before = {k: v.clone() for k, v in tiny_encoder.model.state_dict().items()}
    [record] = tagging.run(udpos, ["en"], context(tiny_encoder, data_root, tmp_path))
    assert all(torch.equal(before[k], v) for k, v in tiny_encoder.model.state_dict().items()), "backbone copied"
    assert record.unit.task == "udpos" and record.unit.model == tiny_encoder.key and record.unit.seed == 1
    assert {"f1", "precision", "recall", "token_accuracy"} <= set(record.metrics)
    assert record.n_examples == FAST["max_eval"] and record.card["hash"] == udpos.hash
    assert record.config["recipe"]["max_train"] == FAST["max_train"] and record.data["files"]
    assert record.model["hash"] == tiny_encoder.weights_hash and record.provenance["versions"]
    assert record.extra["training"]["best_step"] is not None, "selected on the English dev set"

    def no_training(*args, **kwargs):
        raise AssertionError("a resumed run must not train")

    monkeypatch.setattr(transfer_base, "fine_tune", no_training)
    [again] = tagging.run(udpos, ["en"], context(tiny_encoder, data_root, tmp_path))
    assert again.metrics == record.metrics
