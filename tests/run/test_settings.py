"""Translate-train: where a card names translated training data (a ``translate-train`` split, per target
language), ``--setting translate-train`` fine-tunes one model per target language on it."""

import copy
import dataclasses

import pytest

from tests.helpers.transfer import context
from xeval.adapters.transfer import tagging
from xeval.base.errors import ConfigError
from xeval.cards.catalog import load_suite


@pytest.fixture(scope="module")
def udpos():
    return load_suite("xtreme-mini").card("udpos")


@pytest.mark.slow
def test_translate_train_trains_on_the_target_language(tiny_encoder, udpos, tmp_path, data_root):
    card = copy.deepcopy(udpos)
    # Stand-in "translations": the German dev set plays the German translated training set.
    card.files["shared"]["translate-train"] = "udpos_xtreme/dev-{lang}.tsv"
    ctx = context(tiny_encoder, data_root, tmp_path, setting="translate-train")
    [record] = tagging.run(card, ["de"], ctx)
    assert record.unit.setting == "translate-train" and record.unit.lang == "de"
    assert record.config["train"]["lang"] == "de" and record.config["train"]["split"] == "translate-train"
    assert ctx.store.path(record.unit).name == f"de.dev.s1.translate-train~{record.unit.config_hash}.json"
    # the zero-shot unit is a different unit: nothing of it is stored yet
    assert not ctx.store.has(dataclasses.replace(record.unit, setting="zero-shot"))


def test_translate_train_needs_translated_data(tiny_encoder, udpos, tmp_path, data_root):
    ctx = context(tiny_encoder, data_root, tmp_path, setting="translate-train")
    with pytest.raises(ConfigError, match="names no translated training data for 'de'"):
        tagging.run(udpos, ["de"], ctx)
    with pytest.raises(ConfigError, match="unknown setting"):
        tagging.run(udpos, ["de"], context(tiny_encoder, data_root, tmp_path, setting="translate-test"))


def test_label_free_test_files_are_predicted_stored_and_exported_unscored(tiny_encoder, udpos, tmp_path, data_root):
    """XTREME's official test files carry no labels: predictions are kept and exported, the record has no
    metrics (``xeval score`` with the hidden labels gives them)."""
    root = tmp_path / "data" / "udpos_xtreme"
    (root / "test_labeled").mkdir(parents=True)
    train = (data_root / "udpos_xtreme" / "train-en.tsv").read_text(encoding="utf-8").split("\n\n")[:40]
    (root / "train-en.tsv").write_text("\n\n".join(train) + "\n", encoding="utf-8")
    (root / "dev-en.tsv").write_text("\n\n".join(train[:8]) + "\n", encoding="utf-8")
    free = ["\n".join(line.split("\t")[0] for line in block.splitlines()) for block in train[:5]]
    (root / "test_labeled" / "test-en.tsv").write_text("\n\n".join(free) + "\n", encoding="utf-8")
    ctx = context(tiny_encoder, tmp_path / "data", tmp_path / "runs", export_dir=tmp_path / "export",
                  export_labels=str(tmp_path / "labels"))
    [record] = tagging.run(udpos, ["en"], ctx)
    assert record.metrics == {} and "unscored" in record.extra and record.n_examples == 5
    lines = (tmp_path / "export" / "udpos" / "test-en.tsv").read_text(encoding="utf-8").split("\n\n")
    assert [len(block.split()) for block in lines[:5]] == [len(block.split()) for block in free]
    assert not (tmp_path / "labels" / "udpos" / "test-en.tsv").exists()
