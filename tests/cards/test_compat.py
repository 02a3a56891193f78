"""``--compat xtreme``: the published XTREME pipeline's quirks on worked examples, recorded in every result; the
default stays the correct behaviour."""

from __future__ import annotations

import pytest
from torch import nn

from xeval.cards.compat import RECIPES, basic_tokenize, get_final_text, whole_words, xtreme_answer

# An XLM-R-style SentencePiece vocabulary (unigram, "▁" word marks), small enough to write by hand.
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁他在", "北京", "大学", "读书", "。", "▁Paris", "▁is", "▁nice", "."]
CONTEXT = "他在北京大学读书。 Paris is nice."


@pytest.fixture(scope="module")
def spm_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.Unigram([(p, -1.0) for p in PIECES], unk_id=3))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁")
    backend.decoder = decoders.Metaspace(replacement="▁")
    backend.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                           special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>")


def test_get_final_text_widens_a_chinese_answer_to_its_whole_word(spm_tokenizer):
    """XQuAD-zh style: the model predicts exactly the token 北京. The offsets give 北京; XTREME's get_final_text
    looks for "北京" in the basic-tokenized word "他 在 北 京 大 学 读 书 。", does not find it (BERT spaces every
    ideograph) and answers the whole whitespace word, the clause."""
    enc = spm_tokenizer(CONTEXT, add_special_tokens=False, return_offsets_mapping=True)
    assert spm_tokenizer.convert_ids_to_tokens(enc["input_ids"][:5]) == ["▁他在", "北京", "大学", "读书", "。"]
    a, b = enc["offset_mapping"][1]
    assert CONTEXT[a:b] == "北京"  # xeval's default answer
    assert xtreme_answer(spm_tokenizer, enc["input_ids"][1:2], CONTEXT, a, b) == "他在北京大学读书。"
    # English: the word "Paris" comes back exactly (get_final_text finds it and maps it back character by character)
    p = spm_tokenizer.convert_ids_to_tokens(enc["input_ids"]).index("▁Paris")
    a, b = enc["offset_mapping"][p]
    assert xtreme_answer(spm_tokenizer, enc["input_ids"][p : p + 1], CONTEXT, a, b) == "Paris"
    # and with trailing punctuation inside the whitespace word, the prediction is cut back out of it
    assert get_final_text("nice", "nice.", False) == "nice" and whole_words(CONTEXT, 19, 23) == "nice."
    assert basic_tokenize(CONTEXT, False)[:3] == ["他", "在", "北"]


def test_compat_qa_answers_through_get_final_text_in_the_family(spm_tokenizer):
    """The QA family's answer under --compat xtreme is XTREME's; the default is the characters."""
    from xeval.adapters.transfer.qa import QA
    from xeval.adapters.transfer.spans import Window

    family = QA.__new__(QA)  # only the answer step: tokenizer and mode
    family.tokenizer = spm_tokenizer
    enc = spm_tokenizer(CONTEXT, add_special_tokens=False, return_offsets_mapping=True)
    win = Window(0, enc["input_ids"], [1] * len(enc["input_ids"]), None, enc["offset_mapping"], [])
    a, b = enc["offset_mapping"][1]
    for mode, expected in (("none", "北京"), ("xtreme", "他在北京大学读书。")):
        family.compat = mode
        assert family._answer(win, CONTEXT, a, b, 1, 1) == expected


def test_compat_pos_chunks_keep_cconj_and_sconj_apart(tiny_encoder, data_root, tmp_path):
    """seqeval 1.x reads CCONJ and SCONJ as one chunk type (CONJ): a gold SCONJ predicted CCONJ counts as right.
    seqeval 0.0.x (XTREME's 2020 numbers, --compat xtreme) took the whole tag: it is wrong there."""
    from tests.helpers.transfer import context
    from xeval.adapters.transfer.recipe import Recipe
    from xeval.adapters.transfer.tagging import Tagging
    from xeval.cards.catalog import load_card
    from xeval.data.examples import TaggedSentence

    card = load_card("udpos")
    gold = [TaggedSentence(["weil", "Hunde"], ["SCONJ", "NOUN"], "de", "test", "x.tsv", 1)]
    predicted = [["CCONJ", "NOUN"]]
    scores = {}
    for mode in ("none", "xtreme"):
        ctx = context(tiny_encoder, data_root, tmp_path / mode, compat=mode)
        scores[mode] = Tagging(card, ctx, Recipe()).score(predicted, gold, "de")["f1"]
    assert scores == {"none": 100.0, "xtreme": 50.0}


