import json

import pytest

from tests.conftest import require_file
from tests.helpers.transfer import context
from xeval.adapters.transfer import qa, spans
from xeval.adapters.transfer.recipe import Recipe
from xeval.cards.catalog import load_suite
from xeval.data.examples import Answer, QAExample
from xeval.data.squad_json import read_squad


@pytest.fixture(scope="module")
def suite():
    return load_suite("xtreme-mini")


def family(encoder, card, tmp_path, data_root, **recipe):
    ctx = context(encoder, data_root, tmp_path, recipe=recipe)
    return qa.QA(card, ctx, Recipe.build(qa.QA.defaults, card.recipe, ctx.tasks.recipe))


def xquad(data_root, lang, n):
    return read_squad(require_file(data_root, f"xquad/xquad.{lang}.json"), lang, "test")[:n]


def oracle_answer(fam, example, wins):
    """Decode with logits that point at the gold span in the window that holds it: what the model's best
    possible output turns into."""
    span = spans.answer_span(example)
    texts = []
    for win in wins:
        s, e = spans.token_span(win.offsets, *span)
        if s == 0:
            continue
        starts = [0.0] * len(win.input_ids)
        ends = [0.0] * len(win.input_ids)
        starts[s], ends[e] = 10.0, 10.0
        found = spans.best_span(win, starts, ends, fam.recipe.n_best_size, fam.recipe.max_answer_length)
        if found is not None and found[0] == 20.0:
            texts.append(example.context[found[1][0] : found[1][1]])
    return texts


@pytest.mark.parametrize("lang", ["zh", "th"])
def test_answers_come_out_whole_from_character_offsets(tiny_encoder, suite, tmp_path, data_root, lang):
    """Chinese and Thai have no spaces between words: XTREME's get_final_text returns whole clauses there. The
    offset mapping gives back exactly the predicted characters."""
    fam = family(tiny_encoder, suite.card("xquad"), tmp_path, data_root, max_length=96, doc_stride=32)
    examples = xquad(data_root, lang, 40)
    wins = fam.windows(examples)
    exact = covered = 0
    for i, ex in enumerate(examples):
        texts = oracle_answer(fam, ex, [w for w in wins if w.example == i])
        gold = ex.answers[0].text
        for text in texts:
            covered += 1
            assert gold in text, (gold, text)  # never cut short
            assert len(text) <= len(gold) + 4, (gold, text)  # at most the rest of a subword around it
            exact += text == gold
    assert covered >= 30
    assert exact / covered >= 0.95


def test_windows_step_by_doc_stride_and_each_token_has_one_max_context(tiny_encoder, suite, tmp_path, data_root):
    fam = family(tiny_encoder, suite.card("xquad"), tmp_path, data_root, max_length=64, doc_stride=16)
    [example] = xquad(data_root, "en", 1)
    wins = fam.windows([example])
    assert len(wins) > 3
    full = tiny_encoder.tokenizer(example.context, add_special_tokens=False, return_offsets_mapping=True)
    starts = [o[0] for o in full["offset_mapping"]]
    first_tokens = [starts.index(next(o for o in w.offsets if o is not None)[0]) for w in wins]
    assert all(b - a == 16 for a, b in zip(first_tokens, first_tokens[1:])), first_tokens
    seen: dict[int, int] = {}
    for win in wins:
        assert len(win.input_ids) <= 64
        for o, best in zip(win.offsets, win.max_context):
            if o is not None:
                seen[o[0]] = seen.get(o[0], 0) + best
    assert set(seen) == set(starts) and set(seen.values()) == {1}, "every token, exactly one max-context window"


def test_long_questions_are_cut_to_max_query_length(tiny_encoder, suite, tmp_path, data_root):
    fam = family(tiny_encoder, suite.card("xquad"), tmp_path, data_root, max_length=128, max_query_length=8)
    question = "what is the name of the team that won the game in the year of the big storm and why"
    ex = QAExample("q", question, "The Broncos won.", [Answer("Broncos", 4)], "en", "test", "<t>", 0)
    [cut] = fam._questions([ex])
    assert question.startswith(cut) and len(tiny_encoder.tokenizer(cut, add_special_tokens=False)["input_ids"]) == 8


def test_training_labels_point_at_the_answer_or_cls(tiny_encoder, suite, tmp_path, data_root):
    fam = family(tiny_encoder, suite.card("xquad"), tmp_path, data_root, max_length=64, doc_stride=16)
    [example] = xquad(data_root, "en", 1)
    feats = fam.features([example])
    wins = fam.windows([example])
    gold = example.answers[0].text
    hits = 0
    for feat, win in zip(feats, wins):
        s, e = feat["start_positions"], feat["end_positions"]
        if s == 0:
            assert e == 0
            continue
        hits += 1
        assert example.context[win.offsets[s][0] : win.offsets[e][1]] == gold
    assert hits >= 1


def test_mlqa_uses_its_own_normalisation(tiny_encoder, suite, tmp_path, data_root):
    assert family(tiny_encoder, suite.card("mlqa"), tmp_path, data_root).normalisation == "mlqa"
    assert family(tiny_encoder, suite.card("xquad"), tmp_path, data_root).normalisation == "squad"
    assert family(tiny_encoder, suite.card("tydiqa"), tmp_path, data_root).normalisation == "squad"
    fam = family(tiny_encoder, suite.card("mlqa"), tmp_path, data_root)
    ex = QAExample("q1", "?", "el río Amazonas", [Answer("el río Amazonas", 0)], "es", "dev", "<t>", 0)
    assert fam.score(["Río Amazonas"], [ex], "es")["exact_match"] == 100.0  # Spanish article removed


def test_predict_and_submission_files(tiny_encoder, suite, tmp_path, data_root):
    import copy

    fam = family(tiny_encoder, suite.card("xquad"), tmp_path, data_root, max_length=96)
    examples = xquad(data_root, "zh", 4)
    model = fam.build_model(copy.deepcopy(tiny_encoder.model))
    predictions = fam.predict(model, examples)
    assert len(predictions) == 4 and all(p in ex.context for p, ex in zip(predictions, examples))
    assert json.loads(fam.format_predictions(predictions, examples)) == {ex.id: p for ex, p in zip(examples, predictions)}
    gold = json.loads(fam.format_gold(examples))
    assert [q["id"] for a in gold["data"] for p in a["paragraphs"] for q in p["qas"]] == [ex.id for ex in examples]
