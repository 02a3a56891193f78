"""Translate-train: where a card names translated training data (a ``translate-train`` split, per target
language), ``--setting translate-train`` fine-tunes one model per target language on it."""

import copy
import dataclasses

import pytest

from tests import helpers_transfer
from tests.helpers_transfer import context
from xeval.adapters import tagging
from xeval.errors import ConfigError
from xeval.tasks import load_suite


@pytest.fixture(scope="module")
def tiny_encoder(data_root):
    return helpers_transfer.tiny_encoder(data_root)


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
    assert ctx.store.path(record.unit).name == "de.dev.s1.translate-train.json"
    # the zero-shot unit is a different unit: nothing of it is stored yet
    assert not ctx.store.has(dataclasses.replace(record.unit, setting="zero-shot"))


def test_translate_train_needs_translated_data(tiny_encoder, udpos, tmp_path, data_root):
    ctx = context(tiny_encoder, data_root, tmp_path, setting="translate-train")
    with pytest.raises(ConfigError, match="names no translated training data for 'de'"):
        tagging.run(udpos, ["de"], ctx)
    with pytest.raises(ConfigError, match="unknown setting"):
        tagging.run(udpos, ["de"], context(tiny_encoder, data_root, tmp_path, setting="translate-test"))