class _Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 2)

    def forward(self, input_ids, attention_mask, labels=None):
        logits = self.linear(input_ids[:, :1].float())
        return (nn.functional.cross_entropy(logits, labels), logits)


@pytest.mark.parametrize(("mode", "eval_every", "expected"), [
    ("none", 3, [3, 4, 6, 8]),  # every 3 steps and at each epoch end (4 steps an epoch)
    ("xtreme", 3, [3, 6, 8]),  # XTREME's --save_steps and the final weights (--eval_all_checkpoints)
    ("xtreme", 4, [4, 8]),  # the last step once when it is a save step
    ("xtreme", 20, [8]),  # no save step reached: the final weights alone
])
def test_compat_selects_on_dev_at_save_steps_and_the_final_weights(mode, eval_every, expected):
    from xeval.adapters.transfer.fine_tuning import fine_tune
    from xeval.adapters.transfer.recipe import Recipe

    recipe = Recipe.build({"batch_size": 2, "epochs": 2, "eval_every": eval_every, "learning_rate": 0.1},
                          RECIPES[mode])
    features = [{"input_ids": [i % 3, 1], "attention_mask": [1, 1], "labels": i % 2} for i in range(8)]
    report = fine_tune(_Toy(), features, recipe, seed=1, pad_token_id=0, evaluate=lambda model: 1.0, device="cpu")
    assert [step for step, _ in report.dev_curve] == expected


@pytest.mark.parametrize(("scores", "best"), [([50.0, 60.0, 70.0], 8), ([50.0, 70.0, 70.0], 6)])
def test_compat_keeps_the_final_weights_when_they_are_better_and_the_checkpoint_on_a_tie(scores, best):
    """XTREME sorts checkpoint-best before the final model and keeps the first of equal dev scores."""
    from xeval.adapters.transfer.fine_tuning import fine_tune
    from xeval.adapters.transfer.recipe import Recipe

    recipe = Recipe.build({"batch_size": 2, "epochs": 2, "eval_every": 3, "learning_rate": 0.1}, RECIPES["xtreme"])
    features = [{"input_ids": [i % 3, 1], "attention_mask": [1, 1], "labels": i % 2} for i in range(8)]
    given = iter(scores)
    report = fine_tune(_Toy(), features, recipe, seed=1, pad_token_id=0, evaluate=lambda model: next(given),
                       device="cpu")
    assert report.dev_curve == [(3, scores[0]), (6, scores[1]), (8, scores[2])] and report.best_step == best


def test_the_mode_is_recorded_and_part_of_the_units_identity(tiny_encoder, data_root, tmp_path):
    from tests.helpers.transfer import context
    from xeval.adapters.transfer import tagging
    from xeval.cards.catalog import load_card

    card = load_card("udpos")
    fast = {"max_train": 16, "max_dev": 8, "max_eval": 8, "batch_size": 8}
    records = {}
    for mode in ("none", "xtreme"):
        ctx = context(tiny_encoder, data_root, tmp_path / "runs", recipe=fast, compat=mode)
        [records[mode]] = tagging.run(card, ["en"], ctx)
    assert records["xtreme"].config["compat"] == "xtreme" and records["none"].config["compat"] == "none"
    assert records["xtreme"].config["recipe"]["epoch_end_selection"] is False
    assert records["xtreme"].config["recipe"]["group_by_length"] is False  # XTREME samples without regard to length
    assert records["none"].config["recipe"]["group_by_length"] is True
    assert records["xtreme"].config["chunk_types"] == "seqeval 0.0.x (whole tag)"
    assert records["xtreme"].unit.config_hash != records["none"].unit.config_hash  # two records, never one reused
    from xeval.report.tables.base import Results

    rows = set(Results(records.values()).stats["setting"])
    assert rows == {"zero-shot", "zero-shot, compat xtreme"}  # tables name the mode, never average the two


