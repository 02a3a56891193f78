import copy

import pytest

from tests.helpers.transfer import context
from xeval.adapters.transfer import classification
from xeval.adapters.transfer.recipe import Recipe
from xeval.base.errors import ConfigError
from xeval.cards.catalog import load_suite
from xeval.data.examples import SentencePair


@pytest.fixture(scope="module")
def xnli():
    return load_suite("xtreme-mini").card("xnli")


def pair(a, b, label="neutral"):
    return SentencePair(a, b, label, "en", "dev", "<test>", 1)


def family(encoder, card, tmp_path, data_root, **recipe):
    ctx = context(encoder, data_root, tmp_path, recipe=recipe)
    fam = classification.PairClassification(card, ctx, Recipe.build(card.recipe, ctx.tasks.recipe))
    fam.setup([])
    return fam


def test_pairs_are_encoded_as_one_input_with_segments(tiny_encoder, xnli, tmp_path, data_root):
    fam = family(tiny_encoder, xnli, tmp_path, data_root)
    [feat] = fam.features([pair("the cat sat", "a cat was sitting", "entailment")])
    tok = tiny_encoder.tokenizer
    assert feat["input_ids"] == tok("the cat sat", "a cat was sitting")["input_ids"]
    assert feat["token_type_ids"].count(1) == len(tok("a cat was sitting", add_special_tokens=False)["input_ids"]) + 1
    assert feat["labels"] == xnli.labels.index("entailment")
    assert fam.use_pooler, "BERT classifies from its pre-trained pooler, as BertForSequenceClassification"


def test_long_pairs_are_truncated_to_max_length(tiny_encoder, xnli, tmp_path, data_root):
    fam = family(tiny_encoder, xnli, tmp_path, data_root, max_length=16)
    [feat] = fam.features([pair("the cat sat on the mat " * 10, "der Hund schläft " * 10)])
    assert len(feat["input_ids"]) == 16


def test_unknown_label_is_a_clear_error(tiny_encoder, xnli, tmp_path, data_root):
    fam = family(tiny_encoder, xnli, tmp_path, data_root)
    with pytest.raises(ConfigError, match="<test>:1: label 'maybe'"):
        fam.features([pair("a", "b", "maybe")])


def test_predict_score_and_submission(tiny_encoder, xnli, tmp_path, data_root):
    fam = family(tiny_encoder, xnli, tmp_path, data_root)
    examples = [pair("the cat sat", "a cat sat", "entailment"), pair("der Hund", "ein Hund", "contradiction")]
    model = fam.build_model(copy.deepcopy(tiny_encoder.model))
    predictions = fam.predict(model, examples)
    assert set(predictions) <= set(xnli.labels) and len(predictions) == 2
    expected = 100.0 * sum(p == ex.label for p, ex in zip(predictions, examples)) / 2
    assert fam.score(predictions, examples, "en") == {"accuracy": expected}
    assert fam.format_predictions(predictions, examples) == "".join(p + "\n" for p in predictions)
    assert fam.format_gold(examples) == "entailment\ncontradiction\n"


def test_a_pooler_the_checkpoint_lacks_is_drawn_from_the_fine_tuning_seed(data_root, tmp_path):
    """A BERT exported without its pooler (multilingual-e5-small, any sentence-transformers folder) gets a pooler
    drawn from the global RNG at load; PAWS-X / XNLI read it, so a seed must fix it whatever ran before."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from tests.helpers.transfer import tiny_model
    from xeval.adapters.transfer.backbone import backbone_copy
    from xeval.adapters.transfer.fine_tuning import set_seed
    from xeval.models.encoder import Encoder

    folder = tmp_path / "no-pooler"
    shutil.copytree(tiny_model(data_root), folder)
    weights = load_file(folder / "model.safetensors")
    save_file({k: v for k, v in weights.items() if not k.startswith("pooler.")}, folder / "model.safetensors",
              metadata={"format": "pt"})
    torch.manual_seed(1)
    first = Encoder(str(folder))
    torch.rand(1000)  # the process did something else in between
    second = Encoder(str(folder))
    assert "pooler.dense.weight" in first.missing_weights
    assert not torch.equal(first.model.pooler.dense.weight, second.model.pooler.dense.weight)  # the load's draw
    copies = []
    for encoder in (first, second):
        set_seed(7)
        copies.append(backbone_copy(encoder))
    assert torch.equal(copies[0].pooler.dense.weight, copies[1].pooler.dense.weight)
    assert torch.equal(copies[0].pooler.dense.bias, torch.zeros_like(copies[0].pooler.dense.bias))
    assert torch.equal(copies[0].encoder.layer[0].attention.self.query.weight,
                       first.model.encoder.layer[0].attention.self.query.weight)  # trained weights untouched


def test_a_classifier_that_answers_one_class_is_flagged(tiny_encoder, xnli, tmp_path, data_root):
    fam = family(tiny_encoder, xnli, tmp_path, data_root)
    examples = [pair("a", "b", label) for label in ["entailment", "neutral", "contradiction"] * 10]  # 30 examples
    [warning] = fam.warnings(["neutral"] * 30, examples)
    assert "all" not in warning and "30 predictions is 'neutral'" in warning
    assert fam.warnings(["neutral"] * 29 + ["entailment"], examples) == []
    assert fam.warnings(["neutral"] * 10, examples[:10]) == []  # too few to say


def test_the_warning_reaches_the_stored_record(tiny_encoder, xnli, tmp_path, data_root, monkeypatch):
    # a collapsed fine-tune (PAWS-X at 1e-4 answered label 0 for all 1,200 pairs) must not pass as weak transfer
    monkeypatch.setattr(classification.PairClassification, "predict",
                        lambda self, model, examples: [self.labels[0]] * len(examples))
    ctx = context(tiny_encoder, data_root, tmp_path, recipe={"max_eval": 25})
    records = [r for r in classification.run(xnli, ["en", "de"], ctx) if r.unit.lang == "de"]
    assert records and all("collapsed to one class" in r.extra["warnings"][0] for r in records)
    stored = [r for r in ctx.store.records() if r.unit.lang == "de"]
    assert stored and stored[0].extra["warnings"] == records[0].extra["warnings"]
