"""The probes' input prefix (issue 25, item 1): e5's ``query: `` as a recorded, hashed option, the model folder's own
prompt by default (``config_sentence_transformers.json``), ``--set prefix=...`` over it; fine-tuning reads none."""

from __future__ import annotations

import json
import shutil

import numpy as np

import xeval
from tests.helpers.transfer import tiny_model
from xeval.adapters.probes import alignment
from xeval.adapters.probes import base as probes
from xeval.models.sentence_modules import SentencePipeline

PROBE = {"suite": "probes", "tasks": "tatoeba", "langs": ["de"], "layers": [2], "max_eval": 12}


def _prompted_copy(data_root, tmp_path, prompts: dict, default: str | None = None):
    """The tiny model as a sentence-transformers folder whose config names prompts."""
    folder = tmp_path / "tiny-prompted"
    shutil.copytree(tiny_model(data_root), folder)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": prompts, "default_prompt_name": default}))
    return folder


def test_the_folder_prompt_and_the_set_value():
    assert probes.resolve_prefix(None, None) == ""
    assert probes.resolve_prefix(None, SentencePipeline(prompts={"query": "query: ", "passage": "passage: "})) == "query: "
    named = SentencePipeline(prompts={"query": "query: ", "sts": "sts: "}, default_prompt_name="sts")
    assert probes.resolve_prefix(None, named) == "sts: "
    assert probes.resolve_prefix("", named) == ""  # --set prefix= : none, over the folder's
    assert probes.resolve_prefix("query:", None) == "query: "  # --set values are stripped: the space comes back
    assert probes.prefix_config({"prefix": ""}) == {}  # no prefix, no entry: earlier units keep their hash


def test_the_prefix_is_the_encoded_text(tiny_encoder):
    texts = ["der Hund schläft", "le chat dort"]
    options = {"pooling": "mean", "include_special": True, "batch_size": 8, "max_length": None, "prefix": "query: "}
    prefixed = probes.sentence_vectors(tiny_encoder, texts, [2], {**options, "cache_dir": None})
    direct = tiny_encoder.sentence_embeddings(["query: " + t for t in texts], layers=[2])
    assert np.allclose(prefixed, direct, atol=1e-6)
    plain = probes.sentence_vectors(tiny_encoder, texts, [2], {**options, "prefix": ""})
    assert not np.allclose(prefixed, plain, atol=1e-4)


def test_alignment_leaves_the_prefix_words_out(tiny_encoder):
    from xeval.data.examples import AlignedPair

    pairs = [AlignedPair(src_tokens=["der", "Hund"], tgt_tokens=["the", "dog"], sure={(0, 0)})]
    options = {**alignment.ALIGN_DEFAULTS, "methods": ["argmax-inter"], "prefix": "query: "}
    links = alignment.align_layers(tiny_encoder, pairs, [1], options)[1]["argmax-inter"][0]
    assert links and all(0 <= i < 2 and 0 <= j < 2 for i, j in links)  # the sentences' words, not the prefix's
    prefixed = AlignedPair(src_tokens=["query:", "der", "Hund"], tgt_tokens=["query:", "the", "dog"])
    states = next(alignment.separate_states(tiny_encoder, [prefixed], [1]))
    kept = alignment.drop_words(states, 1)
    assert kept[1] == [w - 1 for w in states[1] if w >= 1] and min(kept[1]) == 0
    assert kept[0].shape[1] == len(kept[1]) < states[0].shape[1]


def test_a_prefix_is_recorded_and_hashed_and_misses_the_cache(data_root, tmp_path):
    model, cache, store = str(tiny_model(data_root)), tmp_path / "enc", tmp_path / "runs"
    plain = xeval.evaluate(model, data=data_root, store=store, cache=cache, **PROBE)
    entries = len(list(cache.rglob("*.npy")))
    prefixed = xeval.evaluate(model, data=data_root, store=store, cache=cache, recipe={"prefix": "query: "}, **PROBE)
    assert len(list(cache.rglob("*.npy"))) > entries  # new texts, new cache entries: no stale hit
    from xeval.results.store import Store

    stored = [r for r in Store(store).records() if r.unit.split == "test"]
    hashes = {r.unit.config_hash for r in stored}
    assert len(hashes) == 2  # one unit without, one with the prefix
    assert sorted(r.config.get("prefix", "") for r in stored) == ["", "query: "]
    assert set(plain["lang"]) == set(prefixed["lang"]) == {"de"}


def test_the_folder_prompt_is_the_default_and_set_overrides_it(data_root, tmp_path):
    folder = str(_prompted_copy(data_root, tmp_path, {"query": "query: ", "passage": "passage: "}))
    from xeval.results.store import Store

    store = tmp_path / "runs"
    xeval.evaluate(folder, data=data_root, store=store, **PROBE)
    xeval.evaluate(folder, data=data_root, store=store, recipe={"prefix": ""}, **PROBE)
    stored = [r for r in Store(store).records() if r.unit.split == "test"]
    assert sorted(r.config.get("prefix", "") for r in stored) == ["", "query: "]
    assert len({r.unit.config_hash for r in stored}) == 2


def test_fine_tuning_reads_no_prefix(caplog):
    from xeval.cards.catalog import load_card
    from xeval.run.checks import check_overrides
    from xeval.run.options import task_options

    card = load_card("udpos")
    with caplog.at_level("WARNING", logger="xeval"):
        check_overrides([(card, ["en"])], {"prefix": "query: "})
    assert "none of the selected tasks (udpos) reads this option" in caplog.text
    assert "prefix" not in task_options({"prefix": "query: "}, ["tagging"]).recipe  # no fine-tuning field