def test_a_bad_mode_is_a_config_error():
    from xeval.base.errors import ConfigError
    from xeval.cards.compat import check_mode

    with pytest.raises(ConfigError, match="--compat: expected one of none, xtreme"):
        check_mode("xtreme-r")


def test_docstring_examples():
    """The worked examples in the docstrings (get_final_text, whole words, BERT's basic tokenizer; the label-free
    checks of the official download)."""
    import doctest

    import xeval.adapters.transfer.recipe
    import xeval.cards.compat
    import xeval.data.squad_json
    import xeval.data.tatoeba

    for module in (xeval.cards.compat, xeval.data.squad_json, xeval.data.tatoeba, xeval.adapters.transfer.recipe):
        failures, tried = doctest.testmod(module)
        assert tried and not failures, module.__name__


def test_xnli_uses_xtremes_large_model_learning_rate_and_the_hub_pos_caveat_is_recorded():
    """train_xnli.sh: 3e-5 for xlm-roberta-large (hidden 1024) and xlm-mlm-100-1280; 2e-5 otherwise. The hub's
    UD-POS (syntactic words of multi-word tokens, not XTREME's fused forms) says so in every hub record."""
    from xeval.adapters.transfer.recipe import Recipe, learning_rate_for
    from xeval.cards.catalog import load_card
    from xeval.data.hub import identity

    card = load_card("xnli")
    recipe = Recipe.build(card.recipe)
    assert [learning_rate_for(recipe, h, {}) for h in (768, 1024, 1280)] == [2e-5, 3e-5, 3e-5]
    assert learning_rate_for(Recipe.build(card.recipe, {"learning_rate": 1e-5}), 1024, {"learning_rate": 1e-5}) == 1e-5
    assert "fused surface form" in identity(load_card("udpos"), "de", "test")["note"]


def test_compat_closes_xlmr_tagging_windows_with_two_separators(spm_tokenizer, tmp_path, data_root):
    """utils_tag.py's sep_token_extra: an XLM-R window is <s> words </s></s> under --compat xtreme (one word
    position less), <s> words </s> by default; a BERT model is never changed."""
    from transformers import XLMRobertaConfig, XLMRobertaModel

    from tests.helpers.transfer import context
    from xeval.adapters.transfer.recipe import Recipe
    from xeval.adapters.transfer.tagging import Tagging
    from xeval.cards.catalog import load_card
    from xeval.models.encoder import Encoder

    config = XLMRobertaConfig(vocab_size=len(PIECES), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                              intermediate_size=32, max_position_embeddings=40, pad_token_id=1)
    folder = tmp_path / "xlmr"
    XLMRobertaModel(config).save_pretrained(folder)
    spm_tokenizer.save_pretrained(folder)
    encoder = Encoder(str(folder))
    sentence = [["他在", "北京"]]
    ids = {}
    for mode in ("none", "xtreme"):
        family = Tagging(load_card("udpos"), context(encoder, data_root, tmp_path / mode, compat=mode), Recipe())
        enc, word_ids = family.encode(sentence, family.windows(sentence))
        ids[mode] = (enc["input_ids"][0], word_ids[0], family.specials)
    sep = spm_tokenizer.sep_token_id
    assert ids["none"][0][-1] == sep and ids["none"][0][-2:] != [sep, sep] and ids["xtreme"][0][-2:] == [sep, sep]
    assert ids["xtreme"][1][-2:] == [None, None] and ids["xtreme"][2] == ids["none"][2] + 1
